// The half of the ACL runtime that depends on where memory lives and work runs: devices, streams,
// memory and copies, events, and phase 2's launch. One implementation per runtime, chosen once per
// process from KVFLASH_ACL_BACKEND (acl_backend.hpp): the host's (runtime_host.cpp: host memory as
// device memory, streams as in-order worker queues) or CUDA's (runtime_cuda.cpp). The C entry
// points (runtime.cpp, events.cpp, executor.cpp) check their arguments once, the same for both,
// then call it; what both share (initialisation, contexts, the current device) stays with them.
//
// Every method runs inside a C entry point (c_entry): it returns an ACL code with the message
// recorded (rt_fail), and handles it was not given (a stream, an event, an allocation) are
// ACL_ERROR_INVALID_PARAM naming the entry point, never undefined behaviour.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "acl/acl.h"
#include "aclnn/acl_objects.hpp"
#include "kvflash/status.hpp"

namespace kvflash::aclnn {

class DeviceRuntime {
 public:
  virtual ~DeviceRuntime() = default;

  // ---- devices (aclrtSetDevice, ...); fn names the entry point in messages
  /// ACL_ERROR_INVALID_DEVICE unless id is one of the runtime's devices.
  virtual aclError check_device(const char* fn, int32_t id) = 0;
  virtual aclError set_device(int32_t id) = 0;
  /// The device's queued work finishes (its failures stay for the next synchronisation).
  virtual aclError reset_device(int32_t id) = 0;
  virtual aclError device_count(uint32_t* count) = 0;
  /// Every stream's queued work finishes; the first failure is reported.
  virtual aclError synchronize_device() = 0;
  /// aclFinalize: every stream is closed (queued work still runs).
  virtual aclError finalize() = 0;

  // ---- streams (the null aclrtStream is the default stream)
  virtual aclError create_stream(aclrtStream* stream) = 0;
  virtual aclError destroy_stream(aclrtStream stream) = 0;
  virtual aclError synchronize_stream(aclrtStream stream) = 0;
  /// True for null (the default stream) and streams created and not destroyed.
  virtual bool is_live_stream(aclrtStream stream) = 0;
  /// Phase 2 of an aclnn operator on a live stream: queues work->run(workspace, size, the
  /// stream's native handle). *queued: whether it was (if not, nothing ran and the status names
  /// why). A status other than kSuccess with *queued set: it ran, but its failures cannot be
  /// watched (the message is recorded).
  virtual Status launch(const char* op, aclrtStream stream,
                        const std::shared_ptr<const ExecutorWork>& work, void* workspace,
                        uint64_t workspace_size, bool* queued) = 0;

  // ---- memory and copies (arguments checked by the entry point: check_alloc, check_memcpy,
  // check_memset; kind is an aclrtMemcpyKind value)
  virtual aclError mem_info(size_t* free, size_t* total) = 0;
  virtual aclError malloc_device(void** ptr, size_t size) = 0;
  virtual aclError free_device(void* ptr) = 0;
  virtual aclError malloc_host(void** ptr, size_t size) = 0;
  virtual aclError free_host(void* ptr) = 0;
  virtual aclError memcpy_sync(void* dst, const void* src, size_t count, int32_t kind) = 0;
  virtual aclError memset_sync(void* ptr, int32_t value, size_t count) = 0;
  virtual aclError memcpy_async(void* dst, const void* src, size_t count, int32_t kind,
                                aclrtStream stream) = 0;
  virtual aclError memset_async(void* ptr, int32_t value, size_t count, aclrtStream stream) = 0;

  // ---- events (the null slots checked by the entry point)
  virtual aclError create_event(aclrtEvent* event) = 0;
  virtual aclError destroy_event(aclrtEvent event) = 0;
  virtual aclError record_event(aclrtEvent event, aclrtStream stream) = 0;
  virtual aclError synchronize_event(aclrtEvent event) = 0;
  /// *complete: whether every record of the event has run.
  virtual aclError query_event(aclrtEvent event, bool* complete) = 0;
  virtual aclError stream_wait_event(aclrtStream stream, aclrtEvent event) = 0;
  virtual aclError event_elapsed_time(float* ms, aclrtEvent start, aclrtEvent end) = 0;
};

/// The host runtime (runtime_host.cpp).
DeviceRuntime& host_runtime();
/// The CUDA runtime (runtime_cuda.cpp); the host runtime in a build without CUDA, where the
/// choice can never be "cuda" (acl_backend refuses it).
DeviceRuntime& cuda_device_runtime();

/// The runtime of the process's choice (cuda_runtime() ? CUDA's : the host's), fixed at the first
/// call. Call it after runtime_ready succeeded.
DeviceRuntime& device_runtime();

}  // namespace kvflash::aclnn
