// The ACL runtime on CUDA (see runtime_cuda.hpp for the mapping and the failure model). Built only
// with the CUDA backend.
//
// STATUS: compiled (nvcc / g++ 12, warnings as errors), never run: no GPU was available when it
// was written. tests/cuda_aclnn_test.cpp and scripts/gpu-check.sh's seed_example step verify it.
//
// Handles: every allocation and stream handed out is recorded (device allocations with their size),
// so a pointer that is not one of them is ACL_ERROR_INVALID_PARAM instead of undefined behaviour,
// and a copy whose kind does not match its pointers (cudaMemcpy's behaviour is undefined then) or
// that runs past the end of a device allocation is refused before CUDA sees it.
//
// Like the CPU runtime, nothing here is ever destroyed (static destructors of a CANN program may
// call acl functions after main); what the program never released stays allocated until exit.
#include "aclnn/runtime_cuda.hpp"

#include "aclnn/device_runtime.hpp"

#if defined(KVFLASH_HAVE_CUDA)

#include <cuda_runtime_api.h>

#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "aclnn/allocation_table.hpp"
#include "aclnn/runtime_common.hpp"
#include "aclnn/stream.hpp"
#include "core/device_fault.hpp"
#include "core/error.hpp"
#include "cuda/device.hpp"

namespace kvflash::aclnn::cuda_rt {
namespace {

// The code a failed CUDA call becomes: what the caller got wrong when CUDA says so, a kernel
// fault for the sticky errors a faulting kernel leaves, an internal error otherwise.
aclError acl_code(cudaError_t e) {
  switch (e) {
    case cudaErrorMemoryAllocation:
      return ACL_ERROR_BAD_ALLOC;
    case cudaErrorInvalidValue:
    case cudaErrorInvalidDevicePointer:
    case cudaErrorInvalidResourceHandle:
      return ACL_ERROR_INVALID_PARAM;
    case cudaErrorInvalidDevice:
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
      return ACL_ERROR_INVALID_DEVICE;
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorMisalignedAddress:
    case cudaErrorIllegalInstruction:
    case cudaErrorAssert:
      return ACL_ERROR_RT_AICORE_EXCEPTION;
    default:
      return ACL_ERROR_INTERNAL_ERROR;
  }
}

aclError cuda_fail(const char* fn, const char* call, cudaError_t e) {
  (void)cudaGetLastError();  // clear the non-sticky error slot for the next call on this thread
  return rt_fail(acl_code(e), std::string(fn) + ": " + call + " failed: " + cudaGetErrorName(e) +
                                  " (" + cudaGetErrorString(e) + ")");
}

#define ACL_CUDA_TRY(fn, expr)                                            \
  do {                                                                    \
    const cudaError_t acl_cuda_err_ = (expr);                             \
    if (acl_cuda_err_ != cudaSuccess) return cuda_fail(fn, #expr, acl_cuda_err_); \
  } while (0)

// One entry of a stream's record of what its synchronisation must report, in launch order: a
// failure a run returned on the launching thread, or a run's fault record being copied into
// `slot`, which work->decode_fault reads.
struct Pending {
  std::optional<Stream::Failure> failure;
  core::FaultRecord* slot = nullptr;
  std::shared_ptr<const ExecutorWork> work;
};

struct CudaStream {
  cudaStream_t handle = nullptr;
  std::mutex mu;  // serialises launches on this stream with their pending entries
  std::deque<Pending> pending;
};

// Pinned host slots of one core::FaultRecord for the fault-record copies, carved from chunks
// allocated on demand and reused (cudaMallocHost is far too slow to call per launch).
class SlotPool {
 public:
  core::FaultRecord* take(cudaError_t* error) {
    std::lock_guard<std::mutex> lock(mu_);
    if (free_.empty()) {
      constexpr size_t kSlots = 256;
      void* chunk = nullptr;
      if (const cudaError_t e = cudaMallocHost(&chunk, kSlots * sizeof(core::FaultRecord));
          e != cudaSuccess) {
        *error = e;
        return nullptr;
      }
      for (size_t i = 0; i < kSlots; ++i)
        free_.push_back(static_cast<core::FaultRecord*>(chunk) + i);
    }
    core::FaultRecord* slot = free_.back();
    free_.pop_back();
    return slot;
  }
  void give(core::FaultRecord* slot) {
    if (slot == nullptr) return;
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(slot);
  }

 private:
  std::mutex mu_;
  std::vector<core::FaultRecord*> free_;
};

struct Runtime {
  std::mutex mu;
  AllocationTable device_memory;
  AllocationTable host_memory;  // pinned
  std::unordered_map<void*, std::shared_ptr<CudaStream>> streams;
  std::shared_ptr<CudaStream> default_stream;
  std::unordered_map<void*, cudaEvent_t> events;  // handle (a heap cell) -> event
  SlotPool slots;
};

Runtime& rt() {
  static Runtime* const runtime = new Runtime;
  return *runtime;
}

std::shared_ptr<CudaStream> find(aclrtStream stream) {
  Runtime& r = rt();
  std::lock_guard<std::mutex> lock(r.mu);
  if (stream == nullptr) {
    if (!r.default_stream) {
      r.default_stream = std::make_shared<CudaStream>();
      r.default_stream->handle = cudaStreamLegacy;  // the stream every blocking stream waits on
    }
    return r.default_stream;
  }
  auto it = r.streams.find(stream);
  return it == r.streams.end() ? nullptr : it->second;
}

bool kind_reads_device(int32_t kind) {
  return kind == ACL_MEMCPY_DEVICE_TO_HOST || kind == ACL_MEMCPY_DEVICE_TO_DEVICE;
}
bool kind_writes_device(int32_t kind) {
  return kind == ACL_MEMCPY_HOST_TO_DEVICE || kind == ACL_MEMCPY_DEVICE_TO_DEVICE;
}

cudaMemcpyKind cuda_kind(int32_t kind) {
  switch (kind) {
    case ACL_MEMCPY_HOST_TO_DEVICE:
      return cudaMemcpyHostToDevice;
    case ACL_MEMCPY_DEVICE_TO_HOST:
      return cudaMemcpyDeviceToHost;
    case ACL_MEMCPY_DEVICE_TO_DEVICE:
      return cudaMemcpyDeviceToDevice;
    default:
      return cudaMemcpyHostToHost;
  }
}

// The pointers of a copy against its kind: a device side must lie within one aclrtMalloc
// allocation, a host side must not point into one.
aclError check_sides(const char* fn, void* dst, const void* src, size_t count, int32_t kind) {
  std::lock_guard<std::mutex> lock(rt().mu);
  const auto side = [&](const char* name, const void* p, bool device) -> aclError {
    if (device && !rt().device_memory.contains(p, count))
      return rt_fail(ACL_ERROR_INVALID_PARAM,
                     std::string(fn) + ": " + name + " (" + ptr_str(p) + ", " +
                         std::to_string(count) +
                         " bytes) is not within one aclrtMalloc allocation, as the copy kind (" +
                         std::to_string(kind) + ") says");
    if (!device && rt().device_memory.points_into(p))
      return rt_fail(ACL_ERROR_INVALID_PARAM,
                     std::string(fn) + ": " + name + " (" + ptr_str(p) +
                         ") is device memory but the copy kind (" + std::to_string(kind) +
                         ") says host");
    return ACL_SUCCESS;
  };
  if (aclError e = side("dst", dst, kind_writes_device(kind))) return e;
  return side("src", src, kind_reads_device(kind));
}

aclError check_device_range(const char* fn, const void* p, size_t count) {
  std::lock_guard<std::mutex> lock(rt().mu);
  if (!rt().device_memory.contains(p, count))
    return rt_fail(ACL_ERROR_INVALID_PARAM, std::string(fn) + ": devPtr (" + ptr_str(p) + ", " +
                                                std::to_string(count) +
                                                " bytes) is not within one aclrtMalloc allocation");
  return ACL_SUCCESS;
}

// Synchronises st, then reports what its launches before the call left: the first failure in
// launch order (and forgets every entry it read).
aclError sync_and_report(const char* fn, CudaStream& st) {
  size_t n;
  {
    std::lock_guard<std::mutex> lock(st.mu);
    n = st.pending.size();  // entries queued later belong to the next synchronisation
  }
  const cudaError_t sync = cudaStreamSynchronize(st.handle);
  std::vector<Pending> done;
  {
    std::lock_guard<std::mutex> lock(st.mu);
    for (size_t i = 0; i < n && !st.pending.empty(); ++i) {  // a destroy may have cleared it
      done.push_back(std::move(st.pending.front()));
      st.pending.pop_front();
    }
  }
  std::optional<Stream::Failure> first;
  for (Pending& p : done) {
    if (!first && p.failure) first = std::move(p.failure);
    // After a failed synchronisation the copies may not have run: the slots are not read.
    if (!first && sync == cudaSuccess && p.slot != nullptr) {
      core::clear_error();
      if (const Status s = p.work->decode_fault(*p.slot); s != Status::kSuccess)
        first = Stream::Failure{s, last_error_message()};
    }
    rt().slots.give(p.slot);
  }
  if (sync != cudaSuccess) return cuda_fail(fn, "cudaStreamSynchronize", sync);
  return report(fn, first);
}

}  // namespace

// The CUDA runtime behind the ACL entry points (device_runtime.hpp).
class CudaRuntime final : public DeviceRuntime {
 public:
  aclError check_device(const char* fn, int32_t id) override;
  aclError set_device(int32_t id) override;
  aclError reset_device(int32_t id) override;
  aclError device_count(uint32_t* count) override;
  aclError synchronize_device() override;
  aclError finalize() override;
  aclError create_stream(aclrtStream* stream) override;
  aclError destroy_stream(aclrtStream stream) override;
  aclError synchronize_stream(aclrtStream stream) override;
  bool is_live_stream(aclrtStream stream) override;
  Status launch(const char* op, aclrtStream stream, const std::shared_ptr<const ExecutorWork>& work,
                void* workspace, uint64_t workspace_size, bool* queued) override;
  aclError mem_info(size_t* free, size_t* total) override;
  aclError malloc_device(void** ptr, size_t size) override;
  aclError free_device(void* ptr) override;
  aclError malloc_host(void** ptr, size_t size) override;
  aclError free_host(void* ptr) override;
  aclError memcpy_sync(void* dst, const void* src, size_t count, int32_t kind) override;
  aclError memset_sync(void* ptr, int32_t value, size_t count) override;
  aclError memcpy_async(void* dst, const void* src, size_t count, int32_t kind,
                        aclrtStream stream) override;
  aclError memset_async(void* ptr, int32_t value, size_t count, aclrtStream stream) override;
  aclError create_event(aclrtEvent* event) override;
  aclError destroy_event(aclrtEvent event) override;
  aclError record_event(aclrtEvent event, aclrtStream stream) override;
  aclError synchronize_event(aclrtEvent event) override;
  aclError query_event(aclrtEvent event, bool* complete) override;
  aclError stream_wait_event(aclrtStream stream, aclrtEvent event) override;
  aclError event_elapsed_time(float* ms, aclrtEvent start, aclrtEvent end) override;
};

aclError CudaRuntime::device_count(uint32_t* count) {
  *count = static_cast<uint32_t>(cuda::device_info().count);
  return ACL_SUCCESS;
}

aclError CudaRuntime::check_device(const char* fn, int32_t id) {
  const int count = cuda::device_info().count;
  if (id < 0 || id >= count)
    return rt_fail(ACL_ERROR_INVALID_DEVICE, std::string(fn) + ": deviceId (" +
                                                 std::to_string(id) + ") must be in [0, " +
                                                 std::to_string(count) +
                                                 ") (the CUDA devices of this process)");
  return ACL_SUCCESS;
}

aclError CudaRuntime::set_device(int32_t id) {
  ACL_CUDA_TRY("aclrtSetDevice", cudaSetDevice(id));
  return ACL_SUCCESS;
}

aclError CudaRuntime::reset_device(int32_t id) {
  // No cudaDeviceReset: it would free every allocation and stream the runtime's tables hold, and
  // CANN programs free their buffers after aclrtResetDevice (often from static destructors). The
  // device finishes its queued work, as the CPU runtime's default stream does; failures stay for
  // the next synchronisation.
  ACL_CUDA_TRY("aclrtResetDevice", cudaSetDevice(id));
  ACL_CUDA_TRY("aclrtResetDevice", cudaDeviceSynchronize());
  return ACL_SUCCESS;
}

aclError CudaRuntime::synchronize_device() {
  std::vector<std::shared_ptr<CudaStream>> all;
  {
    std::lock_guard<std::mutex> lock(rt().mu);
    for (auto& [handle, s] : rt().streams) all.push_back(s);
    if (rt().default_stream) all.push_back(rt().default_stream);
  }
  ACL_CUDA_TRY("aclrtSynchronizeDevice", cudaDeviceSynchronize());
  aclError result = ACL_SUCCESS;
  for (auto& s : all) {
    const aclError e = sync_and_report("aclrtSynchronizeDevice", *s);
    if (result == ACL_SUCCESS) result = e;
  }
  return result;
}

aclError CudaRuntime::finalize() {
  std::unordered_map<void*, std::shared_ptr<CudaStream>> streams;
  std::shared_ptr<CudaStream> default_stream;
  {
    std::lock_guard<std::mutex> lock(rt().mu);
    streams.swap(rt().streams);
    default_stream.swap(rt().default_stream);
  }
  aclError result = ACL_SUCCESS;
  const auto drop = [&](CudaStream& s, bool destroy) {
    const cudaError_t e = cudaStreamSynchronize(s.handle);
    if (e != cudaSuccess && result == ACL_SUCCESS)
      result = cuda_fail("aclFinalize", "cudaStreamSynchronize", e);
    for (Pending& p : s.pending) rt().slots.give(p.slot);  // unreported failures are dropped
    s.pending.clear();
    if (destroy) (void)cudaStreamDestroy(s.handle);
  };
  for (auto& [handle, s] : streams) drop(*s, true);
  if (default_stream) drop(*default_stream, false);
  return result;
}

aclError CudaRuntime::create_stream(aclrtStream* stream) {
  auto s = std::make_shared<CudaStream>();
  // A blocking stream: work on the legacy default stream (aclrtMemcpy's cudaMemcpy) waits for it
  // and it for that work, the order CANN programs that copy right after a launch rely on.
  ACL_CUDA_TRY("aclrtCreateStream", cudaStreamCreateWithFlags(&s->handle, cudaStreamDefault));
  std::lock_guard<std::mutex> lock(rt().mu);
  rt().streams.emplace(s.get(), s);
  *stream = s.get();
  return ACL_SUCCESS;
}

aclError CudaRuntime::destroy_stream(aclrtStream stream) {
  std::shared_ptr<CudaStream> s;
  {
    std::lock_guard<std::mutex> lock(rt().mu);
    auto it = rt().streams.find(stream);
    if (it == rt().streams.end()) return not_live("aclrtDestroyStream", stream, "stream");
    s = std::move(it->second);
    rt().streams.erase(it);
  }
  // Queued work still runs to completion (as on the CPU); the pending slots are reused only
  // after the copies into them have run. Unreported failures of a destroyed stream are dropped.
  std::lock_guard<std::mutex> lock(s->mu);
  const cudaError_t e = cudaStreamSynchronize(s->handle);
  for (Pending& p : s->pending) rt().slots.give(p.slot);
  s->pending.clear();
  (void)cudaStreamDestroy(s->handle);
  if (e != cudaSuccess) return cuda_fail("aclrtDestroyStream", "cudaStreamSynchronize", e);
  return ACL_SUCCESS;
}

aclError CudaRuntime::synchronize_stream(aclrtStream stream) {
  pay_owed_wakes(nullptr);  // host streams' wake-ups (none on this runtime; c_entry leaves them)
  std::shared_ptr<CudaStream> s = find(stream);
  if (!s) return not_live("aclrtSynchronizeStream", stream, "stream");
  return sync_and_report("aclrtSynchronizeStream", *s);
}

bool CudaRuntime::is_live_stream(aclrtStream stream) { return find(stream) != nullptr; }

aclError CudaRuntime::mem_info(size_t* free, size_t* total) {
  ACL_CUDA_TRY("aclrtGetMemInfo", cudaMemGetInfo(free, total));
  return ACL_SUCCESS;
}

aclError CudaRuntime::malloc_device(void** ptr, size_t size) {
  void* p = nullptr;
  ACL_CUDA_TRY("aclrtMalloc", cudaMalloc(&p, size));  // 256-byte aligned
  try {
    std::lock_guard<std::mutex> lock(rt().mu);
    rt().device_memory.add(p, size);
  } catch (...) {  // std::bad_alloc recording it: give the memory back
    (void)cudaFree(p);
    throw;
  }
  *ptr = p;
  return ACL_SUCCESS;
}

aclError CudaRuntime::free_device(void* ptr) {
  {
    std::lock_guard<std::mutex> lock(rt().mu);
    if (!rt().device_memory.remove(ptr))
      return rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtFree: " + ptr_str(ptr) +
                                                  " was not allocated by it or is already freed");
  }
  ACL_CUDA_TRY("aclrtFree", cudaFree(ptr));  // waits for the device to stop using it
  return ACL_SUCCESS;
}

aclError CudaRuntime::malloc_host(void** ptr, size_t size) {
  void* p = nullptr;
  ACL_CUDA_TRY("aclrtMallocHost", cudaMallocHost(&p, size));
  try {
    std::lock_guard<std::mutex> lock(rt().mu);
    rt().host_memory.add(p, size);
  } catch (...) {
    (void)cudaFreeHost(p);
    throw;
  }
  *ptr = p;
  return ACL_SUCCESS;
}

aclError CudaRuntime::free_host(void* ptr) {
  {
    std::lock_guard<std::mutex> lock(rt().mu);
    if (!rt().host_memory.remove(ptr))
      return rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtFreeHost: " + ptr_str(ptr) +
                                                  " was not allocated by it or is already freed");
  }
  ACL_CUDA_TRY("aclrtFreeHost", cudaFreeHost(ptr));
  return ACL_SUCCESS;
}

aclError CudaRuntime::memcpy_sync(void* dst, const void* src, size_t count, int32_t kind) {
  if (count == 0) return ACL_SUCCESS;
  if (aclError e = check_sides("aclrtMemcpy", dst, src, count, kind)) return e;
  ACL_CUDA_TRY("aclrtMemcpy", cudaMemcpy(dst, src, count, cuda_kind(kind)));
  // cudaMemcpy returns before a device-to-device (or small host-to-device) copy has finished;
  // aclrtMemcpy is synchronous.
  ACL_CUDA_TRY("aclrtMemcpy", cudaStreamSynchronize(cudaStreamLegacy));
  return ACL_SUCCESS;
}

aclError CudaRuntime::memset_sync(void* ptr, int32_t value, size_t count) {
  if (count == 0) return ACL_SUCCESS;
  bool device;
  {
    std::lock_guard<std::mutex> lock(rt().mu);
    device = rt().device_memory.points_into(ptr);
  }
  if (!device) {  // host memory, as the CPU runtime accepts
    std::memset(ptr, value, count);
    return ACL_SUCCESS;
  }
  if (aclError e = check_device_range("aclrtMemset", ptr, count)) return e;
  ACL_CUDA_TRY("aclrtMemset", cudaMemset(ptr, value, count));
  ACL_CUDA_TRY("aclrtMemset", cudaStreamSynchronize(cudaStreamLegacy));
  return ACL_SUCCESS;
}

aclError CudaRuntime::memcpy_async(void* dst, const void* src, size_t count, int32_t kind, aclrtStream stream) {
  std::shared_ptr<CudaStream> s = find(stream);
  if (!s) return not_live("aclrtMemcpyAsync", stream, "stream");
  if (count == 0) return ACL_SUCCESS;
  if (aclError e = check_sides("aclrtMemcpyAsync", dst, src, count, kind)) return e;
  ACL_CUDA_TRY("aclrtMemcpyAsync",
               cudaMemcpyAsync(dst, src, count, cuda_kind(kind), s->handle));
  return ACL_SUCCESS;
}

aclError CudaRuntime::memset_async(void* ptr, int32_t value, size_t count, aclrtStream stream) {
  std::shared_ptr<CudaStream> s = find(stream);
  if (!s) return not_live("aclrtMemsetAsync", stream, "stream");
  if (count == 0) return ACL_SUCCESS;
  if (aclError e = check_device_range("aclrtMemsetAsync", ptr, count)) return e;
  ACL_CUDA_TRY("aclrtMemsetAsync", cudaMemsetAsync(ptr, value, count, s->handle));
  return ACL_SUCCESS;
}

// ---- events ------------------------------------------------------------------------------------

namespace {
bool find_event(aclrtEvent handle, cudaEvent_t* out) {
  std::lock_guard<std::mutex> lock(rt().mu);
  auto it = rt().events.find(handle);
  if (it == rt().events.end()) return false;
  *out = it->second;
  return true;
}
}  // namespace

aclError CudaRuntime::create_event(aclrtEvent* event) {
  cudaEvent_t e = nullptr;
  ACL_CUDA_TRY("aclrtCreateEvent", cudaEventCreate(&e));  // with timing: aclrtEventElapsedTime
  // The handle is a cell of our own, so a dead or foreign handle is found out before CUDA sees it.
  auto cell = std::make_unique<char>();
  std::lock_guard<std::mutex> lock(rt().mu);
  rt().events.emplace(cell.get(), e);
  *event = cell.release();
  return ACL_SUCCESS;
}

aclError CudaRuntime::destroy_event(aclrtEvent event) {
  cudaEvent_t e = nullptr;
  {
    std::lock_guard<std::mutex> lock(rt().mu);
    auto it = rt().events.find(event);
    if (it == rt().events.end()) return not_live("aclrtDestroyEvent", event, "event");
    e = it->second;
    rt().events.erase(it);
  }
  delete static_cast<char*>(event);
  ACL_CUDA_TRY("aclrtDestroyEvent", cudaEventDestroy(e));  // pending records still complete
  return ACL_SUCCESS;
}

aclError CudaRuntime::record_event(aclrtEvent event, aclrtStream stream) {
  cudaEvent_t e = nullptr;
  if (!find_event(event, &e)) return not_live("aclrtRecordEvent", event, "event");
  std::shared_ptr<CudaStream> s = find(stream);
  if (!s) return not_live("aclrtRecordEvent", stream, "stream");
  ACL_CUDA_TRY("aclrtRecordEvent", cudaEventRecord(e, s->handle));
  return ACL_SUCCESS;
}

aclError CudaRuntime::synchronize_event(aclrtEvent event) {
  cudaEvent_t e = nullptr;
  if (!find_event(event, &e)) return not_live("aclrtSynchronizeEvent", event, "event");
  ACL_CUDA_TRY("aclrtSynchronizeEvent", cudaEventSynchronize(e));
  return ACL_SUCCESS;
}

aclError CudaRuntime::query_event(aclrtEvent event, bool* complete) {
  cudaEvent_t e = nullptr;
  if (!find_event(event, &e)) return not_live("aclrtQueryEvent", event, "event");
  const cudaError_t q = cudaEventQuery(e);
  if (q == cudaErrorNotReady) {
    (void)cudaGetLastError();
    *complete = false;
    return ACL_SUCCESS;
  }
  if (q != cudaSuccess) return cuda_fail("aclrtQueryEvent", "cudaEventQuery", q);
  *complete = true;
  return ACL_SUCCESS;
}

aclError CudaRuntime::stream_wait_event(aclrtStream stream, aclrtEvent event) {
  cudaEvent_t e = nullptr;
  if (!find_event(event, &e)) return not_live("aclrtStreamWaitEvent", event, "event");
  std::shared_ptr<CudaStream> s = find(stream);
  if (!s) return not_live("aclrtStreamWaitEvent", stream, "stream");
  ACL_CUDA_TRY("aclrtStreamWaitEvent", cudaStreamWaitEvent(s->handle, e, 0));
  return ACL_SUCCESS;
}

aclError CudaRuntime::event_elapsed_time(float* ms, aclrtEvent start, aclrtEvent end) {
  cudaEvent_t a = nullptr, b = nullptr;
  if (!find_event(start, &a)) return not_live("aclrtEventElapsedTime", start, "event");
  if (!find_event(end, &b)) return not_live("aclrtEventElapsedTime", end, "event");
  ACL_CUDA_TRY("aclrtEventElapsedTime", cudaEventElapsedTime(ms, a, b));
  return ACL_SUCCESS;
}

namespace {

// Phase 2 on a stream (runtime_cuda.hpp): kInvalid when the stream is not live (nothing ran).
Status launch_on(const char* op, aclrtStream stream, const std::shared_ptr<const ExecutorWork>& work,
              void* workspace, uint64_t workspace_size) {
  std::shared_ptr<CudaStream> s = find(stream);
  if (!s)
    return core::fail(Status::kInvalid, op,
                      "stream (" + ptr_str(stream) + ") is not a live aclrtStream");
  std::lock_guard<std::mutex> lock(s->mu);
  const Status ran = work->run(workspace, workspace_size, static_cast<void*>(s->handle));
  if (ran != Status::kSuccess) {
    Pending p;
    p.failure = Stream::Failure{ran, last_error_message()};
    s->pending.push_back(std::move(p));
    core::clear_error();  // reported at synchronisation
    return Status::kSuccess;
  }
  if (work->decode_fault) {
    // The record is copied now, in stream order: the workspace may be reused by the next call
    // before anyone synchronises.
    Pending p;
    cudaError_t e = cudaSuccess;
    p.slot = rt().slots.take(&e);
    if (p.slot != nullptr)
      e = cudaMemcpyAsync(p.slot, core::fault_record_at(workspace), sizeof(core::FaultRecord),
                          cudaMemcpyDeviceToHost, s->handle);
    if (e != cudaSuccess) {  // the run is queued but its faults could not be watched: say so now
      rt().slots.give(p.slot);
      (void)cudaGetLastError();
      return core::fail(Status::kRuntime, op,
                        std::string("cannot queue the copy of the run's fault record: ") +
                            cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
    }
    p.work = work;
    s->pending.push_back(std::move(p));
  }
  core::clear_error();
  return Status::kSuccess;
}

}  // namespace

Status CudaRuntime::launch(const char* op, aclrtStream stream,
                           const std::shared_ptr<const ExecutorWork>& work, void* workspace,
                           uint64_t workspace_size, bool* queued) {
  const Status st = launch_on(op, stream, work, workspace, workspace_size);
  *queued = st != Status::kInvalid;  // kInvalid: the stream died meanwhile, nothing ran
  return st;
}

}  // namespace kvflash::aclnn::cuda_rt

namespace kvflash::aclnn {

DeviceRuntime& cuda_device_runtime() {
  static cuda_rt::CudaRuntime* const runtime = new cuda_rt::CudaRuntime;  // never destroyed
  return *runtime;
}

}  // namespace kvflash::aclnn

#else  // no CUDA backend: the choice is never "cuda" (acl_backend refuses it)

namespace kvflash::aclnn {

DeviceRuntime& cuda_device_runtime() { return host_runtime(); }

}  // namespace kvflash::aclnn

#endif  // KVFLASH_HAVE_CUDA
