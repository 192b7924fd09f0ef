// The ACL runtime on the host (the default, KVFLASH_ACL_BACKEND unset or "cpu"): one device (0)
// whose "device memory" is host memory, and streams that are in-order worker queues (stream.hpp).
// The DeviceRuntime (device_runtime.hpp) of host_runtime(), which the C entry points call after
// checking their arguments.
//
// Every handle given out (stream, event, allocation) is recorded in a table, so a handle that was
// never created or is already destroyed yields ACL_ERROR_INVALID_PARAM instead of undefined
// behaviour.
//
// Events are counter pairs: each aclrtRecordEvent issues a record number and queues a task that
// marks it complete (with the time) when the stream reaches it; waiting for the event waits for
// the records issued before the wait. As with CUDA events, a wait on an event that was never
// recorded returns at once.
//
// Teardown: CANN programs often return from main (or call exit()) with work still queued and
// nothing released, and their static destructors may call acl functions after main. So nothing
// here is ever destroyed (what the program never released stays allocated, and reachable, until
// the process ends), and an atexit handler, registered when the first stream is created, waits
// until every stream has run what was queued. The streams stay open after it: a later static
// destructor may still synchronise, copy, free, and even queue more work. The thread pool the
// kernels run on is never destroyed either (src/cpu/thread_pool.cpp).
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "aclnn/device_runtime.hpp"
#include "aclnn/freed_blocks.hpp"
#include "aclnn/runtime_common.hpp"
#include "aclnn/runtime_state.hpp"
#include "aclnn/stream.hpp"
#include "core/error.hpp"

namespace kvflash::aclnn {
namespace {

constexpr size_t kDeviceAlignment = 64;  // every kernel may assume cache-line aligned buffers
constexpr int32_t kNumDevices = 1;

struct Allocation {
  HostBlock block;
  size_t bytes = 0;  // as allocated (rounded up to kDeviceAlignment)
};
using Allocations = std::unordered_map<void*, Allocation>;

struct HostEvent {
  std::mutex mu;
  std::condition_variable cv;
  uint64_t recorded = 0;   // records issued
  uint64_t completed = 0;  // the newest record that has run
  std::chrono::steady_clock::time_point when{};  // when it ran
};

// Blocks until the records issued before the call have run.
void wait_for(HostEvent& e) {
  std::unique_lock<std::mutex> lock(e.mu);
  const uint64_t target = e.recorded;
  e.cv.wait(lock, [&] { return e.completed >= target; });
}

class HostRuntime final : public DeviceRuntime {
 public:
  aclError check_device(const char* fn, int32_t id) override {
    if (id < 0 || id >= kNumDevices)
      return rt_fail(ACL_ERROR_INVALID_DEVICE, std::string(fn) + ": deviceId (" +
                                                   std::to_string(id) +
                                                   ") must be 0 (the CPU is the only device)");
    return ACL_SUCCESS;
  }

  aclError set_device(int32_t) override { return ACL_SUCCESS; }

  aclError reset_device(int32_t) override {
    std::shared_ptr<Stream> s;
    {
      std::lock_guard<std::mutex> lock(mu_);
      s = default_stream_;
    }
    // Work still queued on the default stream belongs to this device: finish it (its failures
    // stay for the next aclrtSynchronizeStream(nullptr) to report).
    if (s) s->wait_idle();
    return ACL_SUCCESS;
  }

  aclError device_count(uint32_t* count) override {
    *count = kNumDevices;
    return ACL_SUCCESS;
  }

  aclError synchronize_device() override {
    aclError result = ACL_SUCCESS;
    for (auto& s : all_streams()) {
      aclError e = report("aclrtSynchronizeDevice", s->synchronize());
      if (result == ACL_SUCCESS) result = e;
    }
    return result;
  }

  aclError finalize() override {
    std::unordered_map<void*, std::shared_ptr<Stream>> streams;
    std::shared_ptr<Stream> default_stream;
    std::vector<HostBlock> kept;  // the freed blocks go back to the C library (outside the lock)
    {
      std::lock_guard<std::mutex> lock(mu_);
      streams.swap(streams_);
      default_stream.swap(default_stream_);
      kept = freed_device_memory_.clear();
    }
    for (auto& [handle, stream] : streams) stream->close();
    if (default_stream) default_stream->close();
    return ACL_SUCCESS;
  }

  aclError create_stream(aclrtStream* stream) override {
    std::shared_ptr<Stream> s;
    try {
      s = new_stream();
    } catch (const std::exception& e) {  // std::system_error when no thread can be started
      return rt_fail(ACL_ERROR_BAD_ALLOC, std::string("aclrtCreateStream: ") + e.what());
    }
    std::lock_guard<std::mutex> lock(mu_);
    streams_.emplace(s.get(), s);
    *stream = s.get();
    return ACL_SUCCESS;
  }

  aclError destroy_stream(aclrtStream stream) override {
    std::shared_ptr<Stream> s;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = streams_.find(stream);
      if (it == streams_.end()) return not_live("aclrtDestroyStream", stream, "stream");
      s = std::move(it->second);
      streams_.erase(it);
    }
    s->close();  // queued work still runs to completion
    return ACL_SUCCESS;
  }

  aclError synchronize_stream(aclrtStream stream) override {
    std::shared_ptr<Stream> s = find_stream(stream);
    pay_owed_wakes(s.get());  // this stream's queue this thread runs itself (Stream::synchronize)
    if (!s) return not_live("aclrtSynchronizeStream", stream, "stream");
    return report("aclrtSynchronizeStream", s->synchronize());
  }

  bool is_live_stream(aclrtStream stream) override { return find_stream(stream) != nullptr; }

  Status launch(const char* op, aclrtStream stream, const std::shared_ptr<const ExecutorWork>& work,
                void* workspace, uint64_t workspace_size, bool* queued) override {
    std::shared_ptr<Stream> s = find_stream(stream);
    *queued = s && s->submit([work, workspace, workspace_size] {
      return work->run(workspace, workspace_size, nullptr);
    });
    if (*queued) return Status::kSuccess;
    return core::fail(Status::kRuntime, op,
                      "stream (" + core::ptr_str(stream) + ") is being destroyed");
  }

  aclError mem_info(size_t* free, size_t* total) override {
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
  }

  aclError malloc_device(void** ptr, size_t size) override {
    return allocate(&device_memory_, &freed_device_memory_, "aclrtMalloc", ptr, size);
  }
  aclError free_device(void* ptr) override {
    return release(&device_memory_, &freed_device_memory_, "aclrtFree", ptr);
  }
  aclError malloc_host(void** ptr, size_t size) override {
    return allocate(&host_memory_, nullptr, "aclrtMallocHost", ptr, size);
  }
  aclError free_host(void* ptr) override {
    return release(&host_memory_, nullptr, "aclrtFreeHost", ptr);
  }

  aclError memcpy_sync(void* dst, const void* src, size_t count, int32_t) override {
    if (count > 0) std::memmove(dst, src, count);
    return ACL_SUCCESS;
  }
  aclError memset_sync(void* ptr, int32_t value, size_t count) override {
    if (count > 0) std::memset(ptr, value, count);
    return ACL_SUCCESS;
  }
  aclError memcpy_async(void* dst, const void* src, size_t count, int32_t,
                        aclrtStream stream) override {
    std::shared_ptr<Stream> s = find_stream(stream);
    if (!s) return not_live("aclrtMemcpyAsync", stream, "stream");
    if (!s->submit([dst, src, count] {
          if (count > 0) std::memmove(dst, src, count);
          return Status::kSuccess;
        }))
      return rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtMemcpyAsync: the stream is being destroyed");
    return ACL_SUCCESS;
  }
  aclError memset_async(void* ptr, int32_t value, size_t count, aclrtStream stream) override {
    std::shared_ptr<Stream> s = find_stream(stream);
    if (!s) return not_live("aclrtMemsetAsync", stream, "stream");
    if (!s->submit([ptr, value, count] {
          if (count > 0) std::memset(ptr, value, count);
          return Status::kSuccess;
        }))
      return rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtMemsetAsync: the stream is being destroyed");
    return ACL_SUCCESS;
  }

  aclError create_event(aclrtEvent* event) override {
    auto e = std::make_shared<HostEvent>();
    std::lock_guard<std::mutex> lock(mu_);
    events_.emplace(e.get(), e);
    *event = e.get();
    return ACL_SUCCESS;
  }

  aclError destroy_event(aclrtEvent event) override {
    std::shared_ptr<HostEvent> released;  // queued records keep their own reference
    std::lock_guard<std::mutex> lock(mu_);
    auto it = events_.find(event);
    if (it == events_.end()) return not_live("aclrtDestroyEvent", event, "event");
    released = std::move(it->second);
    events_.erase(it);
    return ACL_SUCCESS;
  }

  aclError record_event(aclrtEvent event, aclrtStream stream) override {
    std::shared_ptr<HostEvent> e = find_event(event);
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
      return Status::kSuccess;
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
  }

  aclError synchronize_event(aclrtEvent event) override {
    std::shared_ptr<HostEvent> e = find_event(event);
    if (!e) return not_live("aclrtSynchronizeEvent", event, "event");
    wait_for(*e);
    return ACL_SUCCESS;
  }

  aclError query_event(aclrtEvent event, bool* complete) override {
    std::shared_ptr<HostEvent> e = find_event(event);
    if (!e) return not_live("aclrtQueryEvent", event, "event");
    std::lock_guard<std::mutex> lock(e->mu);
    *complete = e->completed >= e->recorded;
    return ACL_SUCCESS;
  }

  aclError stream_wait_event(aclrtStream stream, aclrtEvent event) override {
    std::shared_ptr<HostEvent> e = find_event(event);
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
          return Status::kSuccess;
        }))
      return rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtStreamWaitEvent: the stream is being destroyed");
    return ACL_SUCCESS;
  }

  aclError event_elapsed_time(float* ms, aclrtEvent start, aclrtEvent end) override {
    std::chrono::steady_clock::time_point t[2];
    const aclrtEvent handles[2] = {start, end};
    for (int i = 0; i < 2; ++i) {
      std::shared_ptr<HostEvent> e = find_event(handles[i]);
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
  }

 private:
  // At exit: every stream runs what is queued, while everything its tasks touch (the tables, the
  // pool, the executors' plans) is still alive, since none of it is ever destroyed.
  static void drain_streams_at_exit() {
    for (auto& s : static_cast<HostRuntime&>(host_runtime()).all_streams()) s->wait_idle();
  }

  // A new stream. The first one registers drain_streams_at_exit: no work can be queued before it,
  // and the later the handler is registered, the earlier at exit it runs (before the destructors
  // of the program's statics built up to then).
  static std::shared_ptr<Stream> new_stream() {
    static const bool registered = std::atexit(drain_streams_at_exit) == 0;
    (void)registered;
    return std::make_shared<Stream>();
  }

  std::vector<std::shared_ptr<Stream>> all_streams() {
    std::vector<std::shared_ptr<Stream>> all;
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [handle, stream] : streams_) all.push_back(stream);
    if (default_stream_) all.push_back(default_stream_);
    return all;
  }

  // The stream of a handle (null: the default stream, made on first use), or null.
  friend std::shared_ptr<Stream> aclnn::find_stream(aclrtStream handle);
  std::shared_ptr<Stream> find_stream(aclrtStream handle) {
    std::lock_guard<std::mutex> lock(mu_);
    if (handle == nullptr) {
      if (!default_stream_) default_stream_ = new_stream();
      return default_stream_;
    }
    auto it = streams_.find(handle);
    return it == streams_.end() ? nullptr : it->second;
  }

  std::shared_ptr<HostEvent> find_event(aclrtEvent event) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = events_.find(event);
    return it == events_.end() ? nullptr : it->second;
  }

  // A block of `size` bytes recorded in table: one `freed` kept (aclrtMalloc: freed_blocks.hpp
  // says why), else a new one.
  aclError allocate(Allocations* table, FreedBlocks* freed, const char* fn, void** ptr,
                    size_t size) {
    if (size > SIZE_MAX - kDeviceAlignment)
      return rt_fail(ACL_ERROR_BAD_ALLOC,
                     std::string(fn) + ": size " + std::to_string(size) + " is too large");
    const size_t rounded = (size + kDeviceAlignment - 1) / kDeviceAlignment * kDeviceAlignment;
    HostBlock block;
    if (freed != nullptr) {
      std::lock_guard<std::mutex> lock(mu_);
      block = freed->take(rounded);
    }
    if (!block) block.reset(std::aligned_alloc(kDeviceAlignment, rounded));
    if (!block)
      return rt_fail(ACL_ERROR_BAD_ALLOC, std::string(fn) + ": out of memory allocating " +
                                              std::to_string(size) + " bytes");
    void* const p = block.get();
    std::lock_guard<std::mutex> lock(mu_);
    table->emplace(p, Allocation{std::move(block), rounded});  // freed if this throws
    *ptr = p;
    return ACL_SUCCESS;
  }

  aclError release(Allocations* table, FreedBlocks* freed, const char* fn, void* ptr) {
    std::vector<HostBlock> dropped;  // freed outside the lock
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = table->find(ptr);
      if (it == table->end())
        return rt_fail(ACL_ERROR_INVALID_PARAM, std::string(fn) + ": " + ptr_str(ptr) +
                                                    " was not allocated by it or is already freed");
      Allocation a = std::move(it->second);
      table->erase(it);
      if (freed != nullptr) {
        dropped = freed->keep(std::move(a.block), a.bytes);
      } else {
        dropped.push_back(std::move(a.block));
      }
    }
    return ACL_SUCCESS;
  }

  std::mutex mu_;
  Allocations device_memory_, host_memory_;
  FreedBlocks freed_device_memory_;
  std::unordered_map<void*, std::shared_ptr<Stream>> streams_;
  std::shared_ptr<Stream> default_stream_;
  std::unordered_map<void*, std::shared_ptr<HostEvent>> events_;
};

}  // namespace

DeviceRuntime& host_runtime() {
  static HostRuntime* const runtime = new HostRuntime;  // never destroyed (see the file comment)
  return *runtime;
}

std::shared_ptr<Stream> find_stream(aclrtStream handle) {
  return static_cast<HostRuntime&>(host_runtime()).find_stream(handle);
}

DeviceRuntime& device_runtime() {
  static DeviceRuntime& chosen = cuda_runtime() ? cuda_device_runtime() : host_runtime();
  return chosen;
}

}  // namespace kvflash::aclnn
