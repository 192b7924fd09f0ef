// FiaPlan::create's refusals, one per rule family (docs/conventions.md,
// "FusedInferAttentionScore"): each returns the documented status with a message naming the
// argument or the refused feature, and leaves the plan null. The valid starting point is a case of
// the shared list.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kvflash/fia.hpp"
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
  FiaArgs a = data.call();
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

// A paged cache's table has a row per batch: fewer would be read past its end.
TEST(FiaValidate, BlockTableNeedsARowPerBatch) {
  FiaCase c = base_case();
  c.paged = true;
  c.q_lens = {5, 3, 2}, c.kv_lens = {9, 7, 20};
  FiaCaseData data(c);
  FiaArgs a = data.call();
  std::unique_ptr<FiaPlan> plan;
  ASSERT_EQ(FiaPlan::create(a, &plan), Status::kSuccess) << last_error_message();
  a.block_table->shape[0] = 2;
  EXPECT_EQ(FiaPlan::create(a, &plan), Status::kInvalid);
  EXPECT_NE(std::string(last_error_message()).find("block_table"), std::string::npos)
      << last_error_message();
}

// D3: modes 2-4 take the compressed mask in the three shapes of the FIA V4 document, FIA and PFA
// alike (its contents are never read, so any view of the case's 2048x2048 buffer serves: only
// metadata is validated); no other shape.
TEST(FiaValidate, CompressedMaskShapes) {
  FiaCaseData data(base_case());
  for (bool prompt : {false, true}) {
    for (int64_t mode : {2, 3, 4}) {
      const std::vector<std::vector<int64_t>> good = {
          {2048, 2048}, {1, 2048, 2048}, {1, 1, 2048, 2048}};
      const std::vector<std::vector<int64_t>> bad = {
          {2, 2048, 2048}, {1, 2, 2048, 2048}, {2048, 1024}, {2047, 2048}, {4194304}};
      for (bool valid : {true, false}) {
        for (const std::vector<int64_t>& shape : valid ? good : bad) {
          FiaArgs a = data.call();
          a.prompt = prompt;
          a.sparse_mode = mode;
          if (mode == 4) a.pre_tokens = 3, a.next_tokens = 0;
          a.atten_mask = TensorView::contiguous(a.atten_mask->data, DType::kInt8, shape);
          std::unique_ptr<FiaPlan> plan;
          const Status st = FiaPlan::create(a, &plan);
          const std::string what = "mode " + std::to_string(mode) + " " + a.atten_mask->describe() +
                                   (prompt ? " (PFA)" : "");
          if (valid) {
            EXPECT_EQ(st, Status::kSuccess) << what << ": " << last_error_message();
          } else {
            EXPECT_EQ(st, Status::kInvalid) << what;
            EXPECT_NE(std::string(last_error_message()).find("atten_mask"), std::string::npos)
                << last_error_message();
          }
        }
      }
    }
  }
}

// D4: with a query length of 1 (no rope, B/S layout) FIA ignores sparse_mode, pre_tokens and
// next_tokens and needs no mask; a compressed mask given there must still have its shapes. PFA
// has no decode branch: its mode applies (and needs its mask) at S1 = 1 too. Results:
// fia_route_test.cpp (DecodeBranchIgnoresSparseMode) and the decode_branch cases of the list.
TEST(FiaValidate, DecodeBranchIgnoresSparseModeAndNeedsNoMask) {
  FiaCase c;
  c.num_heads = 4, c.num_kv_heads = 2;
  c.q_lens = {1, 1}, c.kv_lens = {9, 4};
  FiaCaseData data(c);
  auto plan_with = [&](auto mutate) {
    FiaArgs a = data.call();
    mutate(a);
    std::unique_ptr<FiaPlan> plan;
    return FiaPlan::create(a, &plan);
  };
  for (int64_t mode : {1, 2, 3, 4}) {
    EXPECT_EQ(plan_with([&](FiaArgs& a) { a.sparse_mode = mode; }), Status::kSuccess)
        << "mode " << mode << ": " << last_error_message();
    EXPECT_EQ(plan_with([&](FiaArgs& a) { a.sparse_mode = mode, a.prompt = true; }),
              Status::kInvalid)
        << "PFA mode " << mode;
    EXPECT_NE(std::string(last_error_message()).find("requires atten_mask"), std::string::npos)
        << last_error_message();
  }
  // pre + next < 0 is mode 4's error only where the band applies.
  EXPECT_EQ(plan_with([](FiaArgs& a) { a.sparse_mode = 4, a.pre_tokens = -5, a.next_tokens = 2; }),
            Status::kSuccess)
      << last_error_message();
  EXPECT_EQ(plan_with([](FiaArgs& a) {
              a.sparse_mode = 4, a.pre_tokens = -5, a.next_tokens = 2, a.prompt = true;
            }),
            Status::kInvalid);
  EXPECT_NE(std::string(last_error_message()).find("pre_tokens + next_tokens"), std::string::npos)
      << last_error_message();
  // Mode 4's pre + next check does not overflow int64 (UBSan would say so).
  for (const auto& band : {std::pair{INT64_MIN, int64_t{-1}}, std::pair{int64_t{-1}, INT64_MIN}}) {
    EXPECT_EQ(plan_with([&](FiaArgs& a) {
                a.sparse_mode = 4, a.pre_tokens = band.first, a.next_tokens = band.second;
                a.prompt = true;
              }),
              Status::kInvalid);
    EXPECT_NE(std::string(last_error_message()).find("pre_tokens + next_tokens"), std::string::npos)
        << last_error_message();
  }
  // A mask passed with modes 2-4 is the compressed one; IFA's (B, S) mask needs sparse_mode 0/1.
  std::vector<uint8_t> bs(2 * 16, 0);
  EXPECT_EQ(plan_with([&](FiaArgs& a) {
              a.sparse_mode = 3;
              a.atten_mask = TensorView::contiguous(bs.data(), DType::kBool, {2, 16});
            }),
            Status::kInvalid);
  EXPECT_NE(std::string(last_error_message()).find("sparse_mode 0"), std::string::npos)
      << last_error_message();
  for (int64_t mode : {0, 1}) {
    EXPECT_EQ(plan_with([&](FiaArgs& a) {
                a.sparse_mode = mode;
                a.atten_mask = TensorView::contiguous(bs.data(), DType::kBool, {2, 16});
              }),
              Status::kSuccess)
        << "mode " << mode << ": " << last_error_message();
  }
}

// aclnnFusedInferAttentionScoreV5's additions (docs/api.md): the start indices only when absent
// or empty, pse_type 0 only, each refused by name.
TEST(FiaValidate, V5ArgumentsRefusedByName) {
  expect_refused([](FiaArgs& a) { a.q_start_idx = std::vector<int64_t>{0}; }, Status::kInvalid,
                 "q_start_idx");
  expect_refused(
      [](FiaArgs& a) {
        a.kv_start_idx = std::vector<int64_t>{0, 7};
      },
      Status::kInvalid, "kv_start_idx");
  expect_refused([](FiaArgs& a) { a.pse_type = 1; }, Status::kInvalid, "pse_type");
  expect_refused([](FiaArgs& a) { a.pse_type = -3; }, Status::kInvalid, "pse_type");
  FiaCaseData data(base_case());
  FiaArgs a = data.call();
  a.q_start_idx = std::vector<int64_t>{};
  a.kv_start_idx = std::vector<int64_t>{};
  std::unique_ptr<FiaPlan> plan;
  EXPECT_EQ(FiaPlan::create(a, &plan), Status::kSuccess) << last_error_message();
}

// The decode branch (D4) ignores the query lengths; PFA (prompt) applies them.
TEST(FiaValidate, PromptSubsetPlansAndRuns) {
  FiaCaseData data(base_case());
  FiaArgs a = data.call();
  a.prompt = true;
  EXPECT_EQ(prompt_flash_attention(a), Status::kSuccess) << last_error_message();
  a.prompt = false;
  EXPECT_EQ(prompt_flash_attention(a), Status::kSuccess) << last_error_message();
  EXPECT_EQ(fused_infer_attention_score(a), Status::kSuccess) << last_error_message();
}

}  // namespace
}  // namespace kvflash::testing
