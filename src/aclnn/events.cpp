// ACL events: markers recorded on a stream, waited for by the host (aclrtSynchronizeEvent) or by
// another stream (aclrtStreamWaitEvent), and timed (aclrtEventElapsedTime). The entry points check
// their arguments, then call the runtime of the process's choice (device_runtime.hpp: the host's
// counter pairs, runtime_host.cpp; CUDA's cudaEvent_t, runtime_cuda.cpp). Failures of operators
// are not reported here: aclrtSynchronizeStream and aclrtSynchronizeDevice report them.
#include "acl/acl.h"
#include "aclnn/acl_objects.hpp"
#include "aclnn/device_runtime.hpp"
#include "aclnn/runtime_common.hpp"

using namespace kvflash::aclnn;  // NOLINT: thin C entry points

extern "C" {

aclError aclrtCreateEvent(aclrtEvent* event) {
  return c_entry("aclrtCreateEvent", ACL_ERROR_BAD_ALLOC, [&]() -> aclError {
    if (event == nullptr) return rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtCreateEvent: event is null");
    *event = nullptr;
    if (aclError e = runtime_ready("aclrtCreateEvent")) return e;
    return device_runtime().create_event(event);
  });
}

aclError aclrtDestroyEvent(aclrtEvent event) {
  return c_entry("aclrtDestroyEvent", ACL_ERROR_BAD_ALLOC, [&]() -> aclError {
    if (aclError e = runtime_ready("aclrtDestroyEvent")) return e;
    return device_runtime().destroy_event(event);
  });
}

aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream) {
  return c_entry("aclrtRecordEvent", ACL_ERROR_BAD_ALLOC, [&]() -> aclError {
    if (aclError e = runtime_ready("aclrtRecordEvent")) return e;
    return device_runtime().record_event(event, stream);
  });
}

aclError aclrtSynchronizeEvent(aclrtEvent event) {
  return c_entry("aclrtSynchronizeEvent", ACL_ERROR_BAD_ALLOC, [&]() -> aclError {
    if (aclError e = runtime_ready("aclrtSynchronizeEvent")) return e;
    return device_runtime().synchronize_event(event);
  });
}

aclError aclrtQueryEvent(aclrtEvent event, aclrtEventStatus* status) {
  return c_entry("aclrtQueryEvent", ACL_ERROR_BAD_ALLOC, [&]() -> aclError {
    if (status == nullptr) return rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtQueryEvent: status is null");
    if (aclError e = runtime_ready("aclrtQueryEvent")) return e;
    bool complete = false;
    if (aclError e = device_runtime().query_event(event, &complete)) return e;
    *status = complete ? ACL_EVENT_STATUS_COMPLETE : ACL_EVENT_STATUS_NOT_READY;
    return ACL_SUCCESS;
  });
}

aclError aclrtStreamWaitEvent(aclrtStream stream, aclrtEvent event) {
  return c_entry("aclrtStreamWaitEvent", ACL_ERROR_BAD_ALLOC, [&]() -> aclError {
    if (aclError e = runtime_ready("aclrtStreamWaitEvent")) return e;
    return device_runtime().stream_wait_event(stream, event);
  });
}

aclError aclrtEventElapsedTime(float* ms, aclrtEvent startEvent, aclrtEvent endEvent) {
  return c_entry("aclrtEventElapsedTime", ACL_ERROR_BAD_ALLOC, [&]() -> aclError {
    if (ms == nullptr) return rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtEventElapsedTime: ms is null");
    if (aclError e = runtime_ready("aclrtEventElapsedTime")) return e;
    return device_runtime().event_elapsed_time(ms, startEvent, endEvent);
  });
}

}  // extern "C"
