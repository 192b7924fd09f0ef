// How a run on a device stream reports bad device data without synchronising the host.
//
// On the CPU a run reads block tables and lengths itself and returns the fault status. A CUDA run
// only queues kernels: they detect bad data on the device and write a fault record in the run's
// workspace, which nobody can read until the stream has executed them. So a device backend's run,
// after queuing its kernels, posts a DeviceFaultRecord: where the record is and how to turn its
// bytes into a status and message. The caller that owns the stream collects it (the aclnn CUDA
// runtime installs a FaultRecordCollector around each phase 2), copies the bytes in stream order
// (a cudaMemcpyAsync into pinned host memory: the workspace may be reused by the next call before
// anyone synchronises), and decodes them when the program synchronises the stream, where the
// fault surfaces as on the CPU (aclnn: 507015 at aclrtSynchronizeStream).
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "kvflash/status.hpp"

namespace kvflash::core {

/// The largest record a backend may post (the runtime's pinned copy slots are this big).
inline constexpr size_t kMaxFaultRecordBytes = 256;

struct DeviceFaultRecord {
  const void* device_record = nullptr;  ///< in device memory (the run's workspace)
  size_t bytes = 0;                     ///< 1..kMaxFaultRecordBytes
  /// Called on the synchronising thread with a host copy of the bytes, after the stream has run
  /// the kernels that wrote them: kSuccess when they say "no fault"; otherwise records the message
  /// with core::fail (the same text the CPU backend gives) and returns the status (kInvalid for
  /// bad device data). It must own what it reads (capture by value).
  std::function<Status(const void* host_bytes)> decode;
};

/// Collects the records posted on this thread while it is alive (nested collectors: the innermost
/// one gets them). Not copyable or movable: it is registered by address.
class FaultRecordCollector {
 public:
  FaultRecordCollector();
  ~FaultRecordCollector();
  FaultRecordCollector(const FaultRecordCollector&) = delete;
  FaultRecordCollector& operator=(const FaultRecordCollector&) = delete;

  std::vector<DeviceFaultRecord> records;

 private:
  FaultRecordCollector* outer_;
};

/// Called by a device backend's run after queuing the kernels that write the record. Hands it to
/// this thread's innermost collector and returns true; false when there is none (a C++ API caller
/// that synchronises the stream itself) or the record is malformed (no pointer, no decoder, size
/// outside 1..kMaxFaultRecordBytes), in which case nothing is kept.
bool post_fault_record(DeviceFaultRecord record);

}  // namespace kvflash::core
