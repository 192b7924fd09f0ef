// FlashAttentionScore (kvflash/flash_attention_score.hpp): FlashAttentionScore's calls over the
// FIA case builder (support/fia_cases.hpp: every layout it maps, GQA, a smaller value head dim,
// masks of modes 0-4, fp16 / bf16 / fp32) against the PromptFlashAttention oracle, its softmax
// max / sum against the oracle's, the no-mask rule, varlen's left-out trailing batches, the
// refusals by name, and the plan's match of a run.
#include "kvflash/flash_attention_score.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "fia_reference.hpp"
#include "support/fia_cases.hpp"
#include "support/fia_max_sum.hpp"
#include "support/workspace_buffer.hpp"

namespace kvflash::testing {
namespace {

// The FlashAttentionScore call of a (prompt) FIA case: the same tensors, attributes and lengths.
FlashAttentionScoreArgs fa_args(const reference::FiaCall& c, FiaMaxSum* ms) {
  FlashAttentionScoreArgs a;
  a.query = c.query;
  a.key = c.key[0];
  a.value = c.value[0];
  a.atten_mask = c.atten_mask;
  if (c.input_layout == "TND") {
    a.actual_seq_qlen = c.actual_seq_lengths;
    a.actual_seq_kvlen = c.actual_seq_lengths_kv;
  }
  a.scale = c.scale;
  a.pre_tokens = c.pre_tokens, a.next_tokens = c.next_tokens;
  a.head_num = c.num_heads;
  a.input_layout = c.input_layout;
  a.sparse_mode = c.sparse_mode;
  a.softmax_max = ms->max_view();
  a.softmax_sum = ms->sum_view();
  a.attention_out = c.attention_out;
  return a;
}

Status run(const FlashAttentionScoreArgs& a) {
  std::unique_ptr<FlashAttentionScorePlan> plan;
  if (const Status s = FlashAttentionScorePlan::create(a, &plan); s != Status::kSuccess) return s;
  WorkspaceBuffer ws(plan->workspace_size());
  return plan->run(a, ws.data(), ws.size());
}

std::vector<FiaCase> fa_cases() {
  std::vector<FiaCase> cases;
  const DType dtypes[] = {DType::kFloat16, DType::kBFloat16, DType::kFloat32};
  int i = 0;
  for (FiaLayout lay : {FiaLayout::kBsh, FiaLayout::kBsnd, FiaLayout::kBnsd, FiaLayout::kTnd}) {
    for (int64_t mode : {0, 1, 2, 3, 4}) {
      FiaCase c;
      c.prompt = true;
      c.layout = lay;
      c.q_dtype = c.kv_dtype = c.out_dtype = dtypes[i++ % 3];
      c.num_heads = 4, c.num_kv_heads = lay == FiaLayout::kBsnd ? 1 : 2, c.head_dim = 32;
      if (mode == 3) c.value_dim = 16;  // value's D below the key's
      c.sparse_mode = mode;
      if (lay == FiaLayout::kTnd) {
        c.q_lens = {3, 1, 7}, c.kv_lens = {9, 4, 7};
      } else {
        c.q_lens = {6, 6}, c.kv_lens = {11, 11};
        c.kv_slack = 0, c.pass_q_lens = false, c.pass_kv_lens = false;
      }
      if (mode >= 2) c.mask = FiaMask::kCompressed;
      if (mode == 1) c.mask = lay == FiaLayout::kTnd ? FiaMask::kFull2 : FiaMask::kFull4;
      if (mode == 4) c.pre_tokens = 3, c.next_tokens = 1;
      if (mode == 0) c.mask = FiaMask::kFull2, c.pre_tokens = 5, c.next_tokens = 2;
      cases.push_back(c);
    }
  }
  return cases;
}

TEST(FlashAttentionScore, MatchesThePromptReference) {
  for (const FiaCase& c : fa_cases()) {
    FiaCaseData data(c);
    const reference::FiaReference ref = reference::fia_reference(data.call());
    for (int threads : {1, 3}) {
      FiaMaxSum ms(data);
      FlashAttentionScoreArgs a = fa_args(data.call(), &ms);
      a.num_threads = threads;
      data.poison_outputs();
      ASSERT_EQ(run(a), Status::kSuccess) << c.name() << ": " << last_error_message();
      EXPECT_TRUE(compare_fia_output(c.name(), data.call(), ref, nullptr, true));
      EXPECT_TRUE(compare_fia_max_sum(data, ref, ms));
    }
  }
}

// Without a mask, sparse_mode and the band do not apply (upstream: "all tokens are
// calculated"): mode 3 and a narrow band give mode 0's bits.
TEST(FlashAttentionScore, WithoutAMaskEveryPositionIsAttended) {
  FiaCase c;
  c.prompt = true, c.layout = FiaLayout::kTnd, c.num_heads = 2, c.num_kv_heads = 2;
  c.q_lens = {4, 6}, c.kv_lens = {5, 6};
  FiaCaseData data(c);
  FiaMaxSum ms0(data), ms3(data);
  FlashAttentionScoreArgs a = fa_args(data.call(), &ms0);
  ASSERT_EQ(run(a), Status::kSuccess) << last_error_message();
  const TensorView& o = data.call().attention_out;
  const size_t bytes = static_cast<size_t>(o.numel()) * dtype_size(o.dtype);
  const std::vector<uint8_t> full(static_cast<uint8_t*>(o.data),
                                  static_cast<uint8_t*>(o.data) + bytes);
  FlashAttentionScoreArgs b = fa_args(data.call(), &ms3);
  b.sparse_mode = 3, b.pre_tokens = 0, b.next_tokens = 0;
  data.poison_outputs();
  ASSERT_EQ(run(b), Status::kSuccess) << last_error_message();
  EXPECT_EQ(std::memcmp(o.data, full.data(), bytes), 0);
  EXPECT_EQ(ms0.max, ms3.max);
}

// Trailing entries 0 in both length lists are batches left out (vllm-ascend pads
// actual_seq_qlen with a 0 for graph padding): the rows past the last length are padding.
TEST(FlashAttentionScore, TrailingZeroLengthsAreLeftOutBatches) {
  FiaCase c;
  c.prompt = true, c.layout = FiaLayout::kTnd, c.num_heads = 2, c.num_kv_heads = 1;
  c.q_lens = {3, 5}, c.kv_lens = {3, 5}, c.q_slack = 2;
  c.sparse_mode = 3, c.mask = FiaMask::kCompressed;
  FiaCaseData data(c);
  const reference::FiaReference ref = reference::fia_reference(data.call());
  FiaMaxSum ms(data);
  FlashAttentionScoreArgs a = fa_args(data.call(), &ms);
  a.actual_seq_qlen->push_back(0);
  a.actual_seq_qlen->push_back(0);
  a.actual_seq_kvlen->push_back(0);
  a.actual_seq_kvlen->push_back(0);
  ASSERT_EQ(run(a), Status::kSuccess) << last_error_message();
  EXPECT_TRUE(compare_fia_output(c.name(), data.call(), ref));
  EXPECT_TRUE(compare_fia_max_sum(data, ref, ms));
}

struct Rule {
  const char* what;
  void (*mutate)(FlashAttentionScoreArgs&);
  Status status;
  const char* message;
};

std::vector<uint8_t>& scratch() {
  static std::vector<uint8_t> s(4096);
  return s;
}

const Rule kRules[] = {
    {"dropout", [](FlashAttentionScoreArgs& a) { a.keep_prob = 0.9; }, Status::kInvalid,
     "keep_prob 0.900000 < 1 (dropout) is not supported"},
    {"keep_prob 0", [](FlashAttentionScoreArgs& a) { a.keep_prob = 0.0; }, Status::kInvalid,
     "keep_prob must be in (0, 1]"},
    {"drop mask",
     [](FlashAttentionScoreArgs& a) {
       a.drop_mask = TensorView::contiguous(scratch().data(), DType::kUInt8, {8});
     },
     Status::kInvalid, "dropout_mask (dropout) is not supported"},
    {"pse", [](FlashAttentionScoreArgs& a) { a.real_shift = a.query; }, Status::kInvalid,
     "pse (FlashAttentionScore adds it before the scale"},
    {"prefix", [](FlashAttentionScoreArgs& a) { a.prefix = std::vector<int64_t>{1}; },
     Status::kInvalid, "prefix (the prefix sparse modes 5 and 6)"},
    {"mode 6", [](FlashAttentionScoreArgs& a) { a.sparse_mode = 6; }, Status::kInvalid,
     "sparse_mode 6 (prefix) is not supported"},
    {"mode 7", [](FlashAttentionScoreArgs& a) { a.sparse_mode = 7; }, Status::kInvalid,
     "sparse_mode 7 (varlen outer split)"},
    {"mode 9", [](FlashAttentionScoreArgs& a) { a.sparse_mode = 9; }, Status::kInvalid,
     "sparse_mode must be in [0, 8], got 9"},
    {"SBH", [](FlashAttentionScoreArgs& a) { a.input_layout = "sbh"; }, Status::kInvalid,
     "input_layout SBH is not supported"},
    {"layout", [](FlashAttentionScoreArgs& a) { a.input_layout = "NTD"; }, Status::kInvalid,
     "input_layout must be BSH, SBH, BSND, BNSD or TND, got \"NTD\""},
    {"per-head mask",
     [](FlashAttentionScoreArgs& a) {
       a.atten_mask = TensorView::contiguous(scratch().data(), DType::kBool, {1, 2, 6, 11});
     },
     Status::kInvalid, "a per-head atten_mask (dim 1 = 2 > 1)"},
    {"lengths with BSND",
     [](FlashAttentionScoreArgs& a) {
       a.actual_seq_qlen = a.actual_seq_kvlen = std::vector<int64_t>{6, 12};
     },
     Status::kInvalid, "actual_seq_qlen and actual_seq_kvlen are for input_layout TND"},
    {"head_num", [](FlashAttentionScoreArgs& a) { a.head_num = 0; }, Status::kInvalid,
     "head_num must be >= 1"},
    // FusedInferAttentionScore's refusal of the mapped call, in this operator's names.
    {"head_num vs key heads", [](FlashAttentionScoreArgs& a) { a.head_num = 3; }, Status::kInvalid,
     "[flash_attention_score] head_num (3) must be a multiple of key's head count (2)"},
    {"null softmax_max", [](FlashAttentionScoreArgs& a) { a.softmax_max.data = nullptr; },
     Status::kNullPtr, "softmax_max is null"},
    {"null query", [](FlashAttentionScoreArgs& a) { a.query.data = nullptr; }, Status::kNullPtr,
     "query is null"},
    {"max shape", [](FlashAttentionScoreArgs& a) { a.softmax_max.shape[3] = 1; }, Status::kInvalid,
     "softmax_max must be fp32 [2,2,6,8]"},
    {"query dtype", [](FlashAttentionScoreArgs& a) { a.query.dtype = DType::kInt32; },
     Status::kInvalid, "query dtype must be fp16 or bf16 or fp32"},
};

TEST(FlashAttentionScore, RefusalsAndRulesNameTheirArgument) {
  FiaCase c;
  c.prompt = true, c.num_heads = 2, c.num_kv_heads = 2, c.q_lens = {6, 6}, c.kv_lens = {11, 11};
  c.kv_slack = 0, c.pass_q_lens = false, c.pass_kv_lens = false;
  FiaCaseData data(c);
  for (const Rule& r : kRules) {
    FiaMaxSum ms(data);
    FlashAttentionScoreArgs a = fa_args(data.call(), &ms);
    ASSERT_EQ(run(a), Status::kSuccess) << last_error_message();
    r.mutate(a);
    std::unique_ptr<FlashAttentionScorePlan> plan;
    EXPECT_EQ(FlashAttentionScorePlan::create(a, &plan), r.status) << r.what;
    EXPECT_NE(std::string(last_error_message()).find(r.message), std::string::npos)
        << r.what << ": " << last_error_message();
    EXPECT_EQ(plan, nullptr);
  }
  // TND needs both lists, equally long.
  FiaCase t;
  t.prompt = true, t.layout = FiaLayout::kTnd, t.q_lens = {2, 3}, t.kv_lens = {2, 3};
  FiaCaseData td(t);
  FiaMaxSum ms(td);
  FlashAttentionScoreArgs a = fa_args(td.call(), &ms);
  a.actual_seq_kvlen.reset();
  EXPECT_EQ(run(a), Status::kInvalid);
  EXPECT_NE(
      std::string(last_error_message()).find("TND needs actual_seq_qlen and actual_seq_kvlen"),
      std::string::npos);
  a = fa_args(td.call(), &ms);
  a.actual_seq_kvlen->push_back(9);
  EXPECT_EQ(run(a), Status::kInvalid);
  EXPECT_NE(std::string(last_error_message()).find("must be equally long"), std::string::npos);
}

TEST(FlashAttentionScore, PlanMatchesRunsAndReportsItsWorkspace) {
  FiaCase c;
  c.prompt = true, c.layout = FiaLayout::kTnd, c.num_heads = 2, c.q_lens = {2, 3},
  c.kv_lens = {4, 3};
  FiaCaseData d1(c), d2(c);
  const reference::FiaReference ref = reference::fia_reference(d2.call());
  FiaMaxSum m1(d1), m2(d2);
  const FlashAttentionScoreArgs a1 = fa_args(d1.call(), &m1);
  FlashAttentionScoreArgs a2 = fa_args(d2.call(), &m2);
  std::unique_ptr<FlashAttentionScorePlan> plan;
  ASSERT_EQ(FlashAttentionScorePlan::create(a1, &plan), Status::kSuccess) << last_error_message();
  WorkspaceBuffer ws(plan->workspace_size());
  ASSERT_EQ(plan->run(a2, ws.data(), ws.size()), Status::kSuccess) << last_error_message();
  EXPECT_TRUE(compare_fia_output(c.name(), d2.call(), ref));
  EXPECT_EQ(plan->status(ws.data()), Status::kSuccess);
  a2.actual_seq_qlen = std::vector<int64_t>{1, 5};
  EXPECT_EQ(plan->run(a2, ws.data(), ws.size()), Status::kInvalid);
  EXPECT_NE(std::string(last_error_message()).find("actual_seq_qlen"), std::string::npos)
      << last_error_message();
  std::string f1, f2;
  ASSERT_EQ(FlashAttentionScorePlan::fingerprint(a1, &f1), Status::kSuccess);
  ASSERT_EQ(FlashAttentionScorePlan::fingerprint(a2, &f2), Status::kSuccess);
  EXPECT_NE(f1, f2);
  EXPECT_EQ(flash_attention_score(a1), Status::kSuccess);
}

}  // namespace
}  // namespace kvflash::testing
