// kvflash::set_parallel_backend (include/kvflash/parallel.hpp): with a host framework's parallel
// loop installed, every task still runs once, on a participant index below P that no other running
// participant holds; num_threads 0 means the backend's max_threads (or set_num_threads); exceptions
// never cross the C-style body; nested loops stay inline; real IFA and SFA runs give the same bits
// as on the library's pool.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "cpu/thread_pool.hpp"
#include "kvflash/parallel.hpp"
#include "kvflash/sfa.hpp"
#include "support/ifa_cases.hpp"
#include "support/ifa_run.hpp"
#include "support/sfa_cases.hpp"

namespace kvflash::testing {
namespace {

using Body = void (*)(void* ctx, int64_t begin, int64_t end);

// Counts the loops it is given and the n of the last one.
struct CountingBackend {
  int max = 4;
  std::atomic<int64_t> calls{0};
  std::atomic<int64_t> last_n{0};

  static int max_threads(void* user) { return static_cast<CountingBackend*>(user)->max; }
  void count(int64_t n) {
    calls.fetch_add(1);
    last_n.store(n);
  }
};

// Runs uneven ranges (sizes 1, 2, 1, 2, ...) each on a std::thread of its own.
struct ThreadBackend : CountingBackend {
  static void parallel_for(void* user, int64_t n, void* ctx, Body body) {
    static_cast<ThreadBackend*>(user)->count(n);
    std::vector<std::thread> threads;
    for (int64_t begin = 0, k = 0; begin < n; ++k) {
      const int64_t end = std::min(n, begin + 1 + k % 2);
      threads.emplace_back([=] { body(ctx, begin, end); });
      begin = end;
    }
    for (auto& t : threads) t.join();
  }
  ParallelBackend table() { return {this, &max_threads, &parallel_for}; }
};

// Runs all of [0, n) as one range on the calling thread.
struct SerialBackend : CountingBackend {
  static void parallel_for(void* user, int64_t n, void* ctx, Body body) {
    static_cast<SerialBackend*>(user)->count(n);
    body(ctx, 0, n);
  }
  ParallelBackend table() { return {this, &max_threads, &parallel_for}; }
};

// Runs nothing (breaks the contract): kvflash must still run every task, on the caller.
struct IdleBackend : CountingBackend {
  static void parallel_for(void* user, int64_t n, void*, Body) {
    static_cast<IdleBackend*>(user)->count(n);
  }
  ParallelBackend table() { return {this, &max_threads, &parallel_for}; }
};

// Installs a backend for the scope, then restores the library pool.
class ScopedBackend {
 public:
  explicit ScopedBackend(const ParallelBackend& b) {
    EXPECT_EQ(set_parallel_backend(&b), Status::kSuccess);
  }
  ~ScopedBackend() { set_parallel_backend(nullptr); }
  ScopedBackend(const ScopedBackend&) = delete;
  ScopedBackend& operator=(const ScopedBackend&) = delete;
};

// Every task once; every worker index below P; no two running tasks with the same index.
void expect_tasks_once(int64_t num_tasks, int num_threads, int participants) {
  std::unique_ptr<std::atomic<int>[]> runs(new std::atomic<int>[num_tasks]);
  for (int64_t i = 0; i < num_tasks; ++i) runs[i] = 0;
  std::vector<std::atomic<int>> busy(participants);
  std::atomic<int> bad{0}, clash{0};
  cpu::parallel_for(num_tasks, num_threads, [&](int64_t task, int worker) {
    if (worker < 0 || worker >= participants) {
      bad.fetch_add(1);
    } else if (busy[worker].exchange(1) != 0) {
      clash.fetch_add(1);
    }
    if (task % 7 == 0) std::this_thread::sleep_for(std::chrono::microseconds(50));
    runs[task].fetch_add(1);
    if (worker >= 0 && worker < participants) busy[worker].store(0);
  });
  EXPECT_EQ(bad.load(), 0) << num_tasks << " tasks, " << num_threads << " threads";
  EXPECT_EQ(clash.load(), 0) << num_tasks << " tasks, " << num_threads << " threads";
  for (int64_t i = 0; i < num_tasks; ++i) {
    ASSERT_EQ(runs[i].load(), 1) << "task " << i << " of " << num_tasks;
  }
}

template <typename Backend>
void expect_backend_runs_every_task_once() {
  Backend backend;
  const ParallelBackend table = backend.table();
  ScopedBackend scoped(table);
  for (int64_t tasks : {1, 2, 7, 64, 1000}) {
    for (int threads : {0, 1, 2, 3, 8}) {
      const int p = static_cast<int>(std::min<int64_t>(threads > 0 ? threads : backend.max, tasks));
      const int64_t calls = backend.calls.load();
      expect_tasks_once(tasks, threads, p);
      if (p > 1) {
        EXPECT_EQ(backend.calls.load(), calls + 1) << tasks << " tasks, " << threads << " threads";
        EXPECT_EQ(backend.last_n.load(), p) << tasks << " tasks, " << threads << " threads";
      } else {
        EXPECT_EQ(backend.calls.load(), calls) << "a one-participant loop runs inline";
      }
    }
  }
}

TEST(ParallelBackend, ThreadBackendRunsEveryTaskOnce) {
  expect_backend_runs_every_task_once<ThreadBackend>();
}

TEST(ParallelBackend, SerialBackendRunsEveryTaskOnce) {
  expect_backend_runs_every_task_once<SerialBackend>();
}

TEST(ParallelBackend, TasksABackendLeavesUnrunRunOnTheCaller) {
  expect_backend_runs_every_task_once<IdleBackend>();
}

TEST(ParallelBackend, ConcurrentCallersShareTheBackend) {
  ThreadBackend backend;
  const ParallelBackend table = backend.table();
  ScopedBackend scoped(table);
  std::vector<std::thread> callers;
  for (int c = 0; c < 3; ++c) {
    callers.emplace_back([c] {
      for (int r = 0; r < 10; ++r)
        expect_tasks_once(20 + 13 * c + r, 2 + (c + r) % 4, 2 + (c + r) % 4);
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(backend.calls.load(), 30);
}

TEST(ParallelBackend, NumThreadsFollowBackendAndSetNumThreads) {
  const int hw = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  set_num_threads(0);
  ThreadBackend backend;
  backend.max = 5;
  {
    const ParallelBackend table = backend.table();
    ScopedBackend scoped(table);
    EXPECT_EQ(get_num_threads(), 5);
    EXPECT_EQ(cpu::default_num_threads(), 5);
    cpu::parallel_for(100, 0, [](int64_t, int) {});
    EXPECT_EQ(backend.last_n.load(), 5);
    backend.max = 0;  // below 1 counts as 1: inline, the backend is not called
    EXPECT_EQ(get_num_threads(), 1);
    backend.max = 3;
    set_num_threads(2);  // an explicit count wins over the backend's
    EXPECT_EQ(get_num_threads(), 2);
    cpu::parallel_for(100, 0, [](int64_t, int) {});
    EXPECT_EQ(backend.last_n.load(), 2);
    cpu::parallel_for(100, 7, [](int64_t, int) {});  // and a call's own count wins over both
    EXPECT_EQ(backend.last_n.load(), 7);
    set_num_threads(0);
    EXPECT_EQ(get_num_threads(), 3);
  }
  EXPECT_EQ(get_num_threads(), hw);  // the library pool again
  set_num_threads(3);
  EXPECT_EQ(get_num_threads(), 3);
  set_num_threads(0);
}

TEST(ParallelBackend, ExceptionsReachTheCallerNotTheBackend) {
  // A task exception escaping a std::thread of ThreadBackend would terminate the test.
  ThreadBackend threads;
  SerialBackend serial;
  for (const ParallelBackend table : {threads.table(), serial.table()}) {
    ScopedBackend scoped(table);
    EXPECT_THROW(cpu::parallel_for(40, 4,
                                   [](int64_t t, int) {
                                     if (t % 5 == 3) throw std::runtime_error("task failed");
                                   }),
                 std::runtime_error);
    expect_tasks_once(40, 4, 4);  // still usable
  }
}

TEST(ParallelBackend, NestedLoopsRunInline) {
  ThreadBackend backend;
  const ParallelBackend table = backend.table();
  ScopedBackend scoped(table);
  std::atomic<int> inner{0}, bad_worker{0};
  cpu::parallel_for(4, 4, [&](int64_t, int) {
    cpu::parallel_for(3, 4, [&](int64_t, int worker) {
      if (worker != 0) bad_worker.fetch_add(1);
      inner.fetch_add(1);
    });
  });
  EXPECT_EQ(inner.load(), 12);
  EXPECT_EQ(bad_worker.load(), 0);
  EXPECT_EQ(backend.calls.load(), 1);  // only the outer loop
}

TEST(ParallelBackend, NullCallbacksAreRefused) {
  ParallelBackend incomplete;
  incomplete.max_threads = [](void*) { return 2; };
  EXPECT_EQ(set_parallel_backend(&incomplete), Status::kNullPtr);
  EXPECT_NE(std::string(last_error_message()).find("set_parallel_backend"), std::string::npos);
  // Nothing was installed: the library pool runs the loop.
  expect_tasks_once(50, 3, 3);
  EXPECT_EQ(set_parallel_backend(nullptr), Status::kSuccess);
}

// ---- real kernels ------------------------------------------------------------------------------

IfaCase ifa_case() {
  IfaCase c;  // several chunks per sequence, grouped heads, LSE: many tasks of both phases
  c.layout = IfaLayout::kBsnd;
  c.q_dtype = c.kv_dtype = c.out_dtype = DType::kBFloat16;
  c.batch = 3;
  c.num_heads = 16;
  c.num_kv_heads = 4;
  c.head_dim = 64;
  c.kv_lens = {1300, 77, 2100};
  c.lse = true;
  return c;
}

struct IfaBits {
  std::vector<std::byte> out, lse;
  bool operator==(const IfaBits&) const = default;
};

IfaBits run_ifa_bits(IfaCaseData& data, int threads) {
  data.poison_outputs();
  data.mutable_args().num_threads = threads;
  EXPECT_TRUE(run_ifa(data.args()));
  return {data.output_bytes(), data.lse_bytes()};
}

TEST(ParallelBackend, IfaSameBitsAsTheLibraryPool) {
  IfaCaseData data(ifa_case());
  const IfaBits want = run_ifa_bits(data, 4);
  ASSERT_EQ(run_ifa_bits(data, 0), want);
  ThreadBackend threads;
  SerialBackend serial;
  for (CountingBackend* b :
       {static_cast<CountingBackend*>(&threads), static_cast<CountingBackend*>(&serial)}) {
    const ParallelBackend table = b == &threads ? threads.table() : serial.table();
    ScopedBackend scoped(table);
    for (int n : {0, 2, 4}) {
      const int64_t calls = b->calls.load();
      EXPECT_EQ(run_ifa_bits(data, n), want)
          << (b == &threads ? "threads" : "serial") << " backend, num_threads " << n;
      EXPECT_GE(b->calls.load(), calls + 2) << "the chunk and merge loops ran on the backend";
    }
  }
}

// SFA picks its scratch slot by worker index: a clash between running participants would show
// as different bits.
TEST(ParallelBackend, SfaSameBitsAsTheLibraryPool) {
  SfaCase c;
  c.kv_layout = SfaKvLayout::kPaBsnd;
  c.dtype = DType::kBFloat16;
  c.num_heads = 64;
  c.sparse_size = 200;
  c.q_lens = {2, 1, 3};
  c.kv_lens = {300, 120, 260};
  c.block_size = 32;
  c.sinks = true;
  SfaCaseData data(c);
  auto run = [&](int threads) {
    data.poison_outputs();
    data.mutable_args().num_threads = threads;
    std::unique_ptr<SfaPlan> plan;
    EXPECT_EQ(SfaPlan::create(data.args(), &plan), Status::kSuccess) << last_error_message();
    std::vector<std::byte> ws(plan->workspace_size());
    EXPECT_EQ(plan->run(data.args(), ws.data(), ws.size()), Status::kSuccess)
        << last_error_message();
    return data.output_bytes();
  };
  const std::vector<std::byte> want = run(4);
  ThreadBackend threads;
  SerialBackend serial;
  for (CountingBackend* b :
       {static_cast<CountingBackend*>(&threads), static_cast<CountingBackend*>(&serial)}) {
    const ParallelBackend table = b == &threads ? threads.table() : serial.table();
    ScopedBackend scoped(table);
    for (int n : {0, 3, 4}) {
      const int64_t calls = b->calls.load();
      EXPECT_EQ(run(n), want) << (b == &threads ? "threads" : "serial") << " backend, num_threads "
                              << n;
      EXPECT_GT(b->calls.load(), calls);
    }
  }
}

}  // namespace
}  // namespace kvflash::testing
