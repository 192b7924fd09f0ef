// SFA output bits do not depend on the thread count (which also changes how heads are split into
// tasks), on the run, or on the ISA cap within one ISA.
#include <gtest/gtest.h>

#include <cstddef>
#include <memory>
#include <vector>

#include "cpu/sfa/sfa_kernel.hpp"
#include "kvflash/sfa.hpp"
#include "ops/sfa/sfa_plan_impl.hpp"
#include "support/sfa_cases.hpp"

namespace kvflash::testing {
namespace {

std::vector<SfaCase> determinism_cases() {
  std::vector<SfaCase> out;
  SfaCase c;  // one decode row, 128 heads: thread counts change the head blocks (128 .. 8)
  c.kv_layout = SfaKvLayout::kPaBsnd;
  c.dtype = DType::kBFloat16;
  c.num_heads = 128;
  c.sparse_size = 200;
  c.q_lens = {1};
  c.kv_lens = {300};
  c.block_size = 32;
  c.sinks = true;
  c.indices = SfaIndexPattern::kMixed;
  out.push_back(c);
  SfaCase m;  // many rows of mixed kinds, TND, LSE
  m.q_layout = SfaQLayout::kTnd;
  m.kv_layout = SfaKvLayout::kTnd;
  m.num_heads = 16;
  m.sparse_size = 96;
  m.q_lens = {3, 0, 5, 1};
  m.kv_lens = {150, 9, 2, 70};
  m.q_slack = 2;
  m.lse = true;
  m.indices = SfaIndexPattern::kSomeEmpty;
  m.expect_mostly_empty = true;
  out.push_back(m);
  return out;
}

class SfaDeterminismTest : public ::testing::TestWithParam<SfaCase> {};

// One plan (its workspace does not depend on threads) runs with every thread count: same bits.
TEST_P(SfaDeterminismTest, SameBitsForEveryThreadCount) {
  SfaCaseData data(GetParam());
  std::unique_ptr<SfaPlan> plan;
  ASSERT_EQ(SfaPlan::create(data.args(), &plan), Status::kSuccess) << last_error_message();
  const core::SfaProblem& problem = SfaPlanAccess::impl(*plan).problem;
  std::vector<std::byte> ws(plan->workspace_size());
  std::vector<std::byte> first;
  std::vector<int64_t> head_blocks;
  for (int threads : {1, 2, 3, 5, 8, 16, 100, 1}) {
    data.mutable_args().num_threads = threads;
    data.poison_outputs();
    head_blocks.push_back(cpu::sfa_schedule(problem, threads).head_block);
    std::unique_ptr<SfaPlan> again;
    ASSERT_EQ(SfaPlan::create(data.args(), &again), Status::kSuccess);
    EXPECT_EQ(again->workspace_size(), plan->workspace_size()) << "threads = " << threads;
    ASSERT_EQ(plan->run(data.args(), ws.data(), ws.size()), Status::kSuccess)
        << last_error_message();
    const std::vector<std::byte> bytes = data.output_bytes();
    if (first.empty()) {
      first = bytes;
    } else {
      ASSERT_EQ(bytes, first) << GetParam().name() << ": threads = " << threads;
    }
  }
  if (GetParam().q_lens.size() == 1) {
    // The decode case must really have exercised different head splits.
    EXPECT_NE(head_blocks.front(), head_blocks[5]);
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, SfaDeterminismTest, ::testing::ValuesIn(determinism_cases()),
                         [](const ::testing::TestParamInfo<SfaCase>& info) {
                           return std::to_string(info.index) + "_" + info.param.test_name();
                         });

}  // namespace
}  // namespace kvflash::testing
