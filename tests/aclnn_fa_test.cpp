// aclnnFlashAttentionScore and aclnnFlashAttentionVarLenScore through the C API: BSND / BSH / BNSD
// and TND calls of the FIA case builder against the PromptFlashAttention oracle (the output and
// the softmax max / sum), softmaxOutOut and paddingMaskOptional not looked at, the refusals by
// name and null outputs with *executor = nullptr, and VarLen's [N, T, 8] outputs refused.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_flash_attention_score.h"
#include "fia_reference.hpp"
#include "support/acl_tensors.hpp"
#include "support/fia_cases.hpp"
#include "support/fia_max_sum.hpp"

namespace {

using kvflash::DType;
using kvflash::TensorView;
using kvflash::testing::AclTensors;
using kvflash::testing::FiaCase;
using kvflash::testing::FiaCaseData;
using kvflash::testing::FiaLayout;
using kvflash::testing::FiaMask;
using kvflash::testing::FiaMaxSum;

aclOpExecutor* const kSentinel = reinterpret_cast<aclOpExecutor*>(uintptr_t{0xdead0});
std::string recent() { return aclGetRecentErrMsg(); }

struct Call {
  Call(const kvflash::reference::FiaCall& c, FiaMaxSum* ms) : call(c) {
    q = t.make(c.query), k = t.make(c.key[0]), v = t.make(c.value[0]);
    mask = t.make(c.atten_mask);
    max = t.make(ms->max_view()), sum = t.make(ms->sum_view());
    out = t.make(c.attention_out);
    layout = c.input_layout;
    varlen = layout == "TND";
    if (varlen) {
      qlen = t.array(c.actual_seq_lengths);
      kvlen = t.array(c.actual_seq_lengths_kv);
    }
  }
  aclnnStatus phase1(uint64_t* ws, aclOpExecutor** ex) {
    const kvflash::reference::FiaCall& c = call;
    if (varlen) {
      return aclnnFlashAttentionVarLenScoreGetWorkspaceSize(
          q, k, v, pse, drop, padding, mask, prefix, qlen, kvlen, c.scale, keep_prob,
          c.pre_tokens, c.next_tokens, c.num_heads, layout.data(), 0, c.sparse_mode, max, sum,
          softmax_out, out, ws, ex);
    }
    return aclnnFlashAttentionScoreGetWorkspaceSize(
        q, k, v, pse, drop, padding, mask, prefix, c.scale, keep_prob, c.pre_tokens,
        c.next_tokens, c.num_heads, layout.data(), 0, c.sparse_mode, max, sum, softmax_out, out, ws,
        ex);
  }
  aclError run() {
    uint64_t size = 0;
    aclOpExecutor* ex = nullptr;
    const aclnnStatus s = phase1(&size, &ex);
    if (s != ACLNN_SUCCESS) return s;
    std::vector<std::byte> ws(size);
    const aclnnStatus s2 = varlen ? aclnnFlashAttentionVarLenScore(ws.data(), size, ex, nullptr)
                                  : aclnnFlashAttentionScore(ws.data(), size, ex, nullptr);
    if (s2 != ACLNN_SUCCESS) return s2;
    return aclrtSynchronizeStream(nullptr);
  }
  const kvflash::reference::FiaCall& call;
  AclTensors t;
  aclTensor *q, *k, *v, *mask, *max, *sum, *out, *pse = nullptr, *drop = nullptr,
                                                 *padding = nullptr, *softmax_out = nullptr;
  aclIntArray *qlen = nullptr, *kvlen = nullptr, *prefix = nullptr;
  std::string layout;
  double keep_prob = 1.0;
  bool varlen = false;
};

FiaCase fa_case(FiaLayout lay, DType dt) {
  FiaCase c;
  c.prompt = true, c.layout = lay, c.q_dtype = c.kv_dtype = c.out_dtype = dt;
  c.num_heads = 4, c.num_kv_heads = 2, c.head_dim = 32;
  c.sparse_mode = 3, c.mask = FiaMask::kCompressed;
  if (lay == FiaLayout::kTnd) {
    c.q_lens = {4, 1, 6}, c.kv_lens = {8, 3, 6};
  } else {
    c.q_lens = {5, 5}, c.kv_lens = {9, 9};
    c.kv_slack = 0, c.pass_q_lens = false, c.pass_kv_lens = false;
  }
  return c;
}

TEST(AclnnFlashAttentionScore, MatchesThePromptReference) {
  const FiaLayout lays[] = {FiaLayout::kBsnd, FiaLayout::kBsh, FiaLayout::kBnsd, FiaLayout::kTnd};
  const DType dts[] = {DType::kFloat16, DType::kBFloat16, DType::kFloat32, DType::kFloat32};
  for (int i = 0; i < 4; ++i) {
    FiaCaseData data(fa_case(lays[i], dts[i]));
    const auto ref = kvflash::reference::fia_reference(data.call());
    FiaMaxSum ms(data);
    Call call(data.call(), &ms);
    call.padding = call.q;      // reserved upstream: not looked at
    call.softmax_out = call.q;  // reserved upstream: not written
    ASSERT_EQ(call.run(), ACL_SUCCESS) << data.spec().name() << ": " << recent();
    EXPECT_TRUE(kvflash::testing::compare_fia_output(data.spec().name(), data.call(), ref));
    EXPECT_TRUE(kvflash::testing::compare_fia_max_sum(data, ref, ms));
  }
}

TEST(AclnnFlashAttentionScore, RefusalsAndNullOutputs) {
  FiaCaseData data(fa_case(FiaLayout::kTnd, DType::kFloat16));
  struct Bad {
    const char* what;
    void (*set)(Call&);
    aclnnStatus status;
    const char* message;
  };
  static char sbh[] = "SBH";
  const Bad bads[] = {
      {"dropout", [](Call& c) { c.keep_prob = 0.5; }, ACLNN_ERR_PARAM_INVALID, "(dropout)"},
      {"drop mask", [](Call& c) { c.drop = c.mask; }, ACLNN_ERR_PARAM_INVALID,
       "dropout_mask (dropout) is not supported"},
      {"pse", [](Call& c) { c.pse = c.q; }, ACLNN_ERR_PARAM_INVALID, "pse (FlashAttentionScore"},
      {"prefix",
       [](Call& c) {
         c.prefix = c.t.array(std::vector<int64_t>{1, 1, 1});
       },
       ACLNN_ERR_PARAM_INVALID, "prefix (the prefix sparse modes 5 and 6)"},
      {"SBH", [](Call& c) { c.layout = sbh; }, ACLNN_ERR_PARAM_INVALID,
       "input_layout SBH is not supported"},
      {"null max", [](Call& c) { c.max = nullptr; }, ACLNN_ERR_PARAM_NULLPTR, "softmaxMaxOut"},
      {"null out", [](Call& c) { c.out = nullptr; }, ACLNN_ERR_PARAM_NULLPTR, "attentionOutOut"},
      {"no lengths", [](Call& c) { c.qlen = nullptr; }, ACLNN_ERR_PARAM_INVALID,
       "TND needs actual_seq_qlen and actual_seq_kvlen"},
  };
  for (const Bad& b : bads) {
    FiaMaxSum ms(data);
    Call call(data.call(), &ms);
    b.set(call);
    uint64_t ws = 0;
    aclOpExecutor* ex = kSentinel;
    EXPECT_EQ(call.phase1(&ws, &ex), b.status) << b.what;
    EXPECT_EQ(ex, nullptr) << b.what;
    EXPECT_NE(recent().find(b.message), std::string::npos) << b.what << ": " << recent();
  }
  // VarLen's document writes softmaxMaxOut [N, T, 8]; kvflash writes torch_npu's [T, N, 8].
  FiaMaxSum ms(data);
  Call call(data.call(), &ms);
  const int64_t T = data.rows(), N = data.spec().num_heads;
  std::vector<float> nt(static_cast<size_t>(N * T * 8));
  call.max = call.t.make(TensorView::contiguous(nt.data(), DType::kFloat32, {N, T, 8}));
  uint64_t ws = 0;
  aclOpExecutor* ex = kSentinel;
  EXPECT_EQ(call.phase1(&ws, &ex), ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(recent().find("softmax_max must be fp32 [" + std::to_string(T) + "," +
                          std::to_string(N) + ",8]"),
            std::string::npos)
      << recent();
}

}  // namespace
