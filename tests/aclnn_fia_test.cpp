// aclnnFusedInferAttentionScoreV3/V4 and aclnnPromptFlashAttention{,V2,V3} through the C API:
// agreement with the fp64 reference on cases of the shared list, V3 as V4 without its new
// arguments, PFA as FIA's prompt subset, null arguments (161001 naming the aclnn parameter,
// *executor = nullptr), D1's refusals and the fp32 output refusal (161002).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "aclnnop/aclnn_fused_infer_attention_score_v3.h"
#include "aclnnop/aclnn_fused_infer_attention_score_v4.h"
#include "aclnnop/aclnn_prompt_flash_attention.h"
#include "aclnnop/aclnn_prompt_flash_attention_v2.h"
#include "aclnnop/aclnn_prompt_flash_attention_v3.h"
#include "fia_reference.hpp"
#include "support/fia_cases.hpp"

namespace {

using kvflash::TensorView;
using kvflash::reference::FiaCall;
using kvflash::testing::FiaCase;
using kvflash::testing::FiaCaseData;

aclOpExecutor* const kSentinel = reinterpret_cast<aclOpExecutor*>(uintptr_t{0xdead0});

std::string recent() { return aclGetRecentErrMsg(); }

// The acl handles of one call (from a case's views), destroyed at the end.
class Call {
 public:
  explicit Call(const FiaCall& a) : a_(a) {
    query = make(a.query);
    key = list(a.key);
    value = list(a.value);
    pse = opt(a.pse_shift);
    mask = opt(a.atten_mask);
    asl = ints(a.actual_seq_lengths);
    askv = ints(a.actual_seq_lengths_kv);
    qs2 = opt(a.quant_scale2);
    qo2 = opt(a.quant_offset2);
    aqs = opt(a.antiquant_scale);
    aqo = opt(a.antiquant_offset);
    bt = opt(a.block_table);
    qpad = opt(a.query_padding_size);
    kvpad = opt(a.kv_padding_size);
    kaqs = opt(a.key_antiquant_scale);
    kaqo = opt(a.key_antiquant_offset);
    vaqs = opt(a.value_antiquant_scale);
    vaqo = opt(a.value_antiquant_offset);
    kp = opt(a.key_shared_prefix);
    vp = opt(a.value_shared_prefix);
    spl = ints(a.actual_shared_prefix_len);
    qr = opt(a.query_rope);
    kr = opt(a.key_rope);
    sink = opt(a.learnable_sink);
    out = make(a.attention_out);
    lse = opt(a.softmax_lse);
    layout = a.input_layout;
  }
  ~Call() {
    for (aclTensorList* l : lists_) EXPECT_EQ(aclDestroyTensorList(l), ACLNN_SUCCESS);
    for (aclTensor* t : owned_) EXPECT_EQ(aclDestroyTensor(t), ACLNN_SUCCESS);
    for (aclIntArray* i : arrays_) EXPECT_EQ(aclDestroyIntArray(i), ACLNN_SUCCESS);
  }

  aclnnStatus v4(uint64_t* ws, aclOpExecutor** ex) {
    return aclnnFusedInferAttentionScoreV4GetWorkspaceSize(
        query, key, value, pse, mask, asl, askv, deq1, nullptr, nullptr, qs2, qo2, aqs, aqo, bt,
        qpad, kvpad, kaqs, kaqo, vaqs, vaqo, kp, vp, spl, qr, kr, nullptr, nullptr, sink,
        a_.num_heads, a_.scale_value, a_.pre_tokens, a_.next_tokens, layout.data(),
        a_.num_key_value_heads, a_.sparse_mode, a_.inner_precise, a_.block_size, a_.antiquant_mode,
        lse_flag, a_.key_antiquant_mode, a_.value_antiquant_mode, 0, out, lse, ws, ex);
  }
  aclnnStatus v3(uint64_t* ws, aclOpExecutor** ex) {
    return aclnnFusedInferAttentionScoreV3GetWorkspaceSize(
        query, key, value, pse, mask, asl, askv, deq1, nullptr, nullptr, qs2, qo2, aqs, aqo, bt,
        qpad, kvpad, kaqs, kaqo, vaqs, vaqo, kp, vp, spl, qr, kr, nullptr, a_.num_heads,
        a_.scale_value, a_.pre_tokens, a_.next_tokens, layout.data(), a_.num_key_value_heads,
        a_.sparse_mode, a_.inner_precise, a_.block_size, a_.antiquant_mode, lse_flag,
        a_.key_antiquant_mode, a_.value_antiquant_mode, out, lse, ws, ex);
  }
  aclnnStatus pfa_v3(uint64_t* ws, aclOpExecutor** ex) {
    return aclnnPromptFlashAttentionV3GetWorkspaceSize(
        query, make(a_.key[0]), make(a_.value[0]), pse, mask, asl, askv, deq1, nullptr, nullptr,
        qs2, qo2, a_.num_heads, a_.scale_value, a_.pre_tokens, a_.next_tokens, layout.data(),
        a_.num_key_value_heads, a_.sparse_mode, a_.inner_precise, out, ws, ex);
  }

  aclTensor *query, *pse, *mask, *qs2, *qo2, *aqs, *aqo, *bt, *qpad, *kvpad, *kaqs, *kaqo, *vaqs,
      *vaqo, *kp, *vp, *qr, *kr, *sink, *out, *lse;
  aclTensor* deq1 = nullptr;
  aclTensorList *key, *value;
  aclIntArray *asl, *askv, *spl;
  std::string layout;
  bool lse_flag = false;

  aclTensor* make(const TensorView& v) {
    int64_t last = v.offset;
    for (int i = 0; i < v.rank; ++i) last += (v.shape[i] - 1) * v.strides[i];
    const int64_t storage = last + 1;
    aclTensor* t = aclCreateTensor(v.shape.data(), v.rank, static_cast<aclDataType>(v.dtype),
                                   v.strides.data(), v.offset, ACL_FORMAT_ND, &storage, 1, v.data);
    EXPECT_NE(t, nullptr) << recent();
    owned_.push_back(t);
    return t;
  }

 private:
  aclTensor* opt(const std::optional<TensorView>& v) { return v ? make(*v) : nullptr; }
  aclTensorList* list(const std::vector<TensorView>& vs) {
    std::vector<aclTensor*> ts;
    for (const TensorView& v : vs) ts.push_back(make(v));
    aclTensorList* l = aclCreateTensorList(ts.data(), ts.size());
    EXPECT_NE(l, nullptr) << recent();
    lists_.push_back(l);
    return l;
  }
  aclIntArray* ints(const std::optional<std::vector<int64_t>>& v) {
    if (!v) return nullptr;
    aclIntArray* a = aclCreateIntArray(v->data(), v->size());
    arrays_.push_back(a);
    return a;
  }
  FiaCall a_;
  std::vector<aclTensor*> owned_;
  std::vector<aclTensorList*> lists_;
  std::vector<aclIntArray*> arrays_;
};

enum class Entry { kV4, kV3, kPfaV3 };

aclnnStatus run(Call& c, Entry e) {
  uint64_t ws_size = 0;
  aclOpExecutor* ex = nullptr;
  aclnnStatus s = e == Entry::kV4   ? c.v4(&ws_size, &ex)
                  : e == Entry::kV3 ? c.v3(&ws_size, &ex)
                                    : c.pfa_v3(&ws_size, &ex);
  if (s != ACLNN_SUCCESS) return s;
  std::vector<std::byte> ws(ws_size);
  s = e == Entry::kV4   ? aclnnFusedInferAttentionScoreV4(ws.data(), ws_size, ex, nullptr)
      : e == Entry::kV3 ? aclnnFusedInferAttentionScoreV3(ws.data(), ws_size, ex, nullptr)
                        : aclnnPromptFlashAttentionV3(ws.data(), ws_size, ex, nullptr);
  if (s != ACLNN_SUCCESS) return s;
  return aclrtSynchronizeStream(nullptr);
}

// Cases FIA's aclnn entry points can express (FIA, not PFA; no fp32 output; a value D the kernel
// covers), every fifth of the list.
std::vector<FiaCase> acl_cases() {
  std::vector<FiaCase> out;
  int i = 0;
  for (const FiaCase& c : kvflash::testing::fia_cases_for_run()) {
    if (c.prompt || c.out_dtype == kvflash::DType::kFloat32 || c.dv() % 16 != 0) continue;
    if (i++ % 5 == 0) out.push_back(c);
  }
  return out;
}

TEST(AclnnFiaTest, V4MatchesReference) {
  int n = 0;
  for (const FiaCase& fc : acl_cases()) {
    FiaCaseData data(fc);
    const auto ref = kvflash::reference::fia_reference(data.call());
    Call c(data.call());
    c.lse_flag = data.call().softmax_lse_flag;
    ASSERT_EQ(run(c, fc.sink ? Entry::kV4 : (n % 2 ? Entry::kV3 : Entry::kV4)), ACLNN_SUCCESS)
        << fc.name() << ": " << recent();
    EXPECT_TRUE(kvflash::testing::compare_fia_output(fc.name(), data.call(), ref, nullptr,
                                                     fc.expect_mostly_empty));
    ++n;
  }
  EXPECT_GT(n, 10);
}

TEST(AclnnFiaTest, PfaV3IsFiaWithPrompt) {
  int n = 0;
  for (const FiaCase& fc : kvflash::testing::fia_cases_for_run()) {
    const bool pfa_args = fc.prompt && !fc.paged && !fc.list_mode && !fc.lse && !fc.sink &&
                          fc.rope_dim == 0 && fc.prefix_len == 0 && fc.q_padding < 0 &&
                          fc.kv_padding < 0 && fc.kv_dtype != kvflash::DType::kInt8 &&
                          fc.out_dtype != kvflash::DType::kFloat32 && fc.dv() % 16 == 0;
    if (!pfa_args) continue;
    FiaCaseData data(fc);
    const auto ref = kvflash::reference::fia_reference(data.call());
    Call c(data.call());
    ASSERT_EQ(run(c, Entry::kPfaV3), ACLNN_SUCCESS) << fc.name() << ": " << recent();
    EXPECT_TRUE(kvflash::testing::compare_fia_output(fc.name(), data.call(), ref, nullptr,
                                                     fc.expect_mostly_empty));
    if (++n == 6) break;
  }
  EXPECT_GT(n, 0);
}

FiaCase small_case() {
  FiaCase c;
  c.num_heads = 4, c.num_kv_heads = 2, c.head_dim = 64;
  c.q_lens = {5, 3}, c.kv_lens = {9, 7};
  c.sparse_mode = 3, c.mask = kvflash::testing::FiaMask::kCompressed, c.lse = true;
  return c;
}

TEST(AclnnFiaTest, NullArgumentsAre161001WithNullExecutor) {
  FiaCaseData data(small_case());
  auto expect_null = [&](auto mutate, const char* what) {
    Call c(data.call());
    c.lse_flag = true;
    mutate(c);
    uint64_t ws = 7;
    aclOpExecutor* ex = kSentinel;
    EXPECT_EQ(c.v4(&ws, &ex), ACLNN_ERR_PARAM_NULLPTR) << what;
    EXPECT_EQ(ex, nullptr) << what;
    EXPECT_NE(recent().find(what), std::string::npos) << recent();
  };
  expect_null([](Call& c) { c.query = nullptr; }, "query");
  expect_null([](Call& c) { c.key = nullptr; }, "key");
  expect_null([](Call& c) { c.out = nullptr; }, "attentionOut");
  expect_null([](Call& c) { c.lse = nullptr; }, "softmaxLse");
  Call c(data.call());
  EXPECT_EQ(c.v4(nullptr, nullptr), ACLNN_ERR_PARAM_NULLPTR);
}

TEST(AclnnFiaTest, RefusedFeaturesAre161002NamingThem) {
  FiaCaseData data(small_case());
  Call c(data.call());
  c.lse_flag = true;
  c.deq1 = c.make(data.call().query);
  uint64_t ws = 0;
  aclOpExecutor* ex = kSentinel;
  EXPECT_EQ(c.v4(&ws, &ex), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(ex, nullptr);
  EXPECT_NE(recent().find("full int8 quantisation"), std::string::npos) << recent();
  Call p(data.call());
  p.deq1 = p.make(data.call().query);
  EXPECT_EQ(p.pfa_v3(&ws, &ex), ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(recent().find("dequant_scale1"), std::string::npos) << recent();
}

TEST(AclnnFiaTest, Fp32AttentionOutIs161002) {
  FiaCase fc = small_case();
  fc.out_dtype = kvflash::DType::kFloat32;
  FiaCaseData data(fc);
  Call c(data.call());
  c.lse_flag = true;
  uint64_t ws = 0;
  aclOpExecutor* ex = kSentinel;
  EXPECT_EQ(c.v4(&ws, &ex), ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(recent().find("fp32"), std::string::npos) << recent();
}

}  // namespace
