// FiaArgs' FlashAttentionScore extensions (include/kvflash/fia.hpp): the softmax max / sum
// outputs over a sample of the shared FIA case list (every layout, branch, mask and the split-KV
// path) against the oracle's per-row max and sum, and fp32 query / key / value (fp32_inputs)
// against the oracle, with the validation rules of both.
#include "support/fia_max_sum.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "fia_reference.hpp"
#include "kvflash/fia.hpp"
#include "support/fia_cases.hpp"
#include "support/workspace_buffer.hpp"

namespace kvflash::testing {
namespace {

Status run(const FiaArgs& args) {
  std::unique_ptr<FiaPlan> plan;
  if (const Status s = FiaPlan::create(args, &plan); s != Status::kSuccess) return s;
  WorkspaceBuffer ws(plan->workspace_size());
  return plan->run(args, ws.data(), ws.size());
}

// Every 5th case of the list the kernel runs (value D a multiple of 16), with 1 and 3 threads.
TEST(FiaMaxSum, MatchesTheReferenceMaxAndSum) {
  int64_t i = 0, checked = 0;
  for (const FiaCase& c : fia_cases_for_run()) {
    if (c.dv() % 16 != 0 || i++ % 5 != 0) continue;
    FiaCaseData data(c);
    const reference::FiaReference ref = reference::fia_reference(data.call());
    for (int threads : {1, 3}) {
      FiaMaxSum ms(data);
      FiaArgs args = data.call();
      args.num_threads = threads;
      args.softmax_max = ms.max_view();
      args.softmax_sum = ms.sum_view();
      ASSERT_EQ(run(args), Status::kSuccess) << c.name() << ": " << last_error_message();
      ASSERT_TRUE(compare_fia_max_sum(data, ref, ms));
      // The outputs are the same as without max / sum.
      ASSERT_TRUE(compare_fia_output(c.name(), data.call(), ref, nullptr, c.expect_mostly_empty));
    }
    ++checked;
  }
  EXPECT_GT(checked, 10);
}

// fp32 query, key and value with fp32_inputs (FlashAttentionScore's third dtype): prefill and a
// decode-shaped PFA call, TND and BSND, against the oracle at fp32's tolerance.
TEST(FiaMaxSum, Fp32InputsMatchTheReference) {
  std::vector<FiaCase> cases;
  for (FiaLayout lay : {FiaLayout::kBsnd, FiaLayout::kTnd, FiaLayout::kBnsd}) {
    FiaCase c;
    c.prompt = true;
    c.layout = lay;
    c.q_dtype = c.kv_dtype = c.out_dtype = DType::kFloat32;
    c.num_heads = 4, c.num_kv_heads = 2, c.head_dim = 32;
    c.q_lens = {5, 1, 9}, c.kv_lens = {5, 7, 30};
    c.sparse_mode = 3, c.mask = FiaMask::kCompressed, c.lse = true;
    if (lay != FiaLayout::kTnd) c.q_slack = 1;
    cases.push_back(c);
  }
  for (const FiaCase& c : cases) {
    FiaCaseData data(c);
    const reference::FiaReference ref = reference::fia_reference(data.call());
    FiaMaxSum ms(data);
    FiaArgs args = data.call();
    args.softmax_max = ms.max_view();
    args.softmax_sum = ms.sum_view();
    EXPECT_EQ(run(args), Status::kInvalid) << c.name();  // fp32 needs fp32_inputs
    EXPECT_NE(std::string(last_error_message()).find("query dtype must be fp16 or bf16, got fp32"),
              std::string::npos)
        << last_error_message();
    args.fp32_inputs = true;
    ASSERT_EQ(run(args), Status::kSuccess) << c.name() << ": " << last_error_message();
    EXPECT_TRUE(compare_fia_output(c.name(), data.call(), ref));
    EXPECT_TRUE(compare_fia_max_sum(data, ref, ms));
  }
}

TEST(FiaMaxSum, Validation) {
  FiaCase c;
  c.prompt = true, c.num_heads = 2, c.num_kv_heads = 2, c.q_lens = {3}, c.kv_lens = {4};
  FiaCaseData data(c);
  FiaMaxSum ms(data);
  const auto expect = [](const FiaArgs& a, const char* msg) {
    std::unique_ptr<FiaPlan> plan;
    EXPECT_EQ(FiaPlan::create(a, &plan), Status::kInvalid) << msg;
    EXPECT_NE(std::string(last_error_message()).find(msg), std::string::npos)
        << last_error_message();
  };
  FiaArgs a = data.call();
  a.softmax_max = ms.max_view();
  a.softmax_sum = ms.sum_view();
  FiaArgs b = a;
  b.softmax_sum.reset();
  expect(b, "softmax_sum is required with softmax_max");
  b = a;
  b.softmax_max.reset();
  expect(b, "softmax_max is required with softmax_sum");
  b = a;
  b.softmax_max->dtype = DType::kFloat16;
  expect(b, "softmax_max must be fp32 [1,2,3,8]");
  b = a;
  b.softmax_sum->shape[3] = 1;
  expect(b, "softmax_sum must be fp32 [1,2,3,8]");
  b = a;
  b.softmax_max->strides[1] = 1000;
  expect(b, "softmax_max must be contiguous");
  b = a;
  b.fp32_inputs = true;
  b.query.dtype = DType::kFloat16;
  b.key[0].dtype = DType::kFloat32;
  expect(b, "key");
  b = a;
  b.fp32_inputs = true;
  b.query.dtype = DType::kInt32;
  expect(b, "query dtype must be fp16 or bf16 or fp32");
}

}  // namespace
}  // namespace kvflash::testing
