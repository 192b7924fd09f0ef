// The library thread pool: every task runs exactly once on a valid worker for any mix of task and
// thread counts, concurrent callers do not interfere, nested calls and exceptions are handled.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "cpu/thread_pool.hpp"
#include "kvflash/status.hpp"

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

TEST(ThreadPool, MoreThreadsThanTasksUsesDistinctWorkers) {
  std::vector<std::atomic<int>> by_worker(5);
  parallel_for(5, 32, [&](int64_t, int worker) { by_worker[worker].fetch_add(1); });
  // Static shares: with 5 workers for 5 tasks each worker runs exactly one.
  for (auto& n : by_worker) EXPECT_EQ(n.load(), 1);
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
  EXPECT_EQ(max_worker.load(), 2);  // 3 workers: 0, 1, 2
  set_num_threads(-5);              // negative: back to the hardware default
  EXPECT_EQ(default_num_threads(), hw > 0 ? hw : 1);
  set_num_threads(0);
}

}  // namespace
}  // namespace kvflash::cpu
