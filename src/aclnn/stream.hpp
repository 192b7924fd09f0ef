// An in-order work queue served by one worker thread (and by threads that synchronize with it): the
// CPU stand-in for an Ascend stream.
// Work submitted to one stream runs in submission order; work on different streams may run
// concurrently. A failing task does not stop the ones after it (they are independent calls);
// the first failure since the last synchronize() is kept and reported by it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "kvflash/status.hpp"

namespace kvflash::aclnn {

class Stream {
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

  /// Queues task; false once close() has begun (the task is dropped).
  bool submit(std::function<Status()> task);
  /// Blocks until every task submitted before the call has finished. The calling thread works
  /// meanwhile instead of sleeping: it runs queued tasks the worker has not started (in order, one
  /// at a time, so the stream's order holds) and lends itself to the parallel loops of the task
  /// the worker runs (cpu::help_until). Returns the first failure since the previous
  /// synchronize() (and forgets it), or nullopt.
  std::optional<Failure> synchronize();
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
  std::thread worker_;
};

}  // namespace kvflash::aclnn
