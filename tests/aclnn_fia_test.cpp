// aclnnFusedInferAttentionScore{,V2,V3,V4,V5} and aclnnPromptFlashAttention{,V2,V3} through the C
// API: agreement with the fp64 reference on cases of the shared list (each FIA version on the cases
// its arguments express), PFA as FIA's prompt subset, the mask rules (the compressed mask's three
// shapes, the decode branch without a mask) through every version, null arguments (161001 naming
// the aclnn parameter, *executor = nullptr), D1's refusals, V5's refused arguments and the fp32
// output refusal (161002).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "aclnnop/aclnn_fused_infer_attention_score.h"
#include "aclnnop/aclnn_fused_infer_attention_score_v2.h"
#include "aclnnop/aclnn_fused_infer_attention_score_v3.h"
#include "aclnnop/aclnn_fused_infer_attention_score_v4.h"
#include "aclnnop/aclnn_fused_infer_attention_score_v5.h"
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

  aclnnStatus v5(uint64_t* ws, aclOpExecutor** ex) {
    return aclnnFusedInferAttentionScoreV5GetWorkspaceSize(
        query, key, value, pse, mask, asl, askv, deq1, nullptr, nullptr, qs2, qo2, aqs, aqo, bt,
        qpad, kvpad, kaqs, kaqo, vaqs, vaqo, kp, vp, spl, qr, kr, nullptr, nullptr, sink, q_start,
        kv_start, a_.num_heads, a_.scale, a_.pre_tokens, a_.next_tokens, lay(),
        a_.num_key_value_heads, a_.sparse_mode, a_.inner_precise, a_.block_size, a_.antiquant_mode,
        lse_flag, a_.key_antiquant_mode, a_.value_antiquant_mode, 0, pse_type, out, lse, ws, ex);
  }
  aclnnStatus v4(uint64_t* ws, aclOpExecutor** ex) {
    return aclnnFusedInferAttentionScoreV4GetWorkspaceSize(
        query, key, value, pse, mask, asl, askv, deq1, nullptr, nullptr, qs2, qo2, aqs, aqo, bt,
        qpad, kvpad, kaqs, kaqo, vaqs, vaqo, kp, vp, spl, qr, kr, nullptr, nullptr, sink,
        a_.num_heads, a_.scale, a_.pre_tokens, a_.next_tokens, lay(), a_.num_key_value_heads,
        a_.sparse_mode, a_.inner_precise, a_.block_size, a_.antiquant_mode, lse_flag,
        a_.key_antiquant_mode, a_.value_antiquant_mode, 0, out, lse, ws, ex);
  }
  aclnnStatus v3(uint64_t* ws, aclOpExecutor** ex) {
    return aclnnFusedInferAttentionScoreV3GetWorkspaceSize(
        query, key, value, pse, mask, asl, askv, deq1, nullptr, nullptr, qs2, qo2, aqs, aqo, bt,
        qpad, kvpad, kaqs, kaqo, vaqs, vaqo, kp, vp, spl, qr, kr, nullptr, a_.num_heads,
        a_.scale, a_.pre_tokens, a_.next_tokens, lay(), a_.num_key_value_heads,
        a_.sparse_mode, a_.inner_precise, a_.block_size, a_.antiquant_mode, lse_flag,
        a_.key_antiquant_mode, a_.value_antiquant_mode, out, lse, ws, ex);
  }
  aclnnStatus v2(uint64_t* ws, aclOpExecutor** ex) {
    return aclnnFusedInferAttentionScoreV2GetWorkspaceSize(
        query, key, value, pse, mask, asl, askv, deq1, nullptr, nullptr, qs2, qo2, aqs, aqo, bt,
        qpad, kvpad, kaqs, kaqo, vaqs, vaqo, kp, vp, spl, a_.num_heads, a_.scale,
        a_.pre_tokens, a_.next_tokens, lay(), a_.num_key_value_heads, a_.sparse_mode,
        a_.inner_precise, a_.block_size, a_.antiquant_mode, lse_flag, a_.key_antiquant_mode,
        a_.value_antiquant_mode, out, lse, ws, ex);
  }
  aclnnStatus v1(uint64_t* ws, aclOpExecutor** ex) {
    return aclnnFusedInferAttentionScoreGetWorkspaceSize(
        query, key, value, pse, mask, asl, askv, deq1, nullptr, nullptr, qs2, qo2, aqs, aqo, bt,
        qpad, kvpad, a_.num_heads, a_.scale, a_.pre_tokens, a_.next_tokens, lay(),
        a_.num_key_value_heads, a_.sparse_mode, a_.inner_precise, a_.block_size, a_.antiquant_mode,
        lse_flag, out, lse, ws, ex);
  }
  aclnnStatus pfa_v2(uint64_t* ws, aclOpExecutor** ex) {
    return aclnnPromptFlashAttentionV2GetWorkspaceSize(
        query, make(a_.key[0]), make(a_.value[0]), pse, mask, asl, askv, deq1, nullptr, nullptr,
        qs2, qo2, a_.num_heads, a_.scale, a_.pre_tokens, a_.next_tokens, lay(),
        a_.num_key_value_heads, a_.sparse_mode, out, ws, ex);
  }
  aclnnStatus pfa_v3(uint64_t* ws, aclOpExecutor** ex) {
    return aclnnPromptFlashAttentionV3GetWorkspaceSize(
        query, make(a_.key[0]), make(a_.value[0]), pse, mask, asl, askv, deq1, nullptr, nullptr,
        qs2, qo2, a_.num_heads, a_.scale, a_.pre_tokens, a_.next_tokens, lay(),
        a_.num_key_value_heads, a_.sparse_mode, a_.inner_precise, out, ws, ex);
  }

  char* lay() { return layout_null ? nullptr : layout.data(); }

  aclTensor *query, *pse, *mask, *qs2, *qo2, *aqs, *aqo, *bt, *qpad, *kvpad, *kaqs, *kaqo, *vaqs,
      *vaqo, *kp, *vp, *qr, *kr, *sink, *out, *lse;
  aclTensor* deq1 = nullptr;
  aclTensorList *key, *value;
  aclIntArray *asl, *askv, *spl;
  aclIntArray *q_start = nullptr, *kv_start = nullptr;  // V5
  bool layout_null = false;                             // pass inputLayout as null
  int64_t pse_type = 0;                                 // V5
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

  aclIntArray* ints(const std::optional<std::vector<int64_t>>& v) {
    if (!v) return nullptr;
    aclIntArray* a = aclCreateIntArray(v->data(), v->size());
    arrays_.push_back(a);
    return a;
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
  FiaCall a_;
  std::vector<aclTensor*> owned_;
  std::vector<aclTensorList*> lists_;
  std::vector<aclIntArray*> arrays_;
};

enum class Entry { kV1, kV2, kV3, kV4, kV5, kPfaV2, kPfaV3 };

const char* entry_name(Entry e) {
  static const char* const kNames[] = {"V1", "V2", "V3", "V4", "V5", "PFA V2", "PFA V3"};
  return kNames[static_cast<int>(e)];
}

aclnnStatus phase1(Call& c, Entry e, uint64_t* ws, aclOpExecutor** ex) {
  switch (e) {
    case Entry::kV1:
      return c.v1(ws, ex);
    case Entry::kV2:
      return c.v2(ws, ex);
    case Entry::kV3:
      return c.v3(ws, ex);
    case Entry::kV4:
      return c.v4(ws, ex);
    case Entry::kV5:
      return c.v5(ws, ex);
    case Entry::kPfaV2:
      return c.pfa_v2(ws, ex);
    case Entry::kPfaV3:
      return c.pfa_v3(ws, ex);
  }
  return ACLNN_ERR_PARAM_INVALID;
}

aclnnStatus run(Call& c, Entry e) {
  static constexpr aclnnStatus (*kPhase2[])(void*, uint64_t, aclOpExecutor*, aclrtStream) = {
      aclnnFusedInferAttentionScore,   aclnnFusedInferAttentionScoreV2,
      aclnnFusedInferAttentionScoreV3, aclnnFusedInferAttentionScoreV4,
      aclnnFusedInferAttentionScoreV5, aclnnPromptFlashAttentionV2,
      aclnnPromptFlashAttentionV3};
  uint64_t ws_size = 0;
  aclOpExecutor* ex = nullptr;
  aclnnStatus s = phase1(c, e, &ws_size, &ex);
  if (s != ACLNN_SUCCESS) return s;
  std::vector<std::byte> ws(ws_size);
  s = kPhase2[static_cast<int>(e)](ws.data(), ws_size, ex, nullptr);
  if (s != ACLNN_SUCCESS) return s;
  return aclrtSynchronizeStream(nullptr);
}

// The FIA versions whose arguments express case c (V1 has no split antiquant parameters or shared
// prefix, V2 no rope, V3 no learnable sink).
std::vector<Entry> fia_versions(const FiaCase& c) {
  const bool split = c.antiquant == kvflash::testing::FiaAntiquant::kSplitChannel ||
                     c.antiquant == kvflash::testing::FiaAntiquant::kSplitToken;
  std::vector<Entry> out;
  if (!split && c.prefix_len == 0 && c.rope_dim == 0 && !c.sink) out.push_back(Entry::kV1);
  if (c.rope_dim == 0 && !c.sink) out.push_back(Entry::kV2);
  if (!c.sink) out.push_back(Entry::kV3);
  out.push_back(Entry::kV4);
  out.push_back(Entry::kV5);
  return out;
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

// Every version on each case it expresses (each case on one version, in turn, to keep the time).
TEST(AclnnFiaTest, EveryVersionMatchesReference) {
  int n = 0;
  int per_version[5] = {};
  for (const FiaCase& fc : acl_cases()) {
    FiaCaseData data(fc);
    const auto ref = kvflash::reference::fia_reference(data.call());
    const std::vector<Entry> versions = fia_versions(fc);
    const Entry e = versions[static_cast<size_t>(n) % versions.size()];
    Call c(data.call());
    c.lse_flag = data.call().softmax_lse_flag;
    ASSERT_EQ(run(c, e), ACLNN_SUCCESS) << fc.name() << " " << entry_name(e) << ": " << recent();
    EXPECT_TRUE(kvflash::testing::compare_fia_output(fc.name(), data.call(), ref, nullptr,
                                                     fc.expect_mostly_empty))
        << entry_name(e);
    ++per_version[static_cast<int>(e)];
    ++n;
  }
  EXPECT_GT(n, 10);
  for (int v = 0; v < 5; ++v) EXPECT_GT(per_version[v], 2) << "V" << v + 1;
}

// The mask rules through every entry point: the compressed mask's three shapes (modes 2-4, FIA and
// PFA) and the decode branch (sparse_mode / pre / next ignored, no mask needed), each case of the
// list that shows them, against the fp64 reference.
TEST(AclnnFiaTest, MaskRulesThroughEveryVersion) {
  int n = 0;
  for (const FiaCase& fc : kvflash::testing::fia_cases_for_run()) {
    const bool shapes =
        fc.mask == kvflash::testing::FiaMask::kCompressed && fc.compressed_rank != 2;
    if (!shapes && fc.tag != "decode_branch") continue;
    if (fc.out_dtype == kvflash::DType::kFloat32) continue;
    std::vector<Entry> entries;
    if (fc.prompt) {
      entries = {Entry::kPfaV2, Entry::kPfaV3};
    } else {
      entries = fia_versions(fc);
    }
    for (Entry e : entries) {
      FiaCaseData data(fc);
      const auto ref = kvflash::reference::fia_reference(data.call());
      data.poison_outputs();
      Call c(data.call());
      c.lse_flag = data.call().softmax_lse_flag;
      ASSERT_EQ(run(c, e), ACLNN_SUCCESS) << fc.name() << " " << entry_name(e) << ": " << recent();
      EXPECT_TRUE(kvflash::testing::compare_fia_output(fc.name(), data.call(), ref))
          << entry_name(e);
      ++n;
    }
  }
  EXPECT_GE(n, 40);
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
  for (Entry e : {Entry::kV1, Entry::kV2, Entry::kV3, Entry::kV4, Entry::kV5}) {
    auto expect_null = [&](auto mutate, const char* what) {
      Call c(data.call());
      c.lse_flag = true;
      mutate(c);
      uint64_t ws = 7;
      aclOpExecutor* ex = kSentinel;
      EXPECT_EQ(phase1(c, e, &ws, &ex), ACLNN_ERR_PARAM_NULLPTR) << entry_name(e) << " " << what;
      EXPECT_EQ(ex, nullptr) << entry_name(e) << " " << what;
      EXPECT_NE(recent().find(what), std::string::npos) << entry_name(e) << ": " << recent();
    };
    expect_null([](Call& c) { c.query = nullptr; }, "query");
    expect_null([](Call& c) { c.key = nullptr; }, "key");
    expect_null([](Call& c) { c.value = nullptr; }, "value");
    expect_null([](Call& c) { c.out = nullptr; }, "attentionOut");
    expect_null([](Call& c) { c.lse = nullptr; }, "softmaxLse");
    expect_null([](Call& c) { c.layout.clear(), c.layout_null = true; }, "inputLayout");
    // A null required argument is 161001 even when V5's own arguments are also refused.
    expect_null([](Call& c) { c.query = nullptr, c.pse_type = 1; }, "query");
    Call c(data.call());
    uint64_t ws = 0;
    EXPECT_EQ(phase1(c, e, nullptr, nullptr), ACLNN_ERR_PARAM_NULLPTR) << entry_name(e);
    EXPECT_EQ(phase1(c, e, &ws, nullptr), ACLNN_ERR_PARAM_NULLPTR) << entry_name(e);
    EXPECT_NE(recent().find("executor"), std::string::npos) << recent();
  }
  static constexpr aclnnStatus (*kPhase2[])(void*, uint64_t, aclOpExecutor*, aclrtStream) = {
      aclnnFusedInferAttentionScore, aclnnFusedInferAttentionScoreV2,
      aclnnFusedInferAttentionScoreV5};
  for (auto* phase2 : kPhase2)
    EXPECT_EQ(phase2(nullptr, 0, nullptr, nullptr), ACLNN_ERR_PARAM_NULLPTR);
}

// V5's additions (docs/api.md): qStartIdx / kvStartIdx only null or empty, pseType only 0; each
// refused by name with 161002 and a null executor. A V4 executor runs in V5's phase 2 and the
// other way round (one operator).
TEST(AclnnFiaTest, V5ArgumentsRefusedByName) {
  FiaCaseData data(small_case());
  const std::vector<int64_t> starts = {0, 5};
  auto expect_refused = [&](auto mutate, const char* what) {
    Call c(data.call());
    c.lse_flag = true;
    mutate(c);
    uint64_t ws = 7;
    aclOpExecutor* ex = kSentinel;
    EXPECT_EQ(c.v5(&ws, &ex), ACLNN_ERR_PARAM_INVALID) << what;
    EXPECT_EQ(ex, nullptr) << what;
    EXPECT_NE(recent().find(what), std::string::npos) << recent();
  };
  expect_refused([&](Call& c) { c.q_start = c.ints(starts); }, "q_start_idx");
  expect_refused([&](Call& c) { c.kv_start = c.ints(starts); }, "kv_start_idx");
  expect_refused([](Call& c) { c.pse_type = 1; }, "pse_type");
  expect_refused([](Call& c) { c.pse_type = 2; }, "pse_type");
  // V5's new dtypes (fp8, hifloat8, fp4: aclDataType values kvflash does not read) are refused.
  expect_refused(
      [&](Call& c) {
        TensorView q = data.call().query;
        q.dtype = static_cast<kvflash::DType>(36);
        c.query = c.make(q);
      },
      "query");
  // Empty start indices are absent ones.
  const auto ref = kvflash::reference::fia_reference(data.call());
  Call c(data.call());
  c.lse_flag = true;
  c.q_start = c.ints(std::vector<int64_t>{});
  c.kv_start = c.ints(std::vector<int64_t>{});
  ASSERT_EQ(run(c, Entry::kV5), ACLNN_SUCCESS) << recent();
  EXPECT_TRUE(kvflash::testing::compare_fia_output("v5 empty start indices", data.call(), ref));
  // One operator: an executor of one version runs in another's phase 2.
  Call d(data.call());
  d.lse_flag = true;
  uint64_t ws_size = 0;
  aclOpExecutor* ex = nullptr;
  ASSERT_EQ(d.v1(&ws_size, &ex), ACLNN_SUCCESS) << recent();
  std::vector<std::byte> ws(ws_size);
  EXPECT_EQ(aclnnFusedInferAttentionScoreV5(ws.data(), ws_size, ex, nullptr), ACLNN_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);
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
