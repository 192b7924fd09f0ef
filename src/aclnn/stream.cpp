#include "aclnn/stream.hpp"

#include <exception>
#include <utility>

#include "cpu/thread_pool.hpp"

namespace kvflash::aclnn {

Stream::Stream() : worker_([this] { worker_loop(); }) {}

Stream::~Stream() { close(); }

bool Stream::submit(std::function<Status()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closing_) return false;
    queue_.push_back(std::move(task));
    ++submitted_;
  }
  work_cv_.notify_one();
  return true;
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
  std::optional<Failure> failure = std::move(failure_);
  failure_.reset();
  return failure;
}

void Stream::wait_idle() {
  std::unique_lock<std::mutex> lock(mu_);
  const uint64_t target = submitted_;
  idle_cv_.wait(lock, [&] { return completed_ >= target; });
}

void Stream::close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closing_ = true;
  }
  work_cv_.notify_all();
  if (worker_.joinable() && worker_.get_id() != std::this_thread::get_id()) worker_.join();
}

void Stream::worker_loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [&] { return closing_ || !queue_.empty() || running_; });
    if (running_) {
      // A synchronize() took the task this thread was woken for: lend the thread to that task's
      // parallel loops rather than go back to sleep (it is awake on a core already).
      lock.unlock();
      const bool helped =
          cpu::help_until([this] { return !running_.load(std::memory_order_acquire); });
      lock.lock();
      if (!helped) work_cv_.wait(lock, [&] { return !running_; });
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
  work_cv_.notify_one();  // the worker waits while another thread runs a task
  lock.unlock();
  cpu::wake_helpers();  // a synchronize() lending its thread checks completed_ again
  lock.lock();
}

}  // namespace kvflash::aclnn
