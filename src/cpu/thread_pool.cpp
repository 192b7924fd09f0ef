// The library's worker pool, or the host framework's threads when a ParallelBackend is installed.
//
// Each parallel_for call is a Job on the caller's stack: an atomic next-task counter from which
// its participants claim tasks one at a time. The caller is participant 0 and works on its own
// job; pool workers join active jobs (the one with the fewest workers first) and take the next
// participant index, so the indices of a job's participants are distinct and below its P. Several
// callers' jobs run at once and share the workers. The caller returns when every task is claimed
// and no worker is still inside its job. Idle workers sleep on a condition variable, never spin.
//
// Lifetime: the pool is created on first use and never destroyed (its threads stay blocked until
// the process ends), so a kernel may call parallel_for at any point of process teardown, e.g. from
// an aclnn stream draining its queue after main has returned.
//
// fork: the child of a process whose pool has started holds only the forking thread, so none of
// the pool's workers, and the pool's mutex in whatever state another thread left it. A handler
// registered with pthread_atfork drops the pool in the child (abandoned, never destroyed: its
// mutex may be held), which starts a new one on its first parallel loop.
#include "cpu/thread_pool.hpp"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "kvflash/parallel.hpp"
#include "kvflash/status.hpp"

namespace kvflash::cpu {
namespace {

// Upper bound on participants per call: more than any machine kvflash targets, small enough that
// a mistaken huge request cannot exhaust the process's threads.
constexpr int kMaxThreads = 512;

std::atomic<int> g_num_threads{0};
// The installed backend (an immortal copy, see set_parallel_backend), or nullptr for the pool.
std::atomic<const ParallelBackend*> g_backend{nullptr};

// True while this thread executes tasks of a call: a nested parallel_for then runs inline.
thread_local bool t_in_run = false;

using TaskFn = std::function<void(int64_t, int)>;

// One parallel_for call.
struct Job {
  Job(const TaskFn& f, int64_t n, int p) : fn(f), num_tasks(n), participants(p) {}
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  const TaskFn& fn;
  const int64_t num_tasks;
  const int participants;  // P: participant indices are in [0, P)
  std::atomic<int64_t> next_task{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;  // written once, by the participant that set `failed`

  // Pool bookkeeping, guarded by Pool::mu_.
  int joined = 1;   // participant indices handed out (the caller holds 0)
  int running = 0;  // pool workers inside the job
  Job* prev = nullptr;
  Job* next = nullptr;
  std::condition_variable left;  // signalled when running drops to 0

  bool claimable() const {
    return joined < participants && next_task.load(std::memory_order_relaxed) < num_tasks;
  }
};

// Runs tasks claimed from job as participant `index` until none is left. The first exception of a
// job is kept for its caller, and the tasks not yet claimed are skipped.
void participate(Job& job, int index) noexcept {
  const bool outer = t_in_run;
  t_in_run = true;
  try {
    for (;;) {
      const int64_t task = job.next_task.fetch_add(1, std::memory_order_relaxed);
      if (task >= job.num_tasks) break;
      job.fn(task, index);
    }
  } catch (...) {
    if (!job.failed.exchange(true, std::memory_order_relaxed)) job.error = std::current_exception();
    job.next_task.store(job.num_tasks, std::memory_order_relaxed);
  }
  t_in_run = outer;
}

class Pool {
 public:
  // Runs job with the caller as participant 0; returns when no participant is left inside it.
  void run(Job& job) {
    int lent = 0, wake = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      grow(job.participants - 1);
      link(&job);
      // Lent threads (help_until) first: each already holds a core of its own, where a sleeping
      // worker woken from here can be queued behind this thread on this one (see help_until).
      lent = std::min(job.participants - 1, help_idle_);
      wake = std::min(job.participants - 1 - lent, idle_);
    }
    if (lent > 0) help_cv_.notify_all();
    for (int i = 0; i < wake; ++i) wake_.notify_one();
    participate(job, 0);
    std::unique_lock<std::mutex> lock(mu_);
    unlink(&job);  // every task is claimed: no worker may join any more
    job.left.wait(lock, [&] { return job.running == 0; });
  }

 private:
  // Called with mu_ held. A thread that cannot be started is not an error: the caller and the
  // workers there are claim every task anyway.
  void grow(int workers) {
    workers = std::min(workers, kMaxThreads - 1);
    while (static_cast<int>(threads_.size()) < workers) {
      try {
        threads_.emplace_back([this] { loop(); });
      } catch (const std::exception&) {
        break;
      }
    }
  }

  void loop() {
    // Named so that `top -H` / `ps -L` (and the Python tests) can tell kvflash's workers apart.
    pthread_setname_np(pthread_self(), "kvflash-worker");
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      Job* job = nullptr;
      ++idle_;
      wake_.wait(lock, [&] { return (job = pick()) != nullptr; });
      --idle_;
      const int index = job->joined++;
      ++job->running;
      lock.unlock();
      participate(*job, index);
      lock.lock();
      // Notified under mu_: once the caller sees running == 0 it may return and free the job.
      if (--job->running == 0) job->left.notify_one();
    }
  }

  // help_until: the caller joins claimable jobs until done() holds (see thread_pool.hpp).
 public:
  void help(const std::function<bool()>& done) {
    std::unique_lock<std::mutex> lock(mu_);
    ++helpers_;
    for (;;) {
      Job* job = nullptr;
      ++help_idle_;
      help_cv_.wait(lock, [&] { return done() || (job = pick()) != nullptr; });
      --help_idle_;
      if (job == nullptr) break;
      const int index = job->joined++;
      ++job->running;
      lock.unlock();
      participate(*job, index);
      lock.lock();
      if (--job->running == 0) job->left.notify_one();
    }
    --helpers_;
    // A job posted as this helper finished counted on it: a worker takes its place.
    if (pick() != nullptr) wake_.notify_one();
  }

  void wake_helpers() {
    std::lock_guard<std::mutex> lock(mu_);
    if (helpers_ > 0) help_cv_.notify_all();
  }

 private:
  // The claimable job with the fewest workers (the oldest among equals), or nullptr.
  Job* pick() const {
    Job* best = nullptr;
    for (Job* j = head_; j != nullptr; j = j->next) {
      if (j->claimable() && (best == nullptr || j->running < best->running)) best = j;
    }
    return best;
  }

  void link(Job* job) {
    job->prev = tail_;
    (tail_ ? tail_->next : head_) = job;
    tail_ = job;
  }

  void unlink(Job* job) {
    (job->prev ? job->prev->next : head_) = job->next;
    (job->next ? job->next->prev : tail_) = job->prev;
    job->prev = job->next = nullptr;
  }

  std::mutex mu_;  // guards everything below and the bookkeeping fields of linked jobs
  std::condition_variable wake_;
  std::vector<std::thread> threads_;
  std::condition_variable help_cv_;  // lent threads (help) wait here
  int idle_ = 0;       // workers waiting on wake_
  int helpers_ = 0;    // threads inside help()
  int help_idle_ = 0;  // of them, waiting on help_cv_
  Job* head_ = nullptr;
  Job* tail_ = nullptr;
};

// The pool: created on first use and never destroyed; dropped in a forked child (see the file
// comment).
std::atomic<Pool*> g_pool{nullptr};

void forget_pool_in_child() { g_pool.store(nullptr, std::memory_order_relaxed); }

[[maybe_unused]] const bool kForkHandlerRegistered =
    pthread_atfork(nullptr, nullptr, &forget_pool_in_child) == 0;

Pool& pool() {
  Pool* p = g_pool.load(std::memory_order_acquire);
  if (p == nullptr) {
    auto* made = new Pool;
    if (g_pool.compare_exchange_strong(p, made, std::memory_order_acq_rel)) {
      p = made;
    } else {
      delete made;  // another thread's pool won (p holds it)
    }
  }
  return *p;
}

// The ParallelBackend side: one body call is one participant, numbered by its range's begin.
void backend_body(void* ctx, int64_t begin, int64_t end) {
  Job& job = *static_cast<Job*>(ctx);
  if (begin >= end) return;
  if (begin < 0 || begin >= job.participants) {
    if (!job.failed.exchange(true, std::memory_order_relaxed)) {
      job.error = std::make_exception_ptr(
          std::out_of_range("kvflash: the parallel backend ran a range outside [0, n)"));
    }
    return;
  }
  participate(job, static_cast<int>(begin));
}

void run_on_backend(const ParallelBackend& backend, Job& job) {
  backend.parallel_for(backend.user, job.participants, &job, &backend_body);
  // Whatever the backend left unrun: every body has returned, so index 0 is free.
  if (!job.failed.load(std::memory_order_relaxed)) participate(job, 0);
}

}  // namespace

bool help_until(const std::function<bool()>& done) {
  if (t_in_run || g_backend.load(std::memory_order_acquire) != nullptr) return false;
  pool().help(done);
  return true;
}

void wake_helpers() { pool().wake_helpers(); }

int default_num_threads() {
  const int n = g_num_threads.load(std::memory_order_relaxed);
  if (n > 0) return std::min(n, kMaxThreads);
  if (const ParallelBackend* b = g_backend.load(std::memory_order_acquire)) {
    return std::clamp(b->max_threads(b->user), 1, kMaxThreads);
  }
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(std::min<unsigned>(hw, kMaxThreads));
}

void parallel_for(int64_t num_tasks, int num_threads, const TaskFn& fn) {
  if (num_tasks <= 0) return;
  if (t_in_run) {
    // A nested call from inside a task runs inline, as its only participant (index 0).
    Job job(fn, num_tasks, 1);
    participate(job, 0);
    if (job.error) std::rethrow_exception(job.error);
    return;
  }
  const ParallelBackend* backend = g_backend.load(std::memory_order_acquire);
  int participants = num_threads > 0 ? std::min(num_threads, kMaxThreads) : default_num_threads();
  if (participants > num_tasks) participants = static_cast<int>(num_tasks);
  Job job(fn, num_tasks, participants);
  if (participants <= 1) {
    participate(job, 0);
  } else if (backend != nullptr) {
    run_on_backend(*backend, job);
  } else {
    pool().run(job);
  }
  if (job.error) std::rethrow_exception(job.error);
}

}  // namespace kvflash::cpu

namespace kvflash {

void set_num_threads(int n) { cpu::g_num_threads.store(n > 0 ? n : 0, std::memory_order_relaxed); }

int get_num_threads() { return cpu::default_num_threads(); }

Status set_parallel_backend(const ParallelBackend* backend) {
  if (backend == nullptr) {
    cpu::g_backend.store(nullptr, std::memory_order_release);
    return Status::kSuccess;
  }
  if (backend->max_threads == nullptr || backend->parallel_for == nullptr) {
    return core::fail(Status::kNullPtr, "set_parallel_backend",
                      "max_threads and parallel_for must not be null");
  }
  // Installed copies are never freed, so a loop that loaded the previous one may still use it;
  // an identical backend reuses its copy, so switching back and forth does not grow the list.
  static std::mutex mu;
  static auto* const copies = new std::vector<const ParallelBackend*>;
  std::lock_guard<std::mutex> lock(mu);
  const ParallelBackend* copy = nullptr;
  for (const ParallelBackend* c : *copies) {
    if (c->user == backend->user && c->max_threads == backend->max_threads &&
        c->parallel_for == backend->parallel_for) {
      copy = c;
    }
  }
  if (copy == nullptr) {
    copy = new ParallelBackend(*backend);
    copies->push_back(copy);
  }
  cpu::g_backend.store(copy, std::memory_order_release);
  return Status::kSuccess;
}

}  // namespace kvflash
