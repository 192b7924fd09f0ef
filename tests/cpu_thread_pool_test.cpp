// The library thread pool: every task runs exactly once on a valid worker for any mix of task and
// thread counts, the participants running at once have distinct worker indices, concurrent callers
// run at the same time (not one after the other), nested calls and exceptions are handled, and a
// forked child gets a pool of its own, also when other threads were using the parent's pool (and
// held its lock) at the fork.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cpu/thread_pool.hpp"
#include "kvflash/status.hpp"
#include "support/sanitizer.hpp"

// ThreadSanitizer (clang 14) kills a forked child of a multithreaded process as soon as it starts a
// thread, unless die_after_fork=0; the child then runs with the sanitizer's checks off (the
// parent's side of the fork stays checked). The fork tests (ThreadPool.Fork*) need that child to
// start pool workers. __tsan_default_options is the runtime's hook for a program's default
// options; TSAN_OPTIONS still overrides them.
#if defined(__SANITIZE_THREAD__)
#define KVFLASH_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define KVFLASH_UNDER_TSAN 1
#endif
#endif
#ifdef KVFLASH_UNDER_TSAN
extern "C" const char* __tsan_default_options() { return "die_after_fork=0"; }
#endif

namespace kvflash::cpu {
namespace {

// Runs num_tasks tasks on num_threads and checks each ran once on a worker in range.
void expect_each_task_once(int64_t num_tasks, int num_threads) {
  std::unique_ptr<std::atomic<int>[]> runs(new std::atomic<int>[num_tasks > 0 ? num_tasks : 1]);
  for (int64_t i = 0; i < num_tasks; ++i) runs[i] = 0;
  std::atomic<int> bad_worker{0};
  const int64_t max_workers = std::min<int64_t>(num_threads, std::max<int64_t>(num_tasks, 1));
  parallel_for(num_tasks, num_threads, [&](int64_t task, int worker) {
    if (worker < 0 || worker >= max_workers) bad_worker.fetch_add(1);
    runs[task].fetch_add(1);
  });
  EXPECT_EQ(bad_worker.load(), 0) << num_tasks << " tasks, " << num_threads << " threads";
  for (int64_t i = 0; i < num_tasks; ++i) {
    ASSERT_EQ(runs[i].load(), 1) << "task " << i << " of " << num_tasks << ", " << num_threads
                                 << " threads";
  }
}

TEST(ThreadPool, EveryTaskOnceForManyShapes) {
  for (int64_t tasks : {0, 1, 2, 3, 7, 64, 1000}) {
    for (int threads : {1, 2, 3, 4, 8, 17, 64}) expect_each_task_once(tasks, threads);
  }
}

// The SFA kernel picks a scratch slot by worker index: two tasks running at once must never have
// the same index, and every index is below min(threads, tasks).
void expect_distinct_running_workers(int64_t num_tasks, int num_threads) {
  const int participants = static_cast<int>(std::min<int64_t>(num_threads, num_tasks));
  std::vector<std::atomic<int>> busy(participants);
  std::atomic<int> clashes{0}, out_of_range{0}, ran{0};
  parallel_for(num_tasks, num_threads, [&](int64_t, int worker) {
    if (worker < 0 || worker >= participants) {
      out_of_range.fetch_add(1);
      return;
    }
    if (busy[worker].exchange(1) != 0) clashes.fetch_add(1);
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    busy[worker].store(0);
    ran.fetch_add(1);
  });
  EXPECT_EQ(out_of_range.load(), 0) << num_tasks << " tasks, " << num_threads << " threads";
  EXPECT_EQ(clashes.load(), 0) << num_tasks << " tasks, " << num_threads << " threads";
  EXPECT_EQ(ran.load(), num_tasks);
}

TEST(ThreadPool, RunningWorkersHaveDistinctIndices) {
  expect_distinct_running_workers(5, 32);
  expect_distinct_running_workers(40, 4);
  expect_distinct_running_workers(64, 8);
}

TEST(ThreadPool, ConcurrentCallersHaveDistinctIndicesEach) {
  std::vector<std::thread> callers;
  for (int c = 0; c < 3; ++c) {
    callers.emplace_back([c] { expect_distinct_running_workers(30 + c, 3 + c); });
  }
  for (auto& t : callers) t.join();
}

// Tasks are claimed one at a time: a task that blocks holds up only its own participant, so the
// other one runs every remaining task (with static shares the blocked task's share would wait).
TEST(ThreadPool, BlockedTaskDoesNotHoldUpTheOthers) {
  constexpr int64_t kTasks = 100;
  std::atomic<int64_t> done{0};
  std::atomic<bool> timed_out{false};
  parallel_for(kTasks, 2, [&](int64_t task, int) {
    if (task == 0) {
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      while (done.load() < kTasks - 1) {
        if (std::chrono::steady_clock::now() > deadline) {
          timed_out = true;
          break;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
    }
    done.fetch_add(1);
  });
  EXPECT_FALSE(timed_out.load()) << "the other tasks waited for the blocked one";
  EXPECT_EQ(done.load(), kTasks);
}

// Two callers (e.g. two aclnn streams) run at the same time: call A's tasks wait until a task of
// call B has started. A pool that runs one call at a time would make A's tasks time out (the test
// then fails instead of hanging).
TEST(ThreadPool, TwoCallersRunAtTheSameTime) {
  std::mutex mu;
  std::condition_variable cv;
  bool a_started = false, b_started = false;
  std::atomic<int> a_timeouts{0}, b_timeouts{0};
  constexpr auto kTimeout = std::chrono::seconds(20);
  std::thread a([&] {
    parallel_for(4, 2, [&](int64_t, int) {
      std::unique_lock<std::mutex> lock(mu);
      a_started = true;
      cv.notify_all();
      if (!cv.wait_for(lock, kTimeout, [&] { return b_started; })) a_timeouts.fetch_add(1);
    });
  });
  std::thread b([&] {
    {
      std::unique_lock<std::mutex> lock(mu);
      if (!cv.wait_for(lock, kTimeout, [&] { return a_started; })) b_timeouts.fetch_add(1);
    }
    parallel_for(3, 2, [&](int64_t, int) {
      std::lock_guard<std::mutex> lock(mu);
      b_started = true;
      cv.notify_all();
    });
  });
  a.join();
  b.join();
  EXPECT_EQ(b_timeouts.load(), 0) << "call A never started";
  EXPECT_EQ(a_timeouts.load(), 0) << "call B did not start while call A was running";
}

TEST(ThreadPool, ThreadsRunInParallel) {
  // Two tasks that each wait for the other: completes only if they run on different threads.
  std::atomic<int> arrived{0};
  parallel_for(2, 2, [&](int64_t, int) {
    arrived.fetch_add(1);
    while (arrived.load() < 2) std::this_thread::yield();
  });
  EXPECT_EQ(arrived.load(), 2);
}

TEST(ThreadPool, WorkersAreNamed) {
  // `top -H` and `ps -L` show kvflash's workers by name (the Python tests count them by it).
  std::atomic<int> arrived{0};
  parallel_for(2, 2, [&](int64_t, int) {
    arrived.fetch_add(1);
    while (arrived.load() < 2) std::this_thread::yield();
  });
  int named = 0;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    if (std::getline(comm, name) && name == "kvflash-worker") ++named;
  }
  EXPECT_GE(named, 1);
}

// Runs a loop of `participants` tasks that wait for each other: it completes only once the caller
// and participants - 1 pool workers are all inside it, so each of those workers has finished
// starting up (false if they were not all there within 20 s).
bool run_with_every_worker_inside(int participants) {
  std::atomic<int> arrived{0};
  std::atomic<bool> timed_out{false};
  parallel_for(participants, participants, [&](int64_t, int) {
    arrived.fetch_add(1);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (arrived.load() < participants) {
      if (std::chrono::steady_clock::now() > deadline) {
        timed_out = true;
        break;
      }
      std::this_thread::yield();
    }
  });
  return !timed_out.load();
}

// Waits up to 10 s for a forked child; kills it if it has not exited by then.
::testing::AssertionResult child_exits_cleanly(pid_t child) {
  int status = 0;
  pid_t done = 0;
  for (int i = 0; i < 1000 && done == 0; ++i) {
    done = waitpid(child, &status, WNOHANG);
    if (done == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (done == 0) {
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
    return ::testing::AssertionFailure()
           << "the forked child's parallel loop did not finish in 10 s";
  }
  if (!WIFEXITED(status)) return ::testing::AssertionFailure() << "child status " << status;
  if (WEXITSTATUS(status) != 0) {
    return ::testing::AssertionFailure() << "child exit code " << WEXITSTATUS(status);
  }
  return ::testing::AssertionSuccess();
}

// In a forked child: a loop of two tasks that wait for each other (completes only on a worker the
// child started itself), then help_until and wake_helpers (both take the child's pool lock).
// Exits 0 if all of it worked.
[[noreturn]] void use_the_pool_in_child_and_exit() {
  std::atomic<int> arrived{0};
  parallel_for(2, 2, [&](int64_t, int) {
    arrived.fetch_add(1);
    while (arrived.load() < 2) std::this_thread::yield();
  });
  const bool helped = help_until([] { return true; });
  wake_helpers();
  _exit(arrived.load() == 2 && helped ? 0 : 1);
}

TEST(ThreadPool, ForkedChildGetsAPoolOfItsOwn) {
  // The pool's workers are started here; the child has none of them, and its loop completes only
  // if the child starts workers of its own. In the release build the fork follows at once, while
  // the new workers may still be starting up. clang 14's AddressSanitizer does not lock its
  // allocator around fork (LLVM 18's runtime does: llvm/llvm-project pull request 75290), so a
  // worker inside the runtime's thread start-up at that moment (it allocates and frees there) can
  // leave an allocator lock held in the child, whose next thread then blocks on it forever. A
  // program without kvflash hangs the same way (docs/testing.md, "Fork under ASan"). Under ASan
  // the parent therefore forks only once its workers are past their start-up.
  parallel_for(8, 4, [](int64_t, int) {});
  if (kvflash::testing::kAddressSanitizer) {
    ASSERT_TRUE(run_with_every_worker_inside(4));
  }
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) use_the_pool_in_child_and_exit();
  EXPECT_TRUE(child_exits_cleanly(child));
}

// What a program that forks (multiprocessing, DataLoader workers, gunicorn) may have going on at
// that moment: another thread inside a parallel loop with pool workers, and a thread lent with
// help_until (as aclrtSynchronizeStream does) that holds the pool's lock at the fork (its done()
// runs under that lock; here it stays there until the fork is over). The child has none of these
// threads and a pool lock that nobody will release: it must get a pool of its own, and the parent's
// pool must go on working.
TEST(ThreadPool, ForkWhileOtherThreadsUseThePool) {
  constexpr int kParticipants = 3;
  std::atomic<int> in_task{0};
  std::atomic<bool> release{false};
  std::thread caller([&] {
    parallel_for(kParticipants, kParticipants, [&](int64_t, int) {
      in_task.fetch_add(1);
      while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
  });
  // Every participant of the caller's loop is inside a task: its workers are past their start-up
  // (see ForkedChildGetsAPoolOfItsOwn on ASan), and its slots are all taken, so the lent thread
  // below waits rather than joining it.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (in_task.load() < kParticipants && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (in_task.load() < kParticipants) {
    release = true;
    caller.join();
    FAIL() << "the caller's loop did not get its workers in 20 s";
  }

  std::atomic<bool> holding_lock{false}, forked{false}, lent_done{false};
  std::thread lent([&] {
    help_until([&] {
      if (!forked.load()) {
        holding_lock = true;  // called with the pool's lock held
        while (!forked.load()) std::this_thread::yield();
      }
      return lent_done.load();
    });
  });
  while (!holding_lock.load()) std::this_thread::yield();

  const pid_t child = fork();
  if (child == 0) use_the_pool_in_child_and_exit();
  forked = true;
  release = true;
  caller.join();
  lent_done = true;
  wake_helpers();
  lent.join();
  ASSERT_GE(child, 0);
  EXPECT_TRUE(child_exits_cleanly(child));
  expect_each_task_once(100, 4);  // the parent's pool still works
}

TEST(ThreadPool, ConcurrentCallers) {
  constexpr int kCallers = 4;
  constexpr int kRounds = 40;
  std::atomic<int> failures{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; ++c) {
    callers.emplace_back([&, c] {
      for (int r = 0; r < kRounds; ++r) {
        const int64_t n = 1 + (c * 37 + r * 11) % 97;
        std::vector<std::atomic<int>> runs(n);
        parallel_for(n, 1 + (c + r) % 6, [&](int64_t t, int) { runs[t].fetch_add(1); });
        for (auto& x : runs) {
          if (x.load() != 1) failures.fetch_add(1);
        }
      }
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(ThreadPool, NestedCallRunsInline) {
  std::atomic<int> inner{0};
  parallel_for(4, 4, [&](int64_t, int) {
    parallel_for(3, 4, [&](int64_t, int worker) {
      EXPECT_EQ(worker, 0);
      inner.fetch_add(1);
    });
  });
  EXPECT_EQ(inner.load(), 12);
}

TEST(ThreadPool, ExceptionReachesCallerAndPoolStaysUsable) {
  EXPECT_THROW(parallel_for(8, 4,
                            [](int64_t t, int) {
                              if (t == 5) throw std::runtime_error("task failed");
                            }),
               std::runtime_error);
  expect_each_task_once(100, 4);
}

TEST(ThreadPool, ExceptionOnAPoolWorkerReachesTheCaller) {
  // Every task throws, whichever participant runs it.
  for (int rep = 0; rep < 20; ++rep) {
    EXPECT_THROW(parallel_for(64, 4, [](int64_t, int) { throw std::logic_error("each fails"); }),
                 std::logic_error);
  }
  // A nested call's exception leaves through the outer task to the outer caller.
  EXPECT_THROW(parallel_for(4, 2,
                            [](int64_t, int) {
                              parallel_for(3, 2, [](int64_t t, int) {
                                if (t == 2) throw std::out_of_range("inner");
                              });
                            }),
               std::out_of_range);
  expect_each_task_once(50, 3);
}

TEST(ThreadPool, DefaultThreadCount) {
  const int hw = static_cast<int>(std::thread::hardware_concurrency());
  set_num_threads(0);
  EXPECT_EQ(default_num_threads(), hw > 0 ? hw : 1);
  EXPECT_EQ(get_num_threads(), default_num_threads());
  set_num_threads(3);
  EXPECT_EQ(default_num_threads(), 3);
  EXPECT_EQ(get_num_threads(), 3);
  std::atomic<int> max_worker{0};
  parallel_for(100, 0, [&](int64_t, int w) {
    int m = max_worker.load();
    while (w > m && !max_worker.compare_exchange_weak(m, w)) {
    }
  });
  EXPECT_LE(max_worker.load(), 2);  // 3 participants: 0, 1, 2 (the pool workers may join late)
  set_num_threads(-5);              // negative: back to the hardware default
  EXPECT_EQ(default_num_threads(), hw > 0 ? hw : 1);
  set_num_threads(0);
}

// A thread lent with help_until takes part in another thread's call (the pool hands it a slot
// before waking a worker), and returns once its condition holds; inside a task it is refused.
TEST(ThreadPool, LentThreadJoinsOtherCallsUntilDone) {
  std::atomic<bool> done{false};
  std::atomic<bool> lent_ran{false};
  std::thread::id lent_id;
  std::atomic<bool> started{false};
  std::thread lent([&] {
    lent_id = std::this_thread::get_id();
    started = true;
    EXPECT_TRUE(help_until([&] { return done.load(); }));
  });
  while (!started) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // let it reach help_until
  for (int round = 0; round < 20 && !lent_ran; ++round) {
    parallel_for(64, 2, [&](int64_t, int) {
      if (std::this_thread::get_id() == lent_id) lent_ran = true;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    });
  }
  EXPECT_TRUE(lent_ran) << "the lent thread never ran a task";
  done = true;
  wake_helpers();
  lent.join();
  parallel_for(4, 2, [&](int64_t, int) {
    EXPECT_FALSE(help_until([] { return true; }));  // from inside a task: refused
  });
}

}  // namespace
}  // namespace kvflash::cpu
