#include "aclnn/stream.hpp"

#include <pthread.h>

#include <chrono>
#include <exception>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "cpu/thread_pool.hpp"

namespace kvflash::aclnn {

// Owed wake-ups. Waking a sleeping thread costs the waker several microseconds (a futex call, and
// on a virtual machine an interrupt to the sleeper's idle CPU: 11 us a launch measured on the
// 2-core Xeon, docs/perf-log.md), the time of a small kernel, and a CANN program pays it on every
// call for nothing: it launches, then calls aclrtSynchronizeStream, which runs the task itself
// when the worker has not started it. So while a stream is in use (kPollWindow after its last
// submit) its worker waits for work in timed waits of kOwedWakeBound, and a submit() that finds it
// so does not wake it but owes the wake-up: the next C entry point any thread calls pays it
// (pay_owed_wakes, from c_entry; aclrtSynchronizeStream pays all but its own stream's, whose queue
// it runs itself), or the worker finds the task at its next look. A queued task thus starts
// without a synchronize, as on a device, within kOwedWakeBound. A stream idle for longer has its
// worker in an untimed wait, which submit() ends at once. (Timed waits of 1 ms cost the kernels
// running on the other cores 5-10 % at 1k tokens on the 2-core Xeon; 5 ms did not.) The window is
// a second, not less: a model's decode step launches again after its other layers, and a launch
// that found the worker in its untimed wait took 48 us on the 2-core Xeon with cold caches,
// against 5 us when it owed the wake-up (100 ms windows missed the bench's cold 4k-token calls,
// docs/perf-log.md "Phase 1 and the idle stream's wake-up"); an idle stream's worker looks 200
// times in that second, then sleeps.
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kOwedWakeBound = std::chrono::milliseconds(5);
constexpr auto kPollWindow = std::chrono::seconds(1);

// The streams owed a wake-up (some of them paid since, by their worker or a synchronize).
struct OwedWakes {
  std::mutex mu;
  std::vector<std::weak_ptr<Stream>> streams;
};

std::atomic<size_t> g_owed_count{0};  // OwedWakes::streams.size(), for the lock-free test
// In a forked child the registry's mutex may be held by a thread that is gone: wake-ups are never
// owed there.
std::atomic<bool> g_forked_child{false};

// Never destroyed (a stream may submit during process teardown).
OwedWakes& owed_wakes() {
  static OwedWakes* const o = new OwedWakes;
  return *o;
}

void mark_forked_child() {
  g_forked_child.store(true, std::memory_order_relaxed);
  g_owed_count.store(0, std::memory_order_relaxed);
}

[[maybe_unused]] const bool kForkHandlerRegistered =
    pthread_atfork(nullptr, nullptr, &mark_forked_child) == 0;

void owe_wake(std::weak_ptr<Stream> s) {
  OwedWakes& o = owed_wakes();
  std::lock_guard<std::mutex> lock(o.mu);
  o.streams.push_back(std::move(s));
  g_owed_count.store(o.streams.size(), std::memory_order_release);
}

}  // namespace

void pay_owed_wakes(const Stream* except) {
  if (g_owed_count.load(std::memory_order_acquire) == 0) return;
  OwedWakes& o = owed_wakes();
  std::vector<std::shared_ptr<Stream>> due;
  {
    std::lock_guard<std::mutex> lock(o.mu);
    std::vector<std::weak_ptr<Stream>> kept;
    for (std::weak_ptr<Stream>& w : o.streams) {
      std::shared_ptr<Stream> s = w.lock();
      if (!s) continue;
      if (s.get() == except) {
        kept.push_back(std::move(w));
      } else {
        due.push_back(std::move(s));
      }
    }
    o.streams.swap(kept);
    g_owed_count.store(o.streams.size(), std::memory_order_release);
  }
  for (auto& s : due) s->pay_wake();
}

Stream::Stream() : worker_([this] { worker_loop(); }) {}

Stream::~Stream() { close(); }

bool Stream::submit(std::function<Status()> task) {
  bool owe = false, wake = false;
  std::weak_ptr<Stream> self = weak_from_this();  // empty when not owned by a shared_ptr
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closing_) return false;
    queue_.push_back(std::move(task));
    ++submitted_;
    last_submit_ = Clock::now();
    // A worker not waiting in work_cv_ looks at the queue before it waits again; one already owed
    // a wake-up needs no second.
    if (worker_waiting_ && !wake_owed_) {
      owe = worker_polls_ && !self.expired() && !g_forked_child.load(std::memory_order_relaxed);
      wake = !owe;
      wake_owed_ = owe;
    }
  }
  if (owe) owe_wake(std::move(self));
  if (wake) work_cv_.notify_one();
  return true;
}

void Stream::pay_wake() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!wake_owed_) return;
    wake_owed_ = false;
  }
  work_cv_.notify_one();
}

std::optional<Stream::Failure> Stream::synchronize() {
  std::unique_lock<std::mutex> lock(mu_);
  const uint64_t target = submitted_;
  const bool on_worker = std::this_thread::get_id() == worker_.get_id();
  while (completed_ < target && !on_worker) {
    if (!running_ && !queue_.empty()) {
      // The worker has not started the next task yet: this thread, which would only wait, runs
      // it (no wake-up of the worker on the way).
      run_front(lock);
      continue;
    }
    // The worker runs a task: this thread (and its core) joins the task's parallel loops instead
    // of sleeping (cpu::help_until says why this matters).
    lock.unlock();
    const bool helped = cpu::help_until(
        [this, target] { return completed_.load(std::memory_order_acquire) >= target; });
    lock.lock();
    if (!helped) break;
  }
  idle_cv_.wait(lock, [&] { return completed_ >= target; });
  if (queue_.empty()) wake_owed_ = false;  // this thread ran what the wake-up was owed for
  std::optional<Failure> failure = std::move(failure_);
  failure_.reset();
  return failure;
}

void Stream::wait_idle() {
  pay_wake();  // this thread only waits: the worker must run what is queued
  std::unique_lock<std::mutex> lock(mu_);
  const uint64_t target = submitted_;
  idle_cv_.wait(lock, [&] { return completed_ >= target; });
}

void Stream::close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closing_ = true;
    wake_owed_ = false;  // notified below
  }
  work_cv_.notify_all();
  if (worker_.joinable() && worker_.get_id() != std::this_thread::get_id()) worker_.join();
}

void Stream::worker_loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    worker_waiting_ = true;
    while (!closing_ && queue_.empty() && !running_) {
      worker_polls_ = Clock::now() - last_submit_ < kPollWindow;
      if (worker_polls_) {
        work_cv_.wait_for(lock, kOwedWakeBound);
      } else {
        work_cv_.wait(lock);
      }
    }
    worker_waiting_ = worker_polls_ = false;
    wake_owed_ = false;  // awake: nothing left to pay
    if (running_) {
      // A synchronize() took the task this thread was woken for: lend the thread to that task's
      // parallel loops rather than go back to sleep (it is awake on a core already).
      lock.unlock();
      const bool helped =
          cpu::help_until([this] { return !running_.load(std::memory_order_acquire); });
      lock.lock();
      if (!helped) {
        worker_awaits_end_ = true;
        work_cv_.wait(lock, [&] { return !running_; });
        worker_awaits_end_ = false;
      }
      continue;
    }
    if (queue_.empty()) return;  // closing and drained
    run_front(lock);
  }
}

void Stream::run_front(std::unique_lock<std::mutex>& lock) {
  std::function<Status()> task = std::move(queue_.front());
  queue_.pop_front();
  running_ = true;
  lock.unlock();
  Failure result;
  try {
    result.status = task();
    if (result.status != Status::kSuccess) result.message = last_error_message();
  } catch (const std::exception& e) {  // e.g. std::bad_alloc: never let it kill the process
    result.status = Status::kRuntime;
    try {
      result.message = std::string("stream task threw: ") + e.what();
    } catch (...) {  // no memory even for the message: report the status alone
    }
  } catch (...) {
    result.status = Status::kRuntime;
  }
  task = nullptr;  // release what the task captured before reporting completion
  lock.lock();
  running_ = false;
  if (result.status != Status::kSuccess && !failure_) failure_ = std::move(result);
  completed_.fetch_add(1, std::memory_order_release);
  idle_cv_.notify_all();
  // The worker may wait for the end of a task another thread ran. Otherwise it needs no wake-up
  // here: a task queued meanwhile owed it one already (submit), and a waiting worker woken now
  // would find nothing to do, at the price this file's comment is about.
  if (worker_awaits_end_) work_cv_.notify_one();
  lock.unlock();
  cpu::wake_helpers();  // a synchronize() lending its thread checks completed_ again
  lock.lock();
}

}  // namespace kvflash::aclnn
