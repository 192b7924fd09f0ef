// FiaPlan::create's refusals, one per rule family (docs/conventions.md,
// "FusedInferAttentionScore"): each returns the documented status with a message naming the
// argument or the refused feature, and leaves the plan null. The valid starting point is a case of
// the shared list.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>

#include "kvflash/fia.hpp"
#include "support/fia_args.hpp"
#include "support/fia_cases.hpp"

namespace kvflash::testing {
namespace {

FiaCase base_case() {
  FiaCase c;
  c.num_heads = 4, c.num_kv_heads = 2, c.head_dim = 64;
  c.q_lens = {5, 3}, c.kv_lens = {9, 7};
  c.sparse_mode = 3, c.mask = FiaMask::kCompressed, c.lse = true;
  return c;
}

void expect_refused(const std::function<void(FiaArgs&)>& mutate, Status want, const char* word) {
  FiaCaseData data(base_case());
  FiaArgs a = fia_args(data.call());
  std::unique_ptr<FiaPlan> plan;
  ASSERT_EQ(FiaPlan::create(a, &plan), Status::kSuccess) << last_error_message();
  mutate(a);
  EXPECT_EQ(FiaPlan::create(a, &plan), want) << word << ": " << last_error_message();
  EXPECT_EQ(plan, nullptr);
  EXPECT_NE(std::string(last_error_message()).find(word), std::string::npos)
      << last_error_message();
}

TEST(FiaValidate, RefusedFeaturesNameTheFeature) {
  expect_refused([](FiaArgs& a) { a.dequant_scale1 = a.query; }, Status::kInvalid,
                 "full int8 quantisation");
  expect_refused([](FiaArgs& a) { a.query_quant_mode = 1; }, Status::kInvalid, "query_quant_mode");
  expect_refused([](FiaArgs& a) { a.sparse_mode = 9; }, Status::kInvalid, "tree mask");
  expect_refused([](FiaArgs& a) { a.antiquant_mode = 3; }, Status::kInvalid, "antiquant_mode 3");
  expect_refused([](FiaArgs& a) { a.key_rope_antiquant_scale = a.query; }, Status::kInvalid,
                 "key_rope_antiquant_scale");
}

TEST(FiaValidate, BadArgumentsNameTheArgument) {
  expect_refused([](FiaArgs& a) { a.num_heads = 3; }, Status::kInvalid, "num_heads");
  expect_refused([](FiaArgs& a) { a.input_layout = "BSH_BNSD"; }, Status::kInvalid, "input_layout");
  expect_refused([](FiaArgs& a) { a.sparse_mode = 2, a.atten_mask.reset(); }, Status::kInvalid,
                 "atten_mask");
  expect_refused(
      [](FiaArgs& a) {
        a.actual_seq_lengths = std::vector<int64_t>{5, 9};
      },
      Status::kInvalid, "actual_seq_lengths");
  expect_refused(
      [](FiaArgs& a) {
        a.actual_seq_lengths_kv = std::vector<int64_t>{100, 2};
      },
      Status::kInvalid, "actual_seq_lengths_kv");
  expect_refused([](FiaArgs& a) { a.softmax_lse.reset(); }, Status::kInvalid, "softmax_lse");
  expect_refused([](FiaArgs& a) { a.attention_out.shape[1] += 1; }, Status::kInvalid,
                 "attention_out");
  expect_refused([](FiaArgs& a) { a.inner_precise = 4; }, Status::kInvalid, "inner_precise");
  expect_refused([](FiaArgs& a) { a.learnable_sink = a.query; }, Status::kInvalid,
                 "learnable_sink");
  expect_refused([](FiaArgs& a) { a.antiquant_scale = a.query; }, Status::kInvalid, "antiquant");
  expect_refused([](FiaArgs& a) { a.key[0].dtype = DType::kBFloat16; }, Status::kInvalid, "key");
  expect_refused([](FiaArgs& a) { a.query.data = nullptr; }, Status::kNullPtr, "query");
  expect_refused([](FiaArgs& a) { a.num_key_value_heads = 3; }, Status::kInvalid,
                 "num_key_value_heads");
}

// The decode branch (D4) ignores the query lengths; PFA (prompt) applies them.
TEST(FiaValidate, PromptSubsetPlansAndRuns) {
  FiaCaseData data(base_case());
  FiaArgs a = fia_args(data.call());
  a.prompt = true;
  EXPECT_EQ(prompt_flash_attention(a), Status::kSuccess) << last_error_message();
  a.prompt = false;
  EXPECT_EQ(prompt_flash_attention(a), Status::kSuccess) << last_error_message();
  EXPECT_EQ(fused_infer_attention_score(a), Status::kSuccess) << last_error_message();
}

}  // namespace
}  // namespace kvflash::testing
