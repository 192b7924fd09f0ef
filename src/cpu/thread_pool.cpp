// The library's worker pool: threads are created on first need and kept until process exit. One
// pool run at a time (a mutex serialises concurrent callers); a run hands each participating
// worker a contiguous, static share of the tasks, so scheduling never depends on timing. Idle
// workers sleep on a condition variable, never spin.
#include "cpu/thread_pool.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "kvflash/status.hpp"

namespace kvflash::cpu {
namespace {

// Upper bound on workers per run: more than any machine kvflash targets, small enough that a
// mistaken huge request cannot exhaust the process's threads.
constexpr int kMaxThreads = 512;

std::atomic<int> g_num_threads{0};

// True while this thread executes tasks of a run: a nested parallel_for then runs inline instead of
// deadlocking on the run mutex.
thread_local bool t_in_run = false;

using TaskFn = std::function<void(int64_t, int)>;

// Worker w of num_workers runs tasks [begin, end): equal contiguous shares.
void run_share(const TaskFn& fn, int64_t num_tasks, int num_workers, int worker) {
  const int64_t begin = num_tasks * worker / num_workers;
  const int64_t end = num_tasks * (worker + 1) / num_workers;
  for (int64_t t = begin; t < end; ++t) fn(t, worker);
}

class Pool {
 public:
  Pool() = default;
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    wake_.notify_all();
    for (auto& t : threads_) t.join();
  }

  void run(int64_t num_tasks, int num_workers, const TaskFn& fn) {
    std::lock_guard<std::mutex> run_lock(run_mu_);
    grow(num_workers - 1);
    {
      std::lock_guard<std::mutex> lock(mu_);
      fn_ = &fn;
      num_tasks_ = num_tasks;
      num_workers_ = num_workers;
      pending_ = num_workers - 1;
      error_ = nullptr;
      ++generation_;
    }
    wake_.notify_all();
    execute(fn, num_tasks, num_workers, 0);
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [this] { return pending_ == 0; });
    fn_ = nullptr;
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  }

 private:
  // Called with run_mu_ held, before the run's generation is published.
  void grow(int workers) {
    std::lock_guard<std::mutex> lock(mu_);
    while (static_cast<int>(threads_.size()) < workers) {
      const int id = static_cast<int>(threads_.size()) + 1;
      threads_.emplace_back([this, id, seen = generation_] { loop(id, seen); });
    }
  }

  void loop(int id, uint64_t seen) {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      if (id >= num_workers_) continue;  // not part of this run
      const TaskFn& fn = *fn_;
      const int64_t num_tasks = num_tasks_;
      const int num_workers = num_workers_;
      lock.unlock();
      execute(fn, num_tasks, num_workers, id);
      lock.lock();
      if (--pending_ == 0) done_.notify_one();
    }
  }

  // Runs one worker's share; the first exception of a run is kept and rethrown to the caller.
  void execute(const TaskFn& fn, int64_t num_tasks, int num_workers, int worker) {
    t_in_run = true;
    try {
      run_share(fn, num_tasks, num_workers, worker);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu_);
      if (!error_) error_ = std::current_exception();
    }
    t_in_run = false;
  }

  std::mutex run_mu_;  // one run at a time
  std::mutex mu_;      // guards everything below
  std::condition_variable wake_;
  std::condition_variable done_;
  std::vector<std::thread> threads_;
  uint64_t generation_ = 0;
  const TaskFn* fn_ = nullptr;
  int64_t num_tasks_ = 0;
  int num_workers_ = 0;
  int pending_ = 0;
  std::exception_ptr error_;
  bool stop_ = false;
};

// A function-local static: created on first use, destroyed (threads joined) at exit.
Pool& pool() {
  static Pool instance;
  return instance;
}

}  // namespace

int default_num_threads() {
  const int n = g_num_threads.load(std::memory_order_relaxed);
  if (n > 0) return n;
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(std::min<unsigned>(hw, kMaxThreads));
}

void parallel_for(int64_t num_tasks, int num_threads, const TaskFn& fn) {
  if (num_tasks <= 0) return;
  int workers = num_threads > 0 ? num_threads : default_num_threads();
  workers = std::min(workers, kMaxThreads);
  if (workers > num_tasks) workers = static_cast<int>(num_tasks);
  if (workers <= 1 || t_in_run) {
    // Inline: a single worker, or a nested call from inside a task.
    const bool outer = t_in_run;
    t_in_run = true;
    try {
      run_share(fn, num_tasks, 1, 0);
    } catch (...) {
      t_in_run = outer;
      throw;
    }
    t_in_run = outer;
    return;
  }
  pool().run(num_tasks, workers, fn);
}

}  // namespace kvflash::cpu

namespace kvflash {

void set_num_threads(int n) { cpu::g_num_threads.store(n > 0 ? n : 0, std::memory_order_relaxed); }

int get_num_threads() { return cpu::default_num_threads(); }

}  // namespace kvflash
