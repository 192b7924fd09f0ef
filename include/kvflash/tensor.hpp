// Tensor views: the one way kvflash describes memory it reads or writes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>

#include "kvflash/export.h"

namespace kvflash {

/// Element types. The numeric values are CANN's aclDataType values so the aclnn shim maps 1:1.
enum class DType : int32_t {
  kFloat32 = 0,
  kFloat16 = 1,
  kInt8 = 2,
  kInt32 = 3,
  kUInt8 = 4,
  kInt64 = 9,
  kBool = 12,
  kBFloat16 = 27,
};

/// Size in bytes of one element; 0 for a value that is not a DType above.
KVFLASH_API size_t dtype_size(DType dtype);
/// Short lower-case name ("fp16", "bf16", "fp32", "int8", "uint8", "bool", "int32", "int64").
KVFLASH_API const char* dtype_name(DType dtype);
/// True for the enumerators above.
KVFLASH_API bool dtype_is_known(DType dtype);

inline constexpr int kMaxRank = 8;

/// Where a tensor's memory lives. kvflash runs an operator on the backend of its tensors' device
/// (every tensor of one call must be on the same device); a plan records the device, so a run with
/// tensors elsewhere is refused.
enum class DeviceType : int32_t {
  kHost = 0,  ///< ordinary CPU memory (also the aclnn runtime's "device" memory on the CPU backend)
  kCuda = 1,  ///< NVIDIA GPU memory (reserved for the CUDA backend)
};

struct Device {
  DeviceType type = DeviceType::kHost;
  int32_t index = 0;  ///< device ordinal (0 for the host)
  friend bool operator==(const Device&, const Device&) = default;
};

/// "cpu", "cuda:1".
KVFLASH_API std::string device_name(Device device);

/// A strided view of a typed buffer. Element (i0, ..., i{rank-1}) lives at
///   static_cast<char*>(data) + (offset + sum_k i_k * strides[k]) * dtype_size(dtype).
/// Strides and offset are in elements, as in aclCreateTensor. A view never owns its memory.
struct TensorView {
  void* data = nullptr;
  DType dtype = DType::kFloat32;
  int rank = 0;
  std::array<int64_t, kMaxRank> shape{};
  std::array<int64_t, kMaxRank> strides{};
  int64_t offset = 0;
  Device device{};  ///< where data points

  /// A contiguous row-major view (offset 0). Ranks above kMaxRank are clamped: validate with rank.
  KVFLASH_API static TensorView contiguous(void* data, DType dtype, std::span<const int64_t> shape);
  static TensorView contiguous(void* data, DType dtype, std::initializer_list<int64_t> shape) {
    return contiguous(data, dtype, std::span<const int64_t>(shape.begin(), shape.size()));
  }

  /// Product of the dims; 0 if any dim is 0; INT64_MAX when the product does not fit in int64 or
  /// a dim is negative (not a valid view: validation rejects it). Only the first kMaxRank dims
  /// are read whatever `rank` says.
  KVFLASH_API int64_t numel() const;
  /// Row-major contiguous with offset 0 (dims of size 1 may carry any stride); false for an
  /// invalid rank or a negative dim.
  KVFLASH_API bool is_contiguous() const;
  /// Pointer to element 0 of the view (data + offset elements).
  void* base() const {
    return static_cast<char*>(data) + offset * static_cast<int64_t>(dtype_size(dtype));
  }
  /// "fp16[2,1,16]" — used in error messages.
  KVFLASH_API std::string describe() const;
};

}  // namespace kvflash
