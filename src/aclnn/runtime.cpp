// The ACL runtime's C entry points, and the runtime on the CPU: one device (0) whose "device
// memory" is host memory, contexts that only remember their device, and streams that are in-order
// worker queues (stream.hpp). With KVFLASH_ACL_BACKEND=cuda (acl_backend.hpp) each entry point
// checks its arguments as here, then runs on the CUDA runtime (runtime_cuda.hpp); contexts and the
// current device are kept here for both.
//
// Every handle given out (stream, context, allocation) is recorded in a table, so a handle that
// was never created or is already destroyed yields ACL_ERROR_INVALID_PARAM instead of undefined
// behaviour.
//
// Teardown: CANN programs often return from main (or call exit()) with work still queued and
// nothing released, and their static destructors may call acl functions after main. So the
// runtime is never destroyed (what the program never released stays allocated, and reachable, until
// the process ends), and an atexit handler, registered when the first stream is created, waits
// until every stream has run what was queued. The streams stay open after it: a later static
// destructor may still synchronise, copy, free, and even queue more work. The thread pool the
// kernels run on is never destroyed either (src/cpu/thread_pool.cpp).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "acl/acl.h"
#include "aclnn/acl_backend.hpp"
#include "aclnn/acl_objects.hpp"
#include "aclnn/runtime_common.hpp"
#include "aclnn/runtime_cuda.hpp"
#include "aclnn/runtime_state.hpp"
#include "aclnn/stream.hpp"
#include "core/error.hpp"

namespace kvflash::aclnn {
namespace {

constexpr size_t kDeviceAlignment = 64;  // every kernel may assume cache-line aligned buffers
constexpr int32_t kNumDevices = 1;

struct AlignedFree {
  void operator()(void* p) const { std::free(p); }
};

struct Runtime {
  std::mutex mu;
  bool initialized = false;
  int32_t current_device = -1;  // -1: no aclrtSetDevice yet
  std::unordered_map<void*, std::unique_ptr<void, AlignedFree>> device_memory;
  std::unordered_map<void*, std::unique_ptr<void, AlignedFree>> host_memory;
  std::unordered_map<uintptr_t, int32_t> contexts;  // handle id -> device
  uintptr_t next_context_id = 1;
  std::unordered_map<void*, std::shared_ptr<Stream>> streams;
  std::shared_ptr<Stream> default_stream;
};

// Created on first use and never destroyed (see the file comment).
Runtime& rt() {
  static Runtime* const runtime = new Runtime;
  return *runtime;
}

// At exit: every stream runs what is queued, while everything its tasks touch (the tables above,
// the pool, the executors' plans) is still alive, since none of it is ever destroyed.
void drain_streams_at_exit() {
  std::vector<std::shared_ptr<Stream>> all;
  {
    std::lock_guard<std::mutex> lock(rt().mu);
    for (auto& [handle, stream] : rt().streams) all.push_back(stream);
    if (rt().default_stream) all.push_back(rt().default_stream);
  }
  for (auto& s : all) s->wait_idle();
}

// A new stream. The first one registers drain_streams_at_exit: no work can be queued before it,
// and the later the handler is registered, the earlier at exit it runs (before the destructors of
// the program's statics built up to then).
std::shared_ptr<Stream> new_stream() {
  static const bool registered = std::atexit(drain_streams_at_exit) == 0;
  (void)registered;
  return std::make_shared<Stream>();
}

thread_local aclrtContext t_current_context = nullptr;

aclError allocate(std::unordered_map<void*, std::unique_ptr<void, AlignedFree>>* table,
                  const char* fn, void** ptr, size_t size) {
  if (aclError e = check_alloc(fn, ptr, size)) return e;
  if (size > SIZE_MAX - kDeviceAlignment)
    return rt_fail(ACL_ERROR_BAD_ALLOC,
                   std::string(fn) + ": size " + std::to_string(size) + " is too large");
  const size_t rounded = (size + kDeviceAlignment - 1) / kDeviceAlignment * kDeviceAlignment;
  void* p = std::aligned_alloc(kDeviceAlignment, rounded);
  if (p == nullptr)
    return rt_fail(ACL_ERROR_BAD_ALLOC, std::string(fn) + ": out of memory allocating " +
                                            std::to_string(size) + " bytes");
  std::unique_ptr<void, AlignedFree> owned(p);  // freed if recording it fails (std::bad_alloc)
  std::lock_guard<std::mutex> lock(rt().mu);
  table->emplace(p, std::move(owned));
  *ptr = p;
  return ACL_SUCCESS;
}

aclError release(std::unordered_map<void*, std::unique_ptr<void, AlignedFree>>* table,
                 const char* fn, void* ptr) {
  if (ptr == nullptr)
    return rt_fail(ACL_ERROR_INVALID_PARAM, std::string(fn) + ": pointer is null");
  std::unique_ptr<void, AlignedFree> owned;
  {
    std::lock_guard<std::mutex> lock(rt().mu);
    auto it = table->find(ptr);
    if (it == table->end())
      return rt_fail(ACL_ERROR_INVALID_PARAM, std::string(fn) + ": " + ptr_str(ptr) +
                                                  " was not allocated by it or is already freed");
    owned = std::move(it->second);
    table->erase(it);
  }
  return ACL_SUCCESS;  // owned frees outside the lock
}

aclError check_device(const char* fn, int32_t device_id) {
  if (aclError e = runtime_ready(fn)) return e;
#if defined(KVFLASH_HAVE_CUDA)
  if (cuda_runtime()) return cuda_rt::check_device(fn, device_id);
#endif
  if (device_id < 0 || device_id >= kNumDevices)
    return rt_fail(ACL_ERROR_INVALID_DEVICE, std::string(fn) + ": deviceId (" +
                                                 std::to_string(device_id) +
                                                 ") must be 0 (the CPU is the only device)");
  return ACL_SUCCESS;
}

}  // namespace

int32_t current_device() {
  std::lock_guard<std::mutex> lock(rt().mu);
  return rt().current_device;
}

std::shared_ptr<Stream> find_stream(aclrtStream handle) {
  Runtime& r = rt();
  std::lock_guard<std::mutex> lock(r.mu);
  if (handle == nullptr) {
    if (!r.default_stream) r.default_stream = new_stream();
    return r.default_stream;
  }
  auto it = r.streams.find(handle);
  return it == r.streams.end() ? nullptr : it->second;
}

}  // namespace kvflash::aclnn

using kvflash::aclnn::Stream;
using namespace kvflash::aclnn;  // NOLINT: the C entry points below are thin

extern "C" {

aclError aclInit(const char* configPath) {
  return c_entry("aclInit", ACL_ERROR_BAD_ALLOC, [&]() -> aclError {
    // CANN samples pass either nullptr or "" when they have no configuration file.
    if (configPath != nullptr && configPath[0] != '\0') {
      std::FILE* f = std::fopen(configPath, "rb");
      if (f == nullptr)
        return rt_fail(ACL_ERROR_INVALID_FILE,
                       std::string("aclInit: cannot open config file '") + configPath + "'");
      std::fclose(f);
    }
    if (aclError e = runtime_ready("aclInit")) return e;
    std::lock_guard<std::mutex> lock(rt().mu);
    if (rt().initialized)
      return rt_fail(ACL_ERROR_REPEAT_INITIALIZE, "aclInit: already initialised");
    rt().initialized = true;
    return ACL_SUCCESS;
  });
}

aclError aclFinalize(void) {
  return c_entry("aclFinalize", ACL_ERROR_BAD_ALLOC, [&]() -> aclError {
    std::unordered_map<void*, std::shared_ptr<Stream>> streams;
    std::shared_ptr<Stream> default_stream;
    {
      std::lock_guard<std::mutex> lock(rt().mu);
      if (!rt().initialized)
        return rt_fail(ACL_ERROR_REPEAT_FINALIZE,
                       "aclFinalize: not initialised (or finalised twice)");
      rt().initialized = false;
      rt().current_device = -1;
      streams.swap(rt().streams);
      default_stream.swap(rt().default_stream);
    }
    for (auto& [handle, stream] : streams) stream->close();
    if (default_stream) default_stream->close();
    ACL_ON_CUDA(cuda_rt::finalize());
    return ACL_SUCCESS;
  });
}

const char* aclGetRecentErrMsg(void) { return kvflash::last_error_message(); }

size_t aclDataTypeSize(aclDataType dataType) {
  switch (raw_enum(dataType)) {  // any int a C caller passes
    case ACL_FLOAT:
    case ACL_INT32:
    case ACL_UINT32:
    case ACL_COMPLEX32:
      return 4;
    case ACL_FLOAT16:
    case ACL_INT16:
    case ACL_UINT16:
    case ACL_BF16:
      return 2;
    case ACL_INT8:
    case ACL_UINT8:
    case ACL_BOOL:
    case ACL_HIFLOAT8:
    case ACL_FLOAT8_E5M2:
    case ACL_FLOAT8_E4M3FN:
    case ACL_FLOAT8_E8M0:
      return 1;
    case ACL_INT64:
    case ACL_UINT64:
    case ACL_DOUBLE:
    case ACL_COMPLEX64:
      return 8;
    case ACL_COMPLEX128:
      return 16;
    default:
      return 0;  // ACL_DT_UNDEFINED, ACL_STRING, the sub-byte types and unknown values
  }
}

aclError aclrtSetDevice(int32_t deviceId) {
  return c_entry("aclrtSetDevice", ACL_ERROR_BAD_ALLOC, [&]() -> aclError {
    if (aclError e = check_device("aclrtSetDevice", deviceId)) return e;
#if defined(KVFLASH_HAVE_CUDA)
    if (cuda_runtime())
      if (aclError e = cuda_rt::set_device(deviceId)) return e;
#endif
    std::lock_guard<std::mutex> lock(rt().mu);
    rt().current_device = deviceId;
    return ACL_SUCCESS;
  });
}

aclError aclrtResetDevice(int32_t deviceId) {
  return c_entry("aclrtResetDevice", ACL_ERROR_BAD_ALLOC, [&]() -> aclError {
    if (aclError e = check_device("aclrtResetDevice", deviceId)) return e;
    std::shared_ptr<Stream> default_stream;
    {
      std::lock_guard<std::mutex> lock(rt().mu);
      rt().current_device = -1;
      default_stream = rt().default_stream;
    }
    // Work still queued on the default stream belongs to this device: finish it (its failures
    // stay for the next aclrtSynchronizeStream(nullptr) to report).
    if (default_stream) default_stream->wait_idle();
    ACL_ON_CUDA(cuda_rt::reset_device(deviceId));
    return ACL_SUCCESS;
  });
}

aclError aclrtGetDevice(int32_t* deviceId) {
  return c_entry("aclrtGetDevice", ACL_ERROR_BAD_ALLOC, [&]() -> aclError {
    if (deviceId == nullptr)
      return rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtGetDevice: deviceId is null");
    std::lock_guard<std::mutex> lock(rt().mu);
    if (rt().current_device < 0)
      return rt_fail(ACL_ERROR_INVALID_DEVICE, "aclrtGetDevice: no device is set");
    *deviceId = rt().current_device;
    return ACL_SUCCESS;
  });
}

aclError aclrtGetDeviceCount(uint32_t* count) {
  return c_entry("aclrtGetDeviceCount", ACL_ERROR_BAD_ALLOC, [&]() -> aclError {
    if (count == nullptr)
      return rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtGetDeviceCount: count is null");
    if (aclError e = runtime_ready("aclrtGetDeviceCount")) return e;
    ACL_ON_CUDA(cuda_rt::get_device_count(count));
    *count = kNumDevices;
    return ACL_SUCCESS;
  });
}

aclError aclrtGetRunMode(aclrtRunMode* runMode) {
  return c_entry("aclrtGetRunMode", ACL_ERROR_BAD_ALLOC, [&]() -> aclError {
    if (runMode == nullptr)
      return rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtGetRunMode: runMode is null");
    *runMode = ACL_HOST;  // the program and its "device" share one memory
    return ACL_SUCCESS;
  });
}

aclError aclrtSynchronizeDevice(void) {
  return c_entry("aclrtSynchronizeDevice", ACL_ERROR_BAD_ALLOC, [&]() -> aclError {
    if (aclError e = runtime_ready("aclrtSynchronizeDevice")) return e;
    ACL_ON_CUDA(cuda_rt::synchronize_device());
    std::vector<std::shared_ptr<Stream>> all;
    {
      std::lock_guard<std::mutex> lock(rt().mu);
      for (auto& [handle, stream] : rt().streams) all.push_back(stream);
      if (rt().default_stream) all.push_back(rt().default_stream);
    }
    aclError result = ACL_SUCCESS;
    for (auto& s : all) {
      aclError e = report("aclrtSynchronizeDevice", s->synchronize());
      if (result == ACL_SUCCESS) result = e;
    }
    return result;
  });
}

aclError aclrtCreateContext(aclrtContext* context, int32_t deviceId) {
  return c_entry("aclrtCreateContext", ACL_ERROR_BAD_ALLOC, [&]() -> aclError {
    if (context == nullptr)
      return rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtCreateContext: context is null");
    if (aclError e = check_device("aclrtCreateContext", deviceId)) return e;
    std::lock_guard<std::mutex> lock(rt().mu);
    // Context handles are ids (never dereferenced), so a destroyed handle is never reissued.
    const uintptr_t id = rt().next_context_id++ * 16;
    rt().contexts.emplace(id, deviceId);
    *context = reinterpret_cast<aclrtContext>(id);
    t_current_context = *context;  // CANN makes a new context current on the calling thread
    rt().current_device = deviceId;
    return ACL_SUCCESS;
  });
}

aclError aclrtDestroyContext(aclrtContext context) {
  return c_entry("aclrtDestroyContext", ACL_ERROR_BAD_ALLOC, [&]() -> aclError {
    std::lock_guard<std::mutex> lock(rt().mu);
    if (rt().contexts.erase(reinterpret_cast<uintptr_t>(context)) == 0)
      return not_live("aclrtDestroyContext", context, "context");
    if (t_current_context == context) t_current_context = nullptr;
    return ACL_SUCCESS;
  });
}

aclError aclrtSetCurrentContext(aclrtContext context) {
  return c_entry("aclrtSetCurrentContext", ACL_ERROR_BAD_ALLOC, [&]() -> aclError {
    std::lock_guard<std::mutex> lock(rt().mu);
    auto it = rt().contexts.find(reinterpret_cast<uintptr_t>(context));
    if (it == rt().contexts.end()) return not_live("aclrtSetCurrentContext", context, "context");
    t_current_context = context;
    rt().current_device = it->second;
    return ACL_SUCCESS;
  });
}

aclError aclrtGetCurrentContext(aclrtContext* context) {
  return c_entry("aclrtGetCurrentContext", ACL_ERROR_BAD_ALLOC, [&]() -> aclError {
    if (context == nullptr)
      return rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtGetCurrentContext: context is null");
    std::lock_guard<std::mutex> lock(rt().mu);
    if (t_current_context == nullptr ||
        rt().contexts.count(reinterpret_cast<uintptr_t>(t_current_context)) == 0)
      return rt_fail(ACL_ERROR_INVALID_PARAM,
                     "aclrtGetCurrentContext: no current context on this thread");
    *context = t_current_context;
    return ACL_SUCCESS;
  });
}

aclError aclrtCreateStream(aclrtStream* stream) {
  return c_entry("aclrtCreateStream", ACL_ERROR_BAD_ALLOC, [&]() -> aclError {
    if (stream == nullptr)
      return rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtCreateStream: stream is null");
    *stream = nullptr;
    if (aclError e = runtime_ready("aclrtCreateStream")) return e;
    ACL_ON_CUDA(cuda_rt::create_stream(stream));
    std::shared_ptr<Stream> s;
    try {
      s = new_stream();
    } catch (const std::exception& e) {  // std::system_error when no thread can be started
      return rt_fail(ACL_ERROR_BAD_ALLOC, std::string("aclrtCreateStream: ") + e.what());
    }
    std::lock_guard<std::mutex> lock(rt().mu);
    rt().streams.emplace(s.get(), s);
    *stream = s.get();
    return ACL_SUCCESS;
  });
}

aclError aclrtDestroyStream(aclrtStream stream) {
  return c_entry("aclrtDestroyStream", ACL_ERROR_BAD_ALLOC, [&]() -> aclError {
    if (aclError e = runtime_ready("aclrtDestroyStream")) return e;
    ACL_ON_CUDA(cuda_rt::destroy_stream(stream));
    std::shared_ptr<Stream> s;
    {
      std::lock_guard<std::mutex> lock(rt().mu);
      auto it = rt().streams.find(stream);
      if (it == rt().streams.end()) return not_live("aclrtDestroyStream", stream, "stream");
      s = std::move(it->second);
      rt().streams.erase(it);
    }
    s->close();  // queued work still runs to completion
    return ACL_SUCCESS;
  });
}

aclError aclrtSynchronizeStream(aclrtStream stream) {
  return c_entry("aclrtSynchronizeStream", ACL_ERROR_BAD_ALLOC, [&]() -> aclError {
    if (aclError e = runtime_ready("aclrtSynchronizeStream")) return e;
    ACL_ON_CUDA(cuda_rt::synchronize_stream(stream));
    std::shared_ptr<Stream> s = find_stream(stream);
    if (!s) return not_live("aclrtSynchronizeStream", stream, "stream");
    return report("aclrtSynchronizeStream", s->synchronize());
  });
}

aclError aclrtMalloc(void** devPtr, size_t size, aclrtMemMallocPolicy policy_enum) {
  return c_entry("aclrtMalloc", ACL_ERROR_BAD_ALLOC, [&]() -> aclError {
    const int32_t policy = raw_enum(policy_enum);  // any int a C caller passes
    if (aclError e = check_malloc_policy("aclrtMalloc", policy)) {
      if (devPtr) *devPtr = nullptr;
      return e;
    }
    if (aclError e = runtime_ready("aclrtMalloc")) {
      if (devPtr) *devPtr = nullptr;
      return e;
    }
#if defined(KVFLASH_HAVE_CUDA)
    if (cuda_runtime()) {
      if (aclError e = check_alloc("aclrtMalloc", devPtr, size)) return e;
      return cuda_rt::malloc_device(devPtr, size);
    }
#endif
    return allocate(&rt().device_memory, "aclrtMalloc", devPtr, size);
  });
}

aclError aclrtGetMemInfo(aclrtMemAttr attr_enum, size_t* free, size_t* total) {
  return c_entry("aclrtGetMemInfo", ACL_ERROR_BAD_ALLOC, [&]() -> aclError {
    const int32_t attr = raw_enum(attr_enum);  // any int a C caller passes
    if (attr < ACL_DDR_MEM || attr > ACL_HBM_MEM_P2P_NORMAL)
      return rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtGetMemInfo: attr (" + std::to_string(attr) +
                                                  ") is not an aclrtMemAttr");
    if (free == nullptr || total == nullptr)
      return rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtGetMemInfo: free or total is null");
    if (aclError e = runtime_ready("aclrtGetMemInfo")) return e;
    ACL_ON_CUDA(cuda_rt::mem_info(free, total));
    // The CPU device's memory is the machine's: its physical and its available pages.
    const long page = sysconf(_SC_PAGESIZE);
    const long pages = sysconf(_SC_PHYS_PAGES);
    const long available = sysconf(_SC_AVPHYS_PAGES);
    if (page <= 0 || pages <= 0 || available < 0)
      return rt_fail(ACL_ERROR_INTERNAL_ERROR, "aclrtGetMemInfo: the machine's memory size is "
                                               "not available (sysconf)");
    *total = static_cast<size_t>(pages) * static_cast<size_t>(page);
    *free = static_cast<size_t>(available) * static_cast<size_t>(page);
    return ACL_SUCCESS;
  });
}

aclError aclrtFree(void* devPtr) {
  return c_entry("aclrtFree", ACL_ERROR_BAD_ALLOC, [&]() -> aclError {
    if (aclError e = runtime_ready("aclrtFree")) return e;
    if (devPtr == nullptr) return rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtFree: pointer is null");
    ACL_ON_CUDA(cuda_rt::free_device(devPtr));
    return release(&rt().device_memory, "aclrtFree", devPtr);
  });
}

aclError aclrtMallocHost(void** hostPtr, size_t size) {
  return c_entry("aclrtMallocHost", ACL_ERROR_BAD_ALLOC, [&]() -> aclError {
    if (aclError e = runtime_ready("aclrtMallocHost")) {
      if (hostPtr) *hostPtr = nullptr;
      return e;
    }
#if defined(KVFLASH_HAVE_CUDA)
    if (cuda_runtime()) {
      if (aclError e = check_alloc("aclrtMallocHost", hostPtr, size)) return e;
      return cuda_rt::malloc_host(hostPtr, size);
    }
#endif
    return allocate(&rt().host_memory, "aclrtMallocHost", hostPtr, size);
  });
}

aclError aclrtFreeHost(void* hostPtr) {
  return c_entry("aclrtFreeHost", ACL_ERROR_BAD_ALLOC, [&]() -> aclError {
    if (aclError e = runtime_ready("aclrtFreeHost")) return e;
    if (hostPtr == nullptr)
      return rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtFreeHost: pointer is null");
    ACL_ON_CUDA(cuda_rt::free_host(hostPtr));
    return release(&rt().host_memory, "aclrtFreeHost", hostPtr);
  });
}

aclError aclrtMemcpy(void* dst, size_t destMax, const void* src, size_t count,
                     aclrtMemcpyKind kind) {
  return c_entry("aclrtMemcpy", ACL_ERROR_BAD_ALLOC, [&]() -> aclError {
    if (aclError e = check_memcpy("aclrtMemcpy", dst, destMax, src, count, raw_enum(kind)))
      return e;
    if (aclError e = runtime_ready("aclrtMemcpy")) return e;
    ACL_ON_CUDA(cuda_rt::memcpy_sync(dst, src, count, raw_enum(kind)));
    if (count > 0) std::memmove(dst, src, count);
    return ACL_SUCCESS;
  });
}

aclError aclrtMemset(void* devPtr, size_t maxCount, int32_t value, size_t count) {
  return c_entry("aclrtMemset", ACL_ERROR_BAD_ALLOC, [&]() -> aclError {
    if (aclError e = check_memset("aclrtMemset", devPtr, maxCount, count)) return e;
    if (aclError e = runtime_ready("aclrtMemset")) return e;
    ACL_ON_CUDA(cuda_rt::memset_sync(devPtr, value, count));
    if (count > 0) std::memset(devPtr, value, count);
    return ACL_SUCCESS;
  });
}

aclError aclrtMemcpyAsync(void* dst, size_t destMax, const void* src, size_t count,
                          aclrtMemcpyKind kind, aclrtStream stream) {
  return c_entry("aclrtMemcpyAsync", ACL_ERROR_BAD_ALLOC, [&]() -> aclError {
    if (aclError e = check_memcpy("aclrtMemcpyAsync", dst, destMax, src, count, raw_enum(kind)))
      return e;
    if (aclError e = runtime_ready("aclrtMemcpyAsync")) return e;
    ACL_ON_CUDA(cuda_rt::memcpy_async(dst, src, count, raw_enum(kind), stream));
    std::shared_ptr<Stream> s = find_stream(stream);
    if (!s) return not_live("aclrtMemcpyAsync", stream, "stream");
    if (!s->submit([dst, src, count] {
          if (count > 0) std::memmove(dst, src, count);
          return kvflash::Status::kSuccess;
        }))
      return rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtMemcpyAsync: the stream is being destroyed");
    return ACL_SUCCESS;
  });
}

aclError aclrtMemsetAsync(void* devPtr, size_t maxCount, int32_t value, size_t count,
                          aclrtStream stream) {
  return c_entry("aclrtMemsetAsync", ACL_ERROR_BAD_ALLOC, [&]() -> aclError {
    if (aclError e = check_memset("aclrtMemsetAsync", devPtr, maxCount, count)) return e;
    if (aclError e = runtime_ready("aclrtMemsetAsync")) return e;
    ACL_ON_CUDA(cuda_rt::memset_async(devPtr, value, count, stream));
    std::shared_ptr<Stream> s = find_stream(stream);
    if (!s) return not_live("aclrtMemsetAsync", stream, "stream");
    if (!s->submit([devPtr, value, count] {
          if (count > 0) std::memset(devPtr, value, count);
          return kvflash::Status::kSuccess;
        }))
      return rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtMemsetAsync: the stream is being destroyed");
    return ACL_SUCCESS;
  });
}

}  // extern "C"
