// Executors and the common phase 2. An executor handle is an id from a counter, never a pointer
// and never reissued, so a consumed or destroyed executor passed again is recognised (161002)
// without touching freed memory.
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "aclnn/acl_backend.hpp"
#include "aclnn/acl_objects.hpp"
#include "aclnn/device_runtime.hpp"
#include "core/error.hpp"
#include "core/strings.hpp"

namespace kvflash::aclnn {
namespace {

struct Entry {
  std::shared_ptr<const ExecutorWork> work;  // shared with tasks already on a stream
  bool repeatable = false;
  bool claimed = false;  // a phase 2 is queueing it (single-use executors)
};

struct Executors {
  std::mutex mu;
  uintptr_t next_id = 1;
  std::unordered_map<uintptr_t, Entry> live;
};

// Never destroyed: a static destructor of the program may still destroy an executor after main,
// and what the program never destroyed stays reachable until the process ends.
Executors& executors() {
  static Executors* const e = new Executors;
  return *e;
}

uintptr_t id_of(const aclOpExecutor* e) { return reinterpret_cast<uintptr_t>(e); }

}  // namespace

aclOpExecutor* make_executor(ExecutorWork work) {
  auto shared = std::make_shared<const ExecutorWork>(std::move(work));
  Executors& ex = executors();
  std::lock_guard<std::mutex> lock(ex.mu);
  // Ids are multiples of 16 so handles look like aligned pointers to code that prints them.
  const uintptr_t id = ex.next_id++ * 16;
  ex.live.emplace(id, Entry{std::move(shared), false});
  return reinterpret_cast<aclOpExecutor*>(id);
}

aclnnStatus launch(const char* op, void* workspace, uint64_t workspace_size,
                   aclOpExecutor* executor, aclrtStream stream) {
  core::clear_error();
  if (executor == nullptr) return null_arg(op, "executor");
  Executors& ex = executors();
  Entry entry;
  {
    std::lock_guard<std::mutex> lock(ex.mu);
    auto it = ex.live.find(id_of(executor));
    if (it == ex.live.end())
      return to_aclnn(core::fail(Status::kInvalid, op,
                                 "executor (" + core::ptr_str(executor) +
                                     ") is not live: it was already consumed by a phase-2 call, "
                                     "destroyed, or never returned by phase 1"));
    entry = it->second;
  }
  const ExecutorWork& work = *entry.work;
  if (work.op != op)
    return to_aclnn(core::fail(Status::kInvalid, op, "executor was created for " + work.op));
  if (workspace_size < work.workspace_size)
    return to_aclnn(core::fail(Status::kInvalid, op,
                               "workspaceSize (" + std::to_string(workspace_size) +
                                   ") is smaller than the " + std::to_string(work.workspace_size) +
                                   " bytes phase 1 asked for"));
  if (workspace == nullptr && work.workspace_size > 0)
    return to_aclnn(core::fail(Status::kNullPtr, op,
                               "workspace must not be null (phase 1 asked for " +
                                   std::to_string(work.workspace_size) + " bytes)"));
  DeviceRuntime& runtime = device_runtime();
  if (!runtime.is_live_stream(stream))
    return to_aclnn(core::fail(Status::kInvalid, op,
                               "stream (" + core::ptr_str(stream) + ") is not a live aclrtStream"));
  // Everything that may fail comes before the executor is consumed, so a refused phase 2 (an
  // allocation failure, a stream being destroyed) leaves it usable.
  std::shared_ptr<const ExecutorWork> owned = entry.work;
  const uintptr_t id = id_of(executor);
  // Claim it atomically: of two racing launches of one executor exactly one gets past this point.
  if (!entry.repeatable) {
    std::lock_guard<std::mutex> lock(ex.mu);
    auto it = ex.live.find(id);
    if (it == ex.live.end() || it->second.claimed)
      return to_aclnn(
          core::fail(Status::kInvalid, op, "executor was consumed by a concurrent phase-2 call"));
    it->second.claimed = true;
  }
  const auto unclaim = [&] {
    if (entry.repeatable) return;
    std::lock_guard<std::mutex> lock(ex.mu);
    if (auto it = ex.live.find(id); it != ex.live.end()) it->second.claimed = false;
  };
  bool queued = false;
  Status status = Status::kSuccess;
  try {
    status = runtime.launch(op, stream, owned, workspace, workspace_size, &queued);
  } catch (...) {  // std::bad_alloc from the queue: nothing was queued
    unclaim();
    throw;
  }
  if (queued && status != Status::kSuccess) {  // ran, but its faults cannot be watched
    if (!entry.repeatable) {
      std::lock_guard<std::mutex> lock(ex.mu);
      ex.live.erase(id);
    }
    return to_aclnn(status);
  }
  if (!queued) {
    unclaim();
    return to_aclnn(status);  // the message is recorded
  }
  if (!entry.repeatable) {  // queued: consumed
    std::lock_guard<std::mutex> lock(ex.mu);
    ex.live.erase(id);
  }
  return ACLNN_SUCCESS;
}

}  // namespace kvflash::aclnn

using namespace kvflash::aclnn;  // NOLINT: thin C entry points

extern "C" {

aclnnStatus aclSetAclOpExecutorRepeatable(aclOpExecutor* executor) {
  return c_entry("aclSetAclOpExecutorRepeatable", static_cast<aclnnStatus>(ACLNN_ERR_RUNTIME_ERROR),
                 [&]() -> aclnnStatus {
                   if (executor == nullptr)
                     return null_arg("aclSetAclOpExecutorRepeatable", "executor");
                   Executors& ex = executors();
                   std::lock_guard<std::mutex> lock(ex.mu);
                   auto it = ex.live.find(id_of(executor));
                   if (it == ex.live.end())
                     return to_aclnn(kvflash::core::fail(
                         kvflash::Status::kInvalid, "aclSetAclOpExecutorRepeatable",
                         "executor (" + kvflash::core::ptr_str(executor) + ") is not live"));
                   it->second.repeatable = true;
                   return ACLNN_SUCCESS;
                 });
}

aclnnStatus aclDestroyAclOpExecutor(aclOpExecutor* executor) {
  return c_entry(
      "aclDestroyAclOpExecutor", static_cast<aclnnStatus>(ACLNN_ERR_RUNTIME_ERROR),
      [&]() -> aclnnStatus {
        if (executor == nullptr) return null_arg("aclDestroyAclOpExecutor", "executor");
        std::shared_ptr<const ExecutorWork> released;  // freed outside the lock
        Executors& ex = executors();
        std::lock_guard<std::mutex> lock(ex.mu);
        auto it = ex.live.find(id_of(executor));
        if (it == ex.live.end())
          return to_aclnn(kvflash::core::fail(
              kvflash::Status::kInvalid, "aclDestroyAclOpExecutor",
              "executor (" + kvflash::core::ptr_str(executor) + ") is not live"));
        released = std::move(it->second.work);
        ex.live.erase(it);
        return ACLNN_SUCCESS;
      });
}

}  // extern "C"
