// Whether this process can use a CUDA device. Asked by the CUDA backend entries' available() and
// by the CUDA tests (which skip, printing reason(), when there is none). On a machine without a
// driver or GPU the answer is "no" with a reason, never a failure: the library loads and runs on
// the CPU there.
#pragma once

#include <cstddef>
#include <string>

#include "kvflash/status.hpp"

namespace kvflash::cuda {

struct DeviceInfo {
  bool present = false;
  int count = 0;        ///< devices visible to this process
  int sm_count = 0;     ///< of device 0
  int major = 0;        ///< compute capability of device 0
  int minor = 0;
  std::string name;     ///< of device 0
  std::string reason;   ///< why present is false ("no CUDA driver", "no CUDA device", ...)
};

/// Queried once per process (the answer cannot change while it runs), thread-safe.
const DeviceInfo& device_info();
inline bool device_present() { return device_info().present; }
/// The CUDA backend entries' available(): device_present(), with device_info().reason as why.
inline bool device_available(const char** why) {
  const DeviceInfo& info = device_info();
  if (!info.present && why != nullptr) *why = info.reason.c_str();
  return info.present;
}

/// Copies n bytes of device memory at src to the host at dst in stream order (after the work
/// queued on `stream`, a cudaStream_t; null = the legacy default stream) and waits for the copy.
/// kRuntime, recorded for op with CUDA's message, when CUDA fails. Defined only in builds with
/// the CUDA backend (KVFLASH_HAVE_CUDA).
Status copy_to_host(const char* op, void* dst, const void* src, size_t n, void* stream);

}  // namespace kvflash::cuda
