// op::GetCurrentPlatformInfo(): the platform query of CANN's opdev headers (C++ only), as used by
// upstream operator code and examples:
//
//   if (op::GetCurrentPlatformInfo().GetCurNpuArch() != NpuArch::DAV_3510) { ... }
//
// What kvflash reports (a decision, see docs/conventions.md): NpuArch::DAV_3510, i.e. Ascend 950.
// kvflash's SparseFlashAttention accepts attention sinks on every layout, which upstream allows
// only on the 950 (its V2 example returns early elsewhere), so reporting the 950 keeps programs
// that gate sink use on this query consistent with what the library does. kvflash otherwise
// validates with the A2/A3 limits (power-of-two group sizes, sparse block sizes up to 128), a
// superset that every 950 program also satisfies except for N1 values that are not powers of two.
#ifndef KVFLASH_ACLNN_OPDEV_PLATFORM_H_
#define KVFLASH_ACLNN_OPDEV_PLATFORM_H_

#include <cstdint>

/// NPU architecture ids (the DAV_xxxx names of CANN). Unscoped lookups such as NpuArch::DAV_3510
/// work from any namespace.
enum class NpuArch : uint32_t {
  DAV_RESV = 0,
  DAV_1001 = 1001,  ///< Ascend 910
  DAV_2002 = 2002,  ///< Ascend 310P
  DAV_2201 = 2201,  ///< Atlas A2 / A3 (910B, 910C)
  DAV_3002 = 3002,  ///< Ascend 310B
  DAV_3510 = 3510,  ///< Ascend 950 (950PR / 950DT)
};

namespace op {

/// Facts about the device kvflash computes on (the host CPU standing in for an NPU).
class PlatformInfo {
 public:
  /// The architecture whose operator semantics kvflash implements: DAV_3510 (see above).
  NpuArch GetCurNpuArch() const { return NpuArch::DAV_3510; }
};

/// The platform of the current device.
inline const PlatformInfo& GetCurrentPlatformInfo() {
  static const PlatformInfo info;
  return info;
}

}  // namespace op

#endif  // KVFLASH_ACLNN_OPDEV_PLATFORM_H_
