// The ACL runtime's C entry points (acl.h): each checks its arguments, the same on every runtime,
// then calls the runtime of the process's choice (device_runtime.hpp: the host's,
// runtime_host.cpp, or CUDA's, runtime_cuda.cpp). What every runtime shares is kept here:
// initialisation, contexts (which only remember their device) and the current device. Nothing
// here is ever destroyed (runtime_host.cpp says why).
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <unordered_map>

#include "acl/acl.h"
#include "aclnn/acl_backend.hpp"
#include "aclnn/acl_objects.hpp"
#include "aclnn/device_runtime.hpp"
#include "aclnn/runtime_common.hpp"
#include "aclnn/runtime_state.hpp"
#include "core/error.hpp"

namespace kvflash::aclnn {
namespace {

struct Runtime {
  std::mutex mu;
  bool initialized = false;
  int32_t current_device = -1;  // -1: no aclrtSetDevice yet
  std::unordered_map<uintptr_t, int32_t> contexts;  // handle id -> device
  uintptr_t next_context_id = 1;
};

// Created on first use and never destroyed.
Runtime& rt() {
  static Runtime* const runtime = new Runtime;
  return *runtime;
}

thread_local aclrtContext t_current_context = nullptr;

aclError check_device(const char* fn, int32_t device_id) {
  if (aclError e = runtime_ready(fn)) return e;
  return device_runtime().check_device(fn, device_id);
}

}  // namespace

int32_t current_device() {
  std::lock_guard<std::mutex> lock(rt().mu);
  return rt().current_device;
}

}  // namespace kvflash::aclnn

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
    {
      std::lock_guard<std::mutex> lock(rt().mu);
      if (!rt().initialized)
        return rt_fail(ACL_ERROR_REPEAT_FINALIZE,
                       "aclFinalize: not initialised (or finalised twice)");
      rt().initialized = false;
      rt().current_device = -1;
    }
    return device_runtime().finalize();
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
    if (aclError e = device_runtime().set_device(deviceId)) return e;
    std::lock_guard<std::mutex> lock(rt().mu);
    rt().current_device = deviceId;
    return ACL_SUCCESS;
  });
}

aclError aclrtResetDevice(int32_t deviceId) {
  return c_entry("aclrtResetDevice", ACL_ERROR_BAD_ALLOC, [&]() -> aclError {
    if (aclError e = check_device("aclrtResetDevice", deviceId)) return e;
    {
      std::lock_guard<std::mutex> lock(rt().mu);
      rt().current_device = -1;
    }
    return device_runtime().reset_device(deviceId);
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
    return device_runtime().device_count(count);
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
    return device_runtime().synchronize_device();
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
    return device_runtime().create_stream(stream);
  });
}

aclError aclrtDestroyStream(aclrtStream stream) {
  return c_entry("aclrtDestroyStream", ACL_ERROR_BAD_ALLOC, [&]() -> aclError {
    if (aclError e = runtime_ready("aclrtDestroyStream")) return e;
    return device_runtime().destroy_stream(stream);
  });
}

aclError aclrtSynchronizeStream(aclrtStream stream) {
  return c_entry(
      "aclrtSynchronizeStream", ACL_ERROR_BAD_ALLOC,
      [&]() -> aclError {
        if (aclError e = runtime_ready("aclrtSynchronizeStream")) return e;
        return device_runtime().synchronize_stream(stream);  // pays the other streams' wake-ups
      },
      false);
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
    if (aclError e = check_alloc("aclrtMalloc", devPtr, size)) return e;
    return device_runtime().malloc_device(devPtr, size);
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
    return device_runtime().mem_info(free, total);
  });
}

aclError aclrtFree(void* devPtr) {
  return c_entry("aclrtFree", ACL_ERROR_BAD_ALLOC, [&]() -> aclError {
    if (aclError e = runtime_ready("aclrtFree")) return e;
    if (devPtr == nullptr) return rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtFree: pointer is null");
    return device_runtime().free_device(devPtr);
  });
}

aclError aclrtMallocHost(void** hostPtr, size_t size) {
  return c_entry("aclrtMallocHost", ACL_ERROR_BAD_ALLOC, [&]() -> aclError {
    if (aclError e = runtime_ready("aclrtMallocHost")) {
      if (hostPtr) *hostPtr = nullptr;
      return e;
    }
    if (aclError e = check_alloc("aclrtMallocHost", hostPtr, size)) return e;
    return device_runtime().malloc_host(hostPtr, size);
  });
}

aclError aclrtFreeHost(void* hostPtr) {
  return c_entry("aclrtFreeHost", ACL_ERROR_BAD_ALLOC, [&]() -> aclError {
    if (aclError e = runtime_ready("aclrtFreeHost")) return e;
    if (hostPtr == nullptr)
      return rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtFreeHost: pointer is null");
    return device_runtime().free_host(hostPtr);
  });
}

aclError aclrtMemcpy(void* dst, size_t destMax, const void* src, size_t count,
                     aclrtMemcpyKind kind) {
  return c_entry("aclrtMemcpy", ACL_ERROR_BAD_ALLOC, [&]() -> aclError {
    if (aclError e = check_memcpy("aclrtMemcpy", dst, destMax, src, count, raw_enum(kind)))
      return e;
    if (aclError e = runtime_ready("aclrtMemcpy")) return e;
    return device_runtime().memcpy_sync(dst, src, count, raw_enum(kind));
  });
}

aclError aclrtMemset(void* devPtr, size_t maxCount, int32_t value, size_t count) {
  return c_entry("aclrtMemset", ACL_ERROR_BAD_ALLOC, [&]() -> aclError {
    if (aclError e = check_memset("aclrtMemset", devPtr, maxCount, count)) return e;
    if (aclError e = runtime_ready("aclrtMemset")) return e;
    return device_runtime().memset_sync(devPtr, value, count);
  });
}

aclError aclrtMemcpyAsync(void* dst, size_t destMax, const void* src, size_t count,
                          aclrtMemcpyKind kind, aclrtStream stream) {
  return c_entry("aclrtMemcpyAsync", ACL_ERROR_BAD_ALLOC, [&]() -> aclError {
    if (aclError e = check_memcpy("aclrtMemcpyAsync", dst, destMax, src, count, raw_enum(kind)))
      return e;
    if (aclError e = runtime_ready("aclrtMemcpyAsync")) return e;
    return device_runtime().memcpy_async(dst, src, count, raw_enum(kind), stream);
  });
}

aclError aclrtMemsetAsync(void* devPtr, size_t maxCount, int32_t value, size_t count,
                          aclrtStream stream) {
  return c_entry("aclrtMemsetAsync", ACL_ERROR_BAD_ALLOC, [&]() -> aclError {
    if (aclError e = check_memset("aclrtMemsetAsync", devPtr, maxCount, count)) return e;
    if (aclError e = runtime_ready("aclrtMemsetAsync")) return e;
    return device_runtime().memset_async(devPtr, value, count, stream);
  });
}

}  // extern "C"
