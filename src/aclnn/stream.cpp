#include "aclnn/stream.hpp"

#include <exception>
#include <utility>

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
    work_cv_.wait(lock, [&] { return closing_ || !queue_.empty(); });
    if (queue_.empty()) return;  // closing and drained
    std::function<Status()> task = std::move(queue_.front());
    queue_.pop_front();
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
    if (result.status != Status::kSuccess && !failure_) failure_ = std::move(result);
    ++completed_;
    idle_cv_.notify_all();
  }
}

}  // namespace kvflash::aclnn
