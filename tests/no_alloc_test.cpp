// The run path never allocates: after a first run (which may start the library's worker threads),
// IfaPlan::run and SfaPlan::run on every case of the shared lists (and the FIA, LI and KV cache
// write runs, and the IFA body on the emulated matrix engine), at several thread counts (kThreads),
// make no call to operator new, on any thread. This executable replaces the global allocation
// functions to count them.
#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <vector>

#include "cpu/ifa/ifa_kernel.hpp"
#include "cpu/isa.hpp"
#include "cpu/li/li_kernel.hpp"
#include "cpu/sfa/sfa_kernel.hpp"
#include "kvflash/fia.hpp"
#include "kvflash/flash_attention_score.hpp"
#include "kvflash/ifa.hpp"
#include "kvflash/kv_cache.hpp"
#include "kvflash/li.hpp"
#include "kvflash/merge.hpp"
#include "kvflash/sfa.hpp"
#include "ops/ifa/ifa_bind.hpp"
#include "ops/ifa/ifa_problem.hpp"
#include "ops/ifa/ifa_validate.hpp"
#include "ops/sfa/sfa_bind.hpp"
#include "ops/sfa/sfa_problem.hpp"
#include "ops/sfa/sfa_validate.hpp"
#include "support/fia_cases.hpp"
#include "support/fia_max_sum.hpp"
#include "support/ifa_cases.hpp"
#include "support/ifa_emu_tiles.hpp"
#include "support/kv_cache_cases.hpp"
#include "support/li_cases.hpp"
#include "support/merge_cases.hpp"
#include "support/registry_coverage.hpp"
#include "support/sanitizer.hpp"
#include "support/sfa_cases.hpp"
#include "support/sfa_emu_tiles.hpp"
#include "support/workspace_buffer.hpp"

namespace {
std::atomic<bool> g_counting{false};
std::atomic<int64_t> g_allocations{0};

void* counted_alloc(std::size_t n, std::size_t align) {
  if (g_counting.load(std::memory_order_relaxed)) g_allocations.fetch_add(1);
  if (n == 0) n = 1;
  void* p = align > alignof(std::max_align_t)
                ? std::aligned_alloc(align, (n + align - 1) / align * align)
                : std::malloc(n);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
}  // namespace

void* operator new(std::size_t n) { return counted_alloc(n, 0); }
void* operator new[](std::size_t n) { return counted_alloc(n, 0); }
void* operator new(std::size_t n, std::align_val_t a) {
  return counted_alloc(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a) {
  return counted_alloc(n, static_cast<std::size_t>(a));
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return counted_alloc(n, 0);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return counted_alloc(n, 0);
  } catch (...) {
    return nullptr;
  }
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

namespace kvflash::testing {
namespace {

// Allocations made by f (on any thread) while it runs.
template <typename F>
int64_t allocations_during(F&& f) {
  g_allocations = 0;
  g_counting = true;
  f();
  g_counting = false;
  return g_allocations.load();
}

// The thread counts of the counted runs: 1, 2 and 5; under AddressSanitizer only 5 (the pool with
// the most workers). What the counts check does not depend on the sanitizer: ASan intercepts
// malloc, not the operator new this file defines, and the library makes the same calls to it, so
// the release build's runs (CTest in the ci preset) count every thread count. What ASan adds to
// these runs is its memory checking, and the same code paths at 1, 2 and 5 threads run under ASan
// in backend_ops_test.cpp (every host entry of IFA, SFA, FIA and LI over the same case lists, the
// plan's create and run), cpu_amx_ifa_test.cpp and cpu_amx_sfa_test.cpp (the emulated-tile bodies
// through cpu::ifa_run / cpu::sfa_run); what this file adds, a second run of one plan on one
// workspace, stays, at 5 threads (docs/testing.md, "The suite under ASan").
constexpr int kThreadsRelease[] = {1, 2, 5};
constexpr int kThreadsAsan[] = {5};
constexpr std::span<const int> kThreads =
    kAddressSanitizer ? std::span<const int>(kThreadsAsan) : std::span<const int>(kThreadsRelease);

TEST(NoAllocation, CountingWorks) {
  EXPECT_GT(allocations_during([] { auto v = std::make_unique<std::vector<int>>(10); }), 0);
}

// Runs args on plan at each thread count: a warm run, then a counted one that must allocate
// nothing (a run writes the same outputs again: the second is the counted one).
template <typename Plan, typename Args>
void expect_runs_allocate_nothing(const Plan& plan, Args& args, const std::string& name) {
  WorkspaceBuffer ws(plan.workspace_size());
  for (int threads : kThreads) {
    args.num_threads = threads;
    ASSERT_EQ(plan.run(args, ws.data(), ws.size()), Status::kSuccess);  // warm
    Status st = Status::kRuntime;
    const int64_t n = allocations_during([&] { st = plan.run(args, ws.data(), ws.size()); });
    ASSERT_EQ(st, Status::kSuccess) << last_error_message();
    ASSERT_EQ(n, 0) << name << " with " << threads << " threads";
  }
}

// Every case of a list, run at each thread count.
template <typename Plan, typename Data, typename Case>
void expect_no_allocation(const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    Data data(c);
    std::unique_ptr<Plan> plan;
    ASSERT_EQ(Plan::create(data.args(), &plan), Status::kSuccess) << last_error_message();
    expect_runs_allocate_nothing(*plan, data.mutable_args(), c.name());
  }
}

// Every operator of the registry (src/ops/operators.def) has its test here, named
// <Name>Run..., <Name> its type prefix or its plan class without "Plan".
TEST(NoAllocation, EveryOperatorIsCounted) {
  const std::vector<std::string> missing = operators_without_test(
      true, [](const std::string& suite, const std::string& test, const std::string& name) {
        return suite == "NoAllocation" && test.starts_with(name + "Run");
      });
  EXPECT_TRUE(missing.empty()) << "operators with no NoAllocation test: "
                               << ::testing::PrintToString(missing);
}

TEST(NoAllocation, IfaRunOnEveryCase) {
  expect_no_allocation<IfaPlan, IfaCaseData>(ifa_cases_for_run());
}

// The IFA body on the emulated matrix engine (support/ifa_emu_tiles.hpp), the code the cpu-amx
// entry runs: cpu::ifa_run on the validated, bound problem (what the entry's run calls).
TEST(NoAllocation, IfaEmulatedTilesRunOnEveryCase) {
  if (cpu::detected_isa() < cpu::Isa::kAvx512Bf16) GTEST_SKIP() << "the model needs AVX512-BF16";
  for (const IfaCase& c : ifa_cases_for_run()) {
    IfaCaseData data(c);
    core::IfaProblem p;
    ASSERT_EQ(ifa::validate_ifa(data.args(), &p), Status::kSuccess) << last_error_message();
    core::IfaData d;
    ifa::bind_data(p, data.args(), &d);
    WorkspaceBuffer ws(cpu::ifa_workspace_size(p));
    for (const cpu::IfaKernels* k : {&kIfaKernelsEmuTiles, &kIfaKernelsEmuTilesPvFma}) {
      for (int threads : kThreads) {
        const core::RunContext ctx{threads, ws.data(), ws.size(), nullptr};
        ASSERT_EQ(cpu::ifa_run(p, d, ctx, *k), Status::kSuccess);  // warm
        Status st = Status::kRuntime;
        const int64_t n = allocations_during([&] { st = cpu::ifa_run(p, d, ctx, *k); });
        ASSERT_EQ(st, Status::kSuccess) << last_error_message();
        ASSERT_EQ(n, 0) << c.name() << " with " << threads << " threads";
      }
    }
  }
}

TEST(NoAllocation, SfaRunOnEveryCase) {
  expect_no_allocation<SfaPlan, SfaCaseData>(sfa_cases_for_run());
}

// The SFA body on the emulated matrix engine (support/sfa_emu_tiles.hpp), the code the cpu-amx
// entry runs: cpu::sfa_run on the validated, bound problem (what the entry's run calls).
TEST(NoAllocation, SfaEmulatedTilesRunOnEveryCase) {
  if (cpu::detected_isa() < cpu::Isa::kAvx512Bf16) GTEST_SKIP() << "the model needs AVX512-BF16";
  for (const SfaCase& c : sfa_cases_for_run()) {
    SfaCaseData data(c);
    core::SfaProblem p;
    ASSERT_EQ(sfa::validate(data.args(), &p), Status::kSuccess) << last_error_message();
    core::SfaData d;
    sfa::bind_data(p, data.args(), &d);
    WorkspaceBuffer ws(cpu::sfa_workspace_size(p));
    for (int threads : kThreads) {
      const core::RunContext ctx{threads, ws.data(), ws.size(), nullptr};
      ASSERT_EQ(cpu::sfa_run(p, d, ctx, kSfaKernelsEmuTiles), Status::kSuccess);  // warm
      Status st = Status::kRuntime;
      const int64_t n =
          allocations_during([&] { st = cpu::sfa_run(p, d, ctx, kSfaKernelsEmuTiles); });
      ASSERT_EQ(st, Status::kSuccess) << last_error_message();
      ASSERT_EQ(n, 0) << c.name() << " with " << threads << " threads";
    }
  }
}

// FIA / PFA through FiaPlan on every case the kernel covers (value D a multiple of 16; others are
// refused at create).
TEST(NoAllocation, FiaRunOnEveryCase) {
  for (const FiaCase& c : fia_cases_for_run()) {
    if (c.dv() % 16 != 0) continue;
    FiaCaseData data(c);
    FiaArgs args = data.call();
    std::unique_ptr<FiaPlan> plan;
    ASSERT_EQ(FiaPlan::create(args, &plan), Status::kSuccess) << last_error_message();
    WorkspaceBuffer ws(plan->workspace_size());
    for (int threads : kThreads) {
      args.num_threads = threads;
      ASSERT_EQ(plan->run(args, ws.data(), ws.size()), Status::kSuccess);  // warm
      Status st = Status::kRuntime;
      const int64_t n = allocations_during([&] { st = plan->run(args, ws.data(), ws.size()); });
      ASSERT_EQ(st, Status::kSuccess) << last_error_message();
      ASSERT_EQ(n, 0) << c.name() << " with " << threads << " threads";
    }
  }
}

// LightningIndexerPlan::run over every case without a fault (a fault's message is built when
// there is one), at kThreads (1, 2 and 5 threads: rows, row pairs and key shares).
TEST(NoAllocation, LightningIndexerRunOnEveryCase) {
  for (const LiCase& c : li_cases_for_run()) {
    if (c.fault != LiFault::kNone) continue;
    LiCaseData data(c);
    std::unique_ptr<LightningIndexerPlan> plan;
    ASSERT_EQ(LightningIndexerPlan::create(data.call(), &plan), Status::kSuccess)
        << last_error_message();
    WorkspaceBuffer ws(plan->workspace_size());
    for (int threads : kThreads) {
      data.mutable_call().num_threads = threads;
      const LightningIndexerArgs& args = data.call();
      ASSERT_EQ(plan->run(args, ws.data(), ws.size()), Status::kSuccess);  // warm
      Status st = Status::kRuntime;
      const int64_t n = allocations_during([&] { st = plan->run(args, ws.data(), ws.size()); });
      ASSERT_EQ(st, Status::kSuccess) << c.name();
      ASSERT_EQ(n, 0) << c.name() << " with " << threads << " threads";
    }
  }
}

// FlashAttentionScorePlan::run (a FiaPlan run on a per-thread copy of the mapped arguments,
// kept from the warm run): TND and BSND calls, at kThreads.
TEST(NoAllocation, FlashAttentionScoreRun) {
  for (FiaLayout lay : {FiaLayout::kTnd, FiaLayout::kBsnd}) {
    FiaCase c;
    c.prompt = true, c.layout = lay, c.num_heads = 4, c.num_kv_heads = 2;
    c.q_lens = {5, 5}, c.kv_lens = {9, 9}, c.sparse_mode = 3, c.mask = FiaMask::kCompressed;
    if (lay != FiaLayout::kTnd) c.kv_slack = 0, c.pass_q_lens = false, c.pass_kv_lens = false;
    FiaCaseData data(c);
    FiaMaxSum ms(data);
    const reference::FiaCall& call = data.call();
    FlashAttentionScoreArgs a;
    a.query = call.query, a.key = call.key[0], a.value = call.value[0];
    a.atten_mask = call.atten_mask;
    if (lay == FiaLayout::kTnd) {
      a.actual_seq_qlen = call.actual_seq_lengths, a.actual_seq_kvlen = call.actual_seq_lengths_kv;
    }
    a.head_num = c.num_heads, a.input_layout = call.input_layout, a.sparse_mode = 3;
    a.softmax_max = ms.max_view(), a.softmax_sum = ms.sum_view();
    a.attention_out = call.attention_out;
    std::unique_ptr<FlashAttentionScorePlan> plan;
    ASSERT_EQ(FlashAttentionScorePlan::create(a, &plan), Status::kSuccess) << last_error_message();
    WorkspaceBuffer ws(plan->workspace_size());
    for (int threads : kThreads) {
      a.num_threads = threads;
      ASSERT_EQ(plan->run(a, ws.data(), ws.size()), Status::kSuccess);  // warm
      Status st = Status::kRuntime;
      const int64_t n = allocations_during([&] { st = plan->run(a, ws.data(), ws.size()); });
      ASSERT_EQ(st, Status::kSuccess) << last_error_message();
      ASSERT_EQ(n, 0) << c.name() << " with " << threads << " threads";
    }
  }
}

// Every case of a list whose data a fill function makes (fill(case, &data, seed), seeds 1, 2, ...),
// run at each thread count.
template <typename Plan, typename Data, typename Case>
void expect_filled_cases_allocate_nothing(const std::vector<Case>& cases,
                                          void (*fill)(const Case&, Data*, uint32_t)) {
  uint32_t seed = 1;
  for (const Case& c : cases) {
    Data data;
    fill(c, &data, seed++);
    std::unique_ptr<Plan> plan;
    ASSERT_EQ(Plan::create(data.args, &plan), Status::kSuccess) << last_error_message();
    expect_runs_allocate_nothing(*plan, data.args, c.name());
  }
}

// ScatterPaKvCachePlan::run over every case (the slot check's table is the workspace), at
// kThreads.
TEST(NoAllocation, KvCacheRunOnEveryCase) {
  expect_filled_cases_allocate_nothing<ScatterPaKvCachePlan, KvCacheCaseData>(kv_cache_cases(),
                                                                              fill_kv_cache_case);
}

// MergePlan::run over every case of the merge's list, at kThreads.
TEST(NoAllocation, MergeRunOnEveryCase) {
  expect_filled_cases_allocate_nothing<MergePlan, MergeCaseData>(merge_cases(), fill_merge_case);
}

}  // namespace
}  // namespace kvflash::testing
