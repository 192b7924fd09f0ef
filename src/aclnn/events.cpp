// ACL events: markers recorded on a stream, waited for by the host (aclrtSynchronizeEvent) or by
// another stream (aclrtStreamWaitEvent), and timed (aclrtEventElapsedTime).
//
// On the CPU runtime an event is a counter pair: each aclrtRecordEvent issues a record number and
// queues a task that marks it complete (with the time) when the stream reaches it; waiting for the
// event waits for the records issued before the wait. As with CUDA events, a wait on an event that
// was never recorded returns at once. On the CUDA runtime an event is a cudaEvent_t
// (runtime_cuda.cpp). Failures of operators are not reported here: aclrtSynchronizeStream and
// aclrtSynchronizeDevice report them.
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "acl/acl.h"
#include "aclnn/acl_backend.hpp"
#include "aclnn/acl_objects.hpp"
#include "aclnn/runtime_common.hpp"
#include "aclnn/runtime_cuda.hpp"
#include "aclnn/runtime_state.hpp"

namespace kvflash::aclnn {
namespace {

struct CpuEvent {
  std::mutex mu;
  std::condition_variable cv;
  uint64_t recorded = 0;   // records issued
  uint64_t completed = 0;  // the newest record that has run
  std::chrono::steady_clock::time_point when{};  // when it ran
};

struct Events {
  std::mutex mu;
  std::unordered_map<void*, std::shared_ptr<CpuEvent>> live;
};

// Never destroyed (static destructors of a program may still use events after main).
Events& events() {
  static Events* const e = new Events;
  return *e;
}

std::shared_ptr<CpuEvent> find_event(aclrtEvent event) {
  std::lock_guard<std::mutex> lock(events().mu);
  auto it = events().live.find(event);
  return it == events().live.end() ? nullptr : it->second;
}

// Blocks until the records issued before the call have run.
void wait_for(CpuEvent& e) {
  std::unique_lock<std::mutex> lock(e.mu);
  const uint64_t target = e.recorded;
  e.cv.wait(lock, [&] { return e.completed >= target; });
}

}  // namespace
}  // namespace kvflash::aclnn

using namespace kvflash::aclnn;  // NOLINT: thin C entry points

extern "C" {

aclError aclrtCreateEvent(aclrtEvent* event) {
  return c_entry("aclrtCreateEvent", ACL_ERROR_BAD_ALLOC, [&]() -> aclError {
    if (event == nullptr) return rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtCreateEvent: event is null");
    *event = nullptr;
    if (aclError e = runtime_ready("aclrtCreateEvent")) return e;
    ACL_ON_CUDA(cuda_rt::create_event(event));
    auto e = std::make_shared<CpuEvent>();
    std::lock_guard<std::mutex> lock(events().mu);
    events().live.emplace(e.get(), e);
    *event = e.get();
    return ACL_SUCCESS;
  });
}

aclError aclrtDestroyEvent(aclrtEvent event) {
  return c_entry("aclrtDestroyEvent", ACL_ERROR_BAD_ALLOC, [&]() -> aclError {
    if (aclError e = runtime_ready("aclrtDestroyEvent")) return e;
    ACL_ON_CUDA(cuda_rt::destroy_event(event));
    std::shared_ptr<CpuEvent> released;  // queued records keep their own reference
    std::lock_guard<std::mutex> lock(events().mu);
    auto it = events().live.find(event);
    if (it == events().live.end()) return not_live("aclrtDestroyEvent", event, "event");
    released = std::move(it->second);
    events().live.erase(it);
    return ACL_SUCCESS;
  });
}

aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream) {
  return c_entry("aclrtRecordEvent", ACL_ERROR_BAD_ALLOC, [&]() -> aclError {
    if (aclError e = runtime_ready("aclrtRecordEvent")) return e;
    ACL_ON_CUDA(cuda_rt::record_event(event, stream));
    std::shared_ptr<CpuEvent> e = find_event(event);
    if (!e) return not_live("aclrtRecordEvent", event, "event");
    std::shared_ptr<Stream> s = find_stream(stream);
    if (!s) return not_live("aclrtRecordEvent", stream, "stream");
    uint64_t number;
    {
      std::lock_guard<std::mutex> lock(e->mu);
      number = ++e->recorded;
    }
    const bool queued = s->submit([e, number] {
      {
        std::lock_guard<std::mutex> lock(e->mu);
        if (number > e->completed) {
          e->completed = number;
          e->when = std::chrono::steady_clock::now();
        }
      }
      e->cv.notify_all();
      return kvflash::Status::kSuccess;
    });
    if (!queued) {  // the stream is closing: the record never runs, so it must not be waited for
      {
        std::lock_guard<std::mutex> lock(e->mu);
        if (e->completed < number) e->completed = number;
      }
      e->cv.notify_all();
      return rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtRecordEvent: the stream is being destroyed");
    }
    return ACL_SUCCESS;
  });
}

aclError aclrtSynchronizeEvent(aclrtEvent event) {
  return c_entry("aclrtSynchronizeEvent", ACL_ERROR_BAD_ALLOC, [&]() -> aclError {
    if (aclError e = runtime_ready("aclrtSynchronizeEvent")) return e;
    ACL_ON_CUDA(cuda_rt::synchronize_event(event));
    std::shared_ptr<CpuEvent> e = find_event(event);
    if (!e) return not_live("aclrtSynchronizeEvent", event, "event");
    wait_for(*e);
    return ACL_SUCCESS;
  });
}

aclError aclrtQueryEvent(aclrtEvent event, aclrtEventStatus* status) {
  return c_entry("aclrtQueryEvent", ACL_ERROR_BAD_ALLOC, [&]() -> aclError {
    if (status == nullptr) return rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtQueryEvent: status is null");
    if (aclError e = runtime_ready("aclrtQueryEvent")) return e;
    bool complete = false;
#if defined(KVFLASH_HAVE_CUDA)
    if (cuda_runtime()) {
      if (aclError e = cuda_rt::query_event(event, &complete)) return e;
      *status = complete ? ACL_EVENT_STATUS_COMPLETE : ACL_EVENT_STATUS_NOT_READY;
      return ACL_SUCCESS;
    }
#endif
    std::shared_ptr<CpuEvent> e = find_event(event);
    if (!e) return not_live("aclrtQueryEvent", event, "event");
    {
      std::lock_guard<std::mutex> lock(e->mu);
      complete = e->completed >= e->recorded;
    }
    *status = complete ? ACL_EVENT_STATUS_COMPLETE : ACL_EVENT_STATUS_NOT_READY;
    return ACL_SUCCESS;
  });
}

aclError aclrtStreamWaitEvent(aclrtStream stream, aclrtEvent event) {
  return c_entry("aclrtStreamWaitEvent", ACL_ERROR_BAD_ALLOC, [&]() -> aclError {
    if (aclError e = runtime_ready("aclrtStreamWaitEvent")) return e;
    ACL_ON_CUDA(cuda_rt::stream_wait_event(stream, event));
    std::shared_ptr<CpuEvent> e = find_event(event);
    if (!e) return not_live("aclrtStreamWaitEvent", event, "event");
    std::shared_ptr<Stream> s = find_stream(stream);
    if (!s) return not_live("aclrtStreamWaitEvent", stream, "stream");
    uint64_t target;
    {
      std::lock_guard<std::mutex> lock(e->mu);
      target = e->recorded;  // the records issued before this call
    }
    if (!s->submit([e, target] {
          std::unique_lock<std::mutex> lock(e->mu);
          e->cv.wait(lock, [&] { return e->completed >= target; });
          return kvflash::Status::kSuccess;
        }))
      return rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtStreamWaitEvent: the stream is being destroyed");
    return ACL_SUCCESS;
  });
}

aclError aclrtEventElapsedTime(float* ms, aclrtEvent startEvent, aclrtEvent endEvent) {
  return c_entry("aclrtEventElapsedTime", ACL_ERROR_BAD_ALLOC, [&]() -> aclError {
    if (ms == nullptr) return rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtEventElapsedTime: ms is null");
    if (aclError e = runtime_ready("aclrtEventElapsedTime")) return e;
    ACL_ON_CUDA(cuda_rt::event_elapsed_time(ms, startEvent, endEvent));
    std::chrono::steady_clock::time_point t[2];
    const aclrtEvent handles[2] = {startEvent, endEvent};
    for (int i = 0; i < 2; ++i) {
      std::shared_ptr<CpuEvent> e = find_event(handles[i]);
      if (!e) return not_live("aclrtEventElapsedTime", handles[i], "event");
      std::lock_guard<std::mutex> lock(e->mu);
      if (e->recorded == 0)
        return rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtEventElapsedTime: " +
                                                    ptr_str(handles[i]) + " was never recorded");
      if (e->completed < e->recorded)
        return rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtEventElapsedTime: " +
                                                    ptr_str(handles[i]) + " has not completed");
      t[i] = e->when;
    }
    *ms = std::chrono::duration<float, std::milli>(t[1] - t[0]).count();
    return ACL_SUCCESS;
  });
}

}  // extern "C"
