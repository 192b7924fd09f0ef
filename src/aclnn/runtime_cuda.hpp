// The ACL runtime on the CUDA runtime (KVFLASH_ACL_BACKEND=cuda, see acl_backend.hpp).
// runtime.cpp's C entry points check their arguments exactly as on the CPU, then call these when
// cuda_runtime() is true. Plain C++ (no CUDA header), defined only in builds with the CUDA backend
// (KVFLASH_HAVE_CUDA); never called otherwise.
//
// Mapping: aclrtMalloc/Free -> cudaMalloc/cudaFree; aclrtMallocHost/FreeHost -> cudaMallocHost /
// cudaFreeHost (pinned); aclrtMemcpy(Async) -> cudaMemcpy(Async) with the matching cudaMemcpyKind;
// aclrtMemset(Async) -> cudaMemset(Async); a stream -> a cudaStream_t (the null aclrtStream -> the
// legacy default stream); aclrtSynchronizeStream/Device -> cudaStreamSynchronize /
// cudaDeviceSynchronize; aclrtSetDevice -> cudaSetDevice.
//
// Errors found while running (ACL semantics, as on the CPU): a phase-2 run returns at once after
// queuing its kernels, so neither a failed run nor bad device data can be reported by the aclnn
// call. Each stream keeps, in launch order, (1) the failures runs returned on the calling thread
// and (2) the fault record of each run whose plan writes one (core/device_fault.hpp), copied in
// stream order from the start of its workspace into a pinned host slot of
// sizeof(core::FaultRecord). aclrtSynchronizeStream (and aclrtSynchronizeDevice) synchronise,
// then decode the records in launch order with the executor's decode_fault (the plan entry's
// fault hook): the first failure is reported, 507015 for bad device data, and forgotten. No host
// synchronisation happens inside an aclnn call, so a run can also be captured in a CUDA graph.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "acl/acl.h"
#include "aclnn/acl_objects.hpp"
#include "kvflash/status.hpp"

namespace kvflash::aclnn::cuda_rt {

aclError get_device_count(uint32_t* count);
/// ACL_ERROR_INVALID_DEVICE unless 0 <= id < the CUDA device count.
aclError check_device(const char* fn, int32_t id);
aclError set_device(int32_t id);
/// Synchronises the device (its queued work finishes; failures stay for the next
/// synchronisation). Allocations and streams stay valid: see runtime_cuda.cpp for why there is no
/// cudaDeviceReset.
aclError reset_device(int32_t id);
aclError synchronize_device();
/// aclFinalize: synchronises and destroys every stream.
aclError finalize();

aclError create_stream(aclrtStream* stream);
aclError destroy_stream(aclrtStream stream);
aclError synchronize_stream(aclrtStream stream);
/// True for null (the default stream) and streams created and not destroyed.
bool is_live_stream(aclrtStream stream);

/// aclrtGetMemInfo: the current device's free and total memory (cudaMemGetInfo).
aclError mem_info(size_t* free, size_t* total);
aclError malloc_device(void** ptr, size_t size);
aclError free_device(void* ptr);
aclError malloc_host(void** ptr, size_t size);
aclError free_host(void* ptr);

/// Arguments already checked (check_memcpy / check_memset); kind is an aclrtMemcpyKind value.
aclError memcpy_sync(void* dst, const void* src, size_t count, int32_t kind);
aclError memset_sync(void* ptr, int32_t value, size_t count);
aclError memcpy_async(void* dst, const void* src, size_t count, int32_t kind, aclrtStream stream);
aclError memset_async(void* ptr, int32_t value, size_t count, aclrtStream stream);

/// Events: cudaEvent_t (created with timing). Handles checked like streams'; the arguments
/// (null slots) already checked by events.cpp.
aclError create_event(aclrtEvent* event);
aclError destroy_event(aclrtEvent event);
aclError record_event(aclrtEvent event, aclrtStream stream);
aclError synchronize_event(aclrtEvent event);
/// *complete: whether every record of the event has run.
aclError query_event(aclrtEvent event, bool* complete);
aclError stream_wait_event(aclrtStream stream, aclrtEvent event);
aclError event_elapsed_time(float* ms, aclrtEvent start, aclrtEvent end);

/// Phase 2 of an aclnn operator on stream (already checked live): calls work->run(workspace,
/// workspace_size, cudaStream_t) on this thread (it queues kernels and returns), keeps a
/// non-success status and its message for the stream's next synchronisation, and, when the run
/// succeeded and work->decode_fault is set, queues the copy of the run's fault record. kInvalid
/// only when the stream is not live (nothing ran); kRuntime when the record copy cannot be queued.
Status launch(const char* op, aclrtStream stream, const std::shared_ptr<const ExecutorWork>& work,
              void* workspace, uint64_t workspace_size);

}  // namespace kvflash::aclnn::cuda_rt
