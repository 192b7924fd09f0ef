// Every available entry of every operator's backend list, forced in turn (core::force_backend),
// over the operator's shared case list (support/*_cases.hpp) against the fp64 reference, through
// the public plan API, every output element checked (ggml's test-backend-ops). A new entry of a
// list (src/backends/lists.cpp) is checked here without new test code. Entries of a device other
// than the host need the cases' buffers in device memory: tests/cuda_*_test.cpp check them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backends/lists.hpp"
#include "fia_reference.hpp"
#include "hooks/force_backend.hpp"
#include "ifa_reference.hpp"
#include "kv_cache_reference.hpp"
#include "kvflash/fia.hpp"
#include "kvflash/ifa.hpp"
#include "kvflash/kv_cache.hpp"
#include "kvflash/li.hpp"
#include "kvflash/merge.hpp"
#include "kvflash/sfa.hpp"
#include "li_reference.hpp"
#include "merge_reference.hpp"
#include "sfa_reference.hpp"
#include "support/compare.hpp"
#include "support/fia_cases.hpp"
#include "support/ifa_cases.hpp"
#include "support/kv_cache_cases.hpp"
#include "support/li_cases.hpp"
#include "support/li_compare.hpp"
#include "support/merge_cases.hpp"
#include "support/merge_compare.hpp"
#include "support/registry_coverage.hpp"
#include "support/sfa_cases.hpp"
#include "support/sfa_compare.hpp"
#include "support/workspace_buffer.hpp"

namespace kvflash::testing {
namespace {

constexpr int kThreadCounts[] = {1, 2, 5};

/// The host entries of list that can run here, in list order.
template <typename B>
std::vector<const char*> host_entries(std::span<const B> list) {
  std::vector<const char*> names;
  for (const B& b : list) {
    if (b.device == DeviceType::kHost && b.available(nullptr)) names.push_back(b.name);
  }
  return names;
}

/// Runs only the named entry while alive.
class ForcedEntry {
 public:
  explicit ForcedEntry(const char* name) { core::force_backend(name); }
  ~ForcedEntry() { core::force_backend(nullptr); }
  ForcedEntry(const ForcedEntry&) = delete;
  ForcedEntry& operator=(const ForcedEntry&) = delete;
};

/// create + run with a fresh workspace; a failure names the status and the library's message.
template <typename Plan, typename Args>
::testing::AssertionResult run_plan(const Args& args) {
  std::unique_ptr<Plan> plan;
  if (const Status s = Plan::create(args, &plan); s != Status::kSuccess) {
    return ::testing::AssertionFailure()
           << "create returned " << static_cast<int>(s) << ": " << last_error_message();
  }
  WorkspaceBuffer ws(plan->workspace_size());
  if (const Status s = plan->run(args, ws.data(), ws.size()); s != Status::kSuccess) {
    return ::testing::AssertionFailure()
           << "run returned " << static_cast<int>(s) << ": " << last_error_message();
  }
  return ::testing::AssertionSuccess();
}

// Every operator of the registry (src/ops/operators.def).
TEST(BackendOps, EveryOperatorHasAHostEntry) {
#define KVFLASH_OPERATOR(op, Op, Plan, Args) \
  EXPECT_FALSE(host_entries(op##_backends()).empty()) << #op;
#include "ops/operators.def"
}

// Every operator of the registry has its sweep below: a suite BackendOps<Op> (Cases/BackendOps<Op>
// when parameterised over its case list) with a test MatchesReference (MatchesReference/<case>).
TEST(BackendOps, EveryOperatorHasASweep) {
  const std::vector<std::string> missing = operators_without_test(
      false, [](const std::string& suite, const std::string& test, const std::string& name) {
        const std::string want = "BackendOps" + name;
        return (test == "MatchesReference" || test.starts_with("MatchesReference/")) &&
               (suite == want || suite.ends_with("/" + want));
      });
  EXPECT_TRUE(missing.empty()) << "operators with no sweep: " << ::testing::PrintToString(missing);
}

// The host entries this machine cannot run (an instruction set it lacks, such as cpu-amx on a CPU
// without AMX) are named with their reason: each must have one, and the test is skipped listing
// them, so an entry the sweeps below leave out is never left out silently.
TEST(BackendOps, UnavailableHostEntriesSayWhy) {
  std::string skipped;
  const auto note = [&skipped](const char* op, const auto& list) {
    for (const auto& b : list) {
      const char* why = nullptr;
      if (b.device != DeviceType::kHost || b.available(&why)) continue;
      ASSERT_NE(why, nullptr) << op << " " << b.name;
      EXPECT_STRNE(why, "") << op << " " << b.name;
      skipped += std::string(op) + " " + b.name + " (" + why + "); ";
    }
  };
#define KVFLASH_OPERATOR(op, Op, Plan, Args) note(#op, op##_backends());
#include "ops/operators.def"
  if (!skipped.empty()) GTEST_SKIP() << "entries not run here: " << skipped;
}

// The matrix-engine entries are in IFA's, SFA's, FIA's and the indexer's lists as host entries;
// where they cannot run, UnavailableHostEntriesSayWhy checks their reason.
TEST(BackendOps, AmxEntriesAreListedOnTheHost) {
  const auto check = [](const char* op, const auto& list) {
    int found = 0;
    for (const auto& b : list) {
      if (std::string(b.name) != "cpu-amx") continue;
      ++found;
      EXPECT_EQ(b.device, DeviceType::kHost) << op;
    }
    EXPECT_EQ(found, 1) << op << ": cpu-amx entries in the list";
  };
  check("ifa", ifa_backends());
  check("sfa", sfa_backends());
  check("fia", fia_backends());
  check("li", li_backends());
}

class BackendOpsIfa : public ::testing::TestWithParam<IfaCase> {};

TEST_P(BackendOpsIfa, MatchesReference) {
  const IfaCase& c = GetParam();
  IfaCaseData data(c);
  const reference::IfaReference ref = reference::ifa_reference(data.args());
  IfaCompareOptions options;
  options.allow_mostly_empty = c.expect_mostly_empty;
  for (const char* entry : host_entries(ifa_backends())) {
    ForcedEntry forced(entry);
    for (int threads : kThreadCounts) {
      SCOPED_TRACE(std::string("entry=") + entry + " threads=" + std::to_string(threads));
      data.poison_outputs();
      data.mutable_args().num_threads = threads;
      ASSERT_TRUE(run_plan<IfaPlan>(data.args())) << c.name();
      ASSERT_TRUE(compare_ifa_output(c.name(), data.args(), ref, options));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, BackendOpsIfa, ::testing::ValuesIn(ifa_cases_for_run()),
                         [](const ::testing::TestParamInfo<IfaCase>& info) {
                           return info.param.test_name();
                         });

class BackendOpsSfa : public ::testing::TestWithParam<SfaCase> {};

// The case's own thread count (SFA's cases are large; its determinism test varies the count).
TEST_P(BackendOpsSfa, MatchesReference) {
  const SfaCase& c = GetParam();
  SfaCaseData data(c);
  const reference::SfaReference ref = reference::sfa_reference(data.args());
  for (const char* entry : host_entries(sfa_backends())) {
    ForcedEntry forced(entry);
    SCOPED_TRACE(std::string("entry=") + entry);
    data.poison_outputs();
    ASSERT_TRUE(run_plan<SfaPlan>(data.args())) << c.name();
    EXPECT_TRUE(compare_sfa_output(c.name(), data.args(), ref, c.expect_mostly_empty));
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, BackendOpsSfa, ::testing::ValuesIn(sfa_cases_for_run()),
                         [](const ::testing::TestParamInfo<SfaCase>& info) {
                           return std::to_string(info.index) + "_" + info.param.test_name();
                         });

class BackendOpsLi : public ::testing::TestWithParam<LiCase> {};

// Every entry at 1, 2 and 5 threads through the plan: the reference's selection (bad device data:
// kInvalid naming the reference's fault, its rows -1), and the same bits at every thread count.
TEST_P(BackendOpsLi, MatchesReference) {
  const LiCase& c = GetParam();
  LiCaseData data(c);
  const reference::LiReference ref = reference::li_reference(data.call());
  for (const char* entry : host_entries(li_backends())) {
    ForcedEntry forced(entry);
    std::vector<std::byte> first;
    for (int threads : kThreadCounts) {
      SCOPED_TRACE(std::string("entry=") + entry + " threads=" + std::to_string(threads));
      data.poison_outputs();
      data.mutable_call().num_threads = threads;
      std::unique_ptr<LightningIndexerPlan> plan;
      ASSERT_EQ(LightningIndexerPlan::create(data.call(), &plan), Status::kSuccess)
          << last_error_message();
      WorkspaceBuffer ws(plan->workspace_size());
      const Status st = plan->run(data.call(), ws.data(), ws.size());
      if (ref.fault.empty()) {
        ASSERT_EQ(st, Status::kSuccess) << c.name() << ": " << last_error_message();
      } else {
        ASSERT_EQ(st, Status::kInvalid) << c.name();
        EXPECT_NE(std::string(last_error_message()).find(ref.fault), std::string::npos)
            << last_error_message() << " does not name " << ref.fault;
      }
      ASSERT_TRUE(compare_li_output(c.name(), data.call(), ref, c.expect_mostly_empty));
      if (first.empty()) {
        first = data.output_bytes();
      } else {
        EXPECT_TRUE(first == data.output_bytes()) << c.name() << ": bits differ from 1 thread";
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, BackendOpsLi, ::testing::ValuesIn(li_cases_for_run()),
                         [](const ::testing::TestParamInfo<LiCase>& info) {
                           return std::to_string(info.index) + "_" + info.param.test_name();
                         });

TEST(BackendOpsMerge, MatchesReference) {
  uint32_t seed = 1;
  for (const MergeCase& c : merge_cases()) {
    MergeCaseData d;
    fill_merge_case(c, &d, seed++);
    const reference::MergeReference ref = reference::merge_reference(d.args);
    for (const char* entry : host_entries(merge_backends())) {
      ForcedEntry forced(entry);
      SCOPED_TRACE(std::string("entry=") + entry);
      ASSERT_TRUE(run_plan<MergePlan>(d.args)) << c.name();
      EXPECT_TRUE(compare_merge_output(c.name(), d.args, ref));
      // Row 0 has nothing: zeros, lse -inf, max = sum = 0 (without a sink).
      if (!c.sink) {
        EXPECT_EQ(d.lse[0], -std::numeric_limits<float>::infinity()) << c.name();
        EXPECT_EQ(d.omax[0], 0.0f) << c.name();
        EXPECT_EQ(d.osum[0], 0.0f) << c.name();
      }
    }
  }
}

// The KV cache write: every case of the shared list at every entry and thread count, the exact
// bytes of the oracle.
TEST(BackendOpsKvCache, MatchesReference) {
  uint32_t seed = 1;
  for (const KvCacheCase& c : kv_cache_cases()) {
    for (const char* entry : host_entries(kv_cache_backends())) {
      ForcedEntry forced(entry);
      for (int threads : kThreadCounts) {
        SCOPED_TRACE(std::string("entry=") + entry + " threads=" + std::to_string(threads));
        KvCacheCaseData d;
        fill_kv_cache_case(c, &d, seed);
        d.args.num_threads = threads;
        const reference::KvCacheReference ref = reference::kv_cache_reference(d.args);
        ASSERT_TRUE(run_plan<ScatterPaKvCachePlan>(d.args)) << c.name();
        EXPECT_TRUE(reference::element_bytes(d.args.key_cache) == ref.key_cache) << c.name();
        if (d.args.value_cache) {
          EXPECT_TRUE(reference::element_bytes(*d.args.value_cache) == ref.value_cache) << c.name();
        }
      }
    }
    ++seed;
  }
}

// FIA / PFA through FiaPlan: every case of the shared list at every entry and thread count. The
// CPU kernel's rows need a value head dim that is a multiple of 16: other cases must be refused
// (kInvalid naming value's head dim), never run.
class BackendOpsFia : public ::testing::TestWithParam<FiaCase> {};

std::map<std::string, double>& fia_worst() {
  static std::map<std::string, double> w;
  return w;
}

TEST_P(BackendOpsFia, MatchesReference) {
  const FiaCase& c = GetParam();
  FiaCaseData data(c);
  FiaArgs args = data.call();
  if (c.dv() % 16 != 0) {
    std::unique_ptr<FiaPlan> plan;
    EXPECT_EQ(FiaPlan::create(args, &plan), Status::kInvalid) << c.name();
    EXPECT_NE(std::string(last_error_message()).find("value's head dim"), std::string::npos)
        << last_error_message();
    return;
  }
  const reference::FiaReference ref = reference::fia_reference(data.call());
  for (const char* entry : host_entries(fia_backends())) {
    ForcedEntry forced(entry);
    for (int threads : kThreadCounts) {
      SCOPED_TRACE(std::string("entry=") + entry + " threads=" + std::to_string(threads));
      data.poison_outputs();
      args.num_threads = threads;
      ASSERT_TRUE(run_plan<FiaPlan>(args)) << c.name();
      double worst = 0;
      ASSERT_TRUE(compare_fia_output(c.name(), data.call(), ref, &worst, c.expect_mostly_empty));
      double& w = fia_worst()[dtype_name(c.out_dtype)];
      w = std::max(w, worst);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, BackendOpsFia, ::testing::ValuesIn(fia_cases_for_run()),
                         [](const ::testing::TestParamInfo<FiaCase>& info) {
                           return std::to_string(info.index) + "_" + info.param.test_name();
                         });

// The worst err/tol per output dtype over the sweep, printed when the program ends.
class FiaWorstPrinter : public ::testing::Environment {
 public:
  void TearDown() override {
    for (const auto& [dtype, w] : fia_worst())
      std::printf("fia worst err/tol %s: %.3g\n", dtype.c_str(), w);
  }
};
[[maybe_unused]] ::testing::Environment* const kFiaWorstPrinter =
    ::testing::AddGlobalTestEnvironment(new FiaWorstPrinter);

// An entry that does not implement a feature of the problem is skipped with its reason, and
// does not size the workspace (core::Backend::supports).
struct FakeProblem {
  bool sink = false;
};
struct FakeData {};
using FakeBackend = core::Backend<FakeProblem, FakeData>;
bool fake_available(const char**) { return true; }
bool no_sink(const FakeProblem& p, const char** why) {
  if (p.sink && why != nullptr) *why = "a learnable sink";
  return !p.sink;
}
size_t small_workspace(const FakeProblem&) { return 16; }
size_t large_workspace(const FakeProblem&) { return 1024; }
Status fake_run(const FakeProblem&, const FakeData&, const core::RunContext&) {
  return Status::kSuccess;
}

TEST(BackendOps, EntriesThatDoNotSupportAProblemAreSkipped) {
  const FakeBackend list[] = {
      {"narrow", DeviceType::kHost, fake_available, no_sink, large_workspace, fake_run, nullptr},
      {"wide", DeviceType::kHost, fake_available, nullptr, small_workspace, fake_run, nullptr},
  };
  const std::span<const FakeBackend> entries(list);
  const FakeProblem plain, sink{true};
  EXPECT_STREQ(core::select_backend(entries, DeviceType::kHost, plain)->name, "narrow");
  EXPECT_STREQ(core::select_backend(entries, DeviceType::kHost, sink)->name, "wide");
  size_t bytes = 0;
  ASSERT_TRUE(core::plan_workspace(entries, DeviceType::kHost, sink, &bytes));
  EXPECT_EQ(bytes, 16u);  // the entry that cannot run it does not size it
  ASSERT_TRUE(core::plan_workspace(entries, DeviceType::kHost, plain, &bytes));
  EXPECT_EQ(bytes, 1024u);
  EXPECT_FALSE(core::plan_workspace(entries.first(1), DeviceType::kHost, sink, &bytes));
  ::testing::internal::CaptureStderr();
  core::print_dispatch("fake", "sink", entries, DeviceType::kHost, sink,
                       core::select_backend(entries, DeviceType::kHost, sink));
  const std::string line = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(line.find("narrow skipped (a learnable sink)"), std::string::npos) << line;
  EXPECT_NE(line.find("ran wide"), std::string::npos) << line;
}

// A forced entry that is not in the list runs nothing: the run fails instead of falling back.
TEST(BackendOps, ForcingAnUnknownEntryRunsNothing) {
  MergeCaseData d;
  fill_merge_case(MergeCase{}, &d, 3);
  ForcedEntry forced("no-such-entry");
  EXPECT_EQ(merge_attention_states(d.args), Status::kRuntime);
  EXPECT_NE(std::string(last_error_message()).find("no backend is available"), std::string::npos)
      << last_error_message();
}

}  // namespace
}  // namespace kvflash::testing
