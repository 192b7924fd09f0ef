// An in-order work queue served by one worker thread (and by threads that synchronize with it): the
// CPU stand-in for an Ascend stream.
// Work submitted to one stream runs in submission order; work on different streams may run
// concurrently. A failing task does not stop the ones after it (they are independent calls);
// the first failure since the last synchronize() is kept and reported by it.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "kvflash/status.hpp"

namespace kvflash::aclnn {

class Stream : public std::enable_shared_from_this<Stream> {
 public:
  struct Failure {
    Status status = Status::kSuccess;
    std::string message;
  };

  Stream();
  /// Drains the queue and joins the worker.
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  /// Queues task; false once close() has begun (the task is dropped). The worker, when asleep,
  /// is woken later if it can be (a wake-up owed: pay_owed_wakes), not here: see stream.cpp.
  bool submit(std::function<Status()> task);
  /// Blocks until every task submitted before the call has finished. The calling thread works
  /// meanwhile instead of sleeping: it runs queued tasks the worker has not started (in order, one
  /// at a time, so the stream's order holds) and lends itself to the parallel loops of the task
  /// the worker runs (cpu::help_until). Returns the first failure since the previous
  /// synchronize() (and forgets it), or nullopt.
  std::optional<Failure> synchronize();
  /// Wakes the worker if a submit() owed it a wake-up that nothing has paid yet.
  void pay_wake();
  /// Blocks like synchronize() but keeps any failure for the next synchronize().
  void wait_idle();
  /// Refuses further work, runs what is queued, joins the worker. Idempotent.
  void close();

 private:
  void worker_loop();
  /// Runs the task at the front of the queue on this thread and records its completion; mu_ is
  /// held (through `lock`) on entry and on return, released while the task runs.
  void run_front(std::unique_lock<std::mutex>& lock);

  std::mutex mu_;
  std::condition_variable work_cv_;  // worker waits for tasks or closing_
  std::condition_variable idle_cv_;  // synchronize() waits for completed_ to catch up
  std::deque<std::function<Status()>> queue_;
  uint64_t submitted_ = 0;
  // Written under mu_; atomic so that a synchronize() lending its thread to the kernels' pool
  // (cpu::help_until) can test it without mu_.
  std::atomic<uint64_t> completed_{0};
  bool closing_ = false;
  // A task is running (on the worker or in a synchronize()). Written under mu_; atomic for the
  // worker's help_until test, as completed_.
  std::atomic<bool> running_{false};
  std::optional<Failure> failure_;
  // The worker waits for work in work_cv_ (only then can a submit owe it a wake-up). Guarded by
  // mu_.
  bool worker_waiting_ = false;
  // Of which in timed waits (the stream was used lately): a submit() then owes the wake-up instead
  // of paying it (stream.cpp). Guarded by mu_.
  bool worker_polls_ = false;
  // When the last task was submitted. Guarded by mu_.
  std::chrono::steady_clock::time_point last_submit_;
  // The worker waits in work_cv_ for the end of a task a synchronize() runs. Guarded by mu_.
  bool worker_awaits_end_ = false;
  // A submit() found the worker waiting and did not wake it (stream.cpp says when); cleared when
  // the wake-up is paid, or when a synchronize() has run what was queued. Guarded by mu_.
  bool wake_owed_ = false;
  std::thread worker_;
};

/// Pays the wake-ups that submit() owes to stream workers (all streams but `except`): called at
/// the start of every C entry point (c_entry), so a task queued by a launch starts at the
/// program's next runtime call, or within 5 ms when it makes none (the worker looks by itself,
/// stream.cpp). Cheap when nothing is owed (one atomic load).
void pay_owed_wakes(const Stream* except = nullptr);

}  // namespace kvflash::aclnn
