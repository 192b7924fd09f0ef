// aclnnSparseFlashAttention{,V2} through the C API: numerical agreement with the reference on
// cases of the shared list (strided inputs, every KV layout, sinks, LSE), the wrapper facts of
// docs/semantics.md §3.1 (value null -> key, null softmax outputs with LSE -> 161001, no outputs
// needed without LSE), null and invalid arguments with *executor = nullptr, the phase-2 contract
// (single use, workspace size, block-table check) and the reported platform.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <future>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "aclnn/acl_objects.hpp"
#include "aclnn/opdev/platform.h"
#include "aclnnop/aclnn_sparse_flash_attention.h"
#include "aclnnop/aclnn_sparse_flash_attention_v2.h"
#include "sfa_reference.hpp"
#include "support/sfa_cases.hpp"
#include "support/sfa_compare.hpp"
#include "support/stream_gate.hpp"

namespace {

using kvflash::DType;
using kvflash::SfaArgs;
using kvflash::TensorView;
using kvflash::testing::SfaCase;
using kvflash::testing::SfaCaseData;
using kvflash::testing::SfaKvLayout;
using kvflash::testing::SfaQLayout;

aclOpExecutor* const kSentinel = reinterpret_cast<aclOpExecutor*>(uintptr_t{0xdead0});

std::string recent() { return aclGetRecentErrMsg(); }

// The aclTensor handles of one call (from a case's views), destroyed at the end.
class Call {
 public:
  explicit Call(const SfaArgs& a) : args(a) {
    query = make(a.query);
    key = make(a.key);
    value = a.value ? make(*a.value) : nullptr;
    indices = make(a.sparse_indices);
    block_table = a.block_table ? make(*a.block_table) : nullptr;
    asq = a.actual_seq_lengths_query ? make(*a.actual_seq_lengths_query) : nullptr;
    askv = a.actual_seq_lengths_kv ? make(*a.actual_seq_lengths_kv) : nullptr;
    query_rope = make(a.query_rope);
    key_rope = make(a.key_rope);
    sinks = a.sinks ? make(*a.sinks) : nullptr;
    out = make(a.attention_out);
    softmax_max = a.softmax_max ? make(*a.softmax_max) : nullptr;
    softmax_sum = a.softmax_sum ? make(*a.softmax_sum) : nullptr;
    layout_query = a.layout_query;
    layout_kv = a.layout_kv;
    lse = a.return_softmax_lse;
  }
  ~Call() {
    for (aclTensor* t : owned_) EXPECT_EQ(aclDestroyTensor(t), ACLNN_SUCCESS);
  }

  aclnnStatus v1(uint64_t* ws, aclOpExecutor** ex) {
    return aclnnSparseFlashAttentionGetWorkspaceSize(
        query, key, value, indices, block_table, asq, askv, query_rope, key_rope, args.scale_value,
        args.sparse_block_size, lq(), lkv(), args.sparse_mode, args.pre_tokens, args.next_tokens,
        args.attention_mode, lse, out, softmax_max, softmax_sum, ws, ex);
  }
  aclnnStatus v2(uint64_t* ws, aclOpExecutor** ex) {
    return aclnnSparseFlashAttentionV2GetWorkspaceSize(
        query, key, value, indices, block_table, asq, askv, query_rope, key_rope, sinks,
        args.scale_value, args.sparse_block_size, lq(), lkv(), args.sparse_mode, args.pre_tokens,
        args.next_tokens, args.attention_mode, lse, out, softmax_max, softmax_sum, ws, ex);
  }
  char* lq() { return layout_query_null ? nullptr : layout_query.data(); }
  char* lkv() { return layout_kv.data(); }

  SfaArgs args;
  aclTensor *query, *key, *value, *indices, *block_table, *asq, *askv, *query_rope, *key_rope,
      *sinks, *out, *softmax_max, *softmax_sum;
  std::string layout_query, layout_kv;
  bool layout_query_null = false;
  bool lse = false;

 private:
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
  std::vector<aclTensor*> owned_;
};

// Phase 1 + phase 2 + synchronize; returns the first failing status.
aclnnStatus run_v2(Call& c, bool use_v1 = false) {
  uint64_t ws_size = 0;
  aclOpExecutor* ex = nullptr;
  aclnnStatus s = use_v1 ? c.v1(&ws_size, &ex) : c.v2(&ws_size, &ex);
  if (s != ACLNN_SUCCESS) return s;
  std::vector<std::byte> ws(ws_size);
  s = use_v1 ? aclnnSparseFlashAttention(ws.data(), ws_size, ex, nullptr)
             : aclnnSparseFlashAttentionV2(ws.data(), ws_size, ex, nullptr);
  if (s != ACLNN_SUCCESS) return s;
  return aclrtSynchronizeStream(nullptr);
}

SfaCase small_case(SfaQLayout q, SfaKvLayout kv, bool sinks, bool strided) {
  SfaCase c;
  c.q_layout = q;
  c.kv_layout = kv;
  c.num_heads = 4;
  c.sparse_size = 24;
  c.q_lens = {2, 1};
  c.kv_lens = {50, 30};
  c.sinks = sinks;
  c.lse = kv != SfaKvLayout::kPaBsnd;
  c.strided = strided;
  c.value_separate = strided;
  // INT64 length tensors with the strided views (docs/semantics.md decision 23).
  c.lengths_dtype = strided ? DType::kInt64 : DType::kInt32;
  return c;
}

TEST(AclnnSfaTest, MatchesReferenceOnEveryLayout) {
  const SfaQLayout qs[] = {SfaQLayout::kBsnd, SfaQLayout::kTnd, SfaQLayout::kBsnd,
                           SfaQLayout::kTnd};
  const SfaKvLayout kvs[] = {SfaKvLayout::kBsnd, SfaKvLayout::kTnd, SfaKvLayout::kPaBsnd,
                             SfaKvLayout::kPaBsnd};
  for (int i = 0; i < 4; ++i) {
    for (bool strided : {false, true}) {
      SfaCaseData data(small_case(qs[i], kvs[i], /*sinks=*/i % 2 == 0, strided));
      const auto ref = kvflash::reference::sfa_reference(data.args());
      Call c(data.args());
      ASSERT_EQ(run_v2(c), ACLNN_SUCCESS) << recent();
      EXPECT_TRUE(kvflash::testing::compare_sfa_output(data.spec().name(), data.args(), ref));
    }
  }
}

TEST(AclnnSfaTest, V1IsV2WithoutSinks) {
  SfaCaseData data(small_case(SfaQLayout::kBsnd, SfaKvLayout::kBsnd, false, false));
  const auto ref = kvflash::reference::sfa_reference(data.args());
  Call c(data.args());
  ASSERT_EQ(run_v2(c, /*use_v1=*/true), ACLNN_SUCCESS) << recent();
  EXPECT_TRUE(kvflash::testing::compare_sfa_output(data.spec().name(), data.args(), ref));
}

TEST(AclnnSfaTest, NullValueMeansKey) {
  SfaCaseData data(small_case(SfaQLayout::kTnd, SfaKvLayout::kTnd, true, false));
  ASSERT_FALSE(data.args().value.has_value());
  const auto ref = kvflash::reference::sfa_reference(data.args());
  Call c(data.args());
  ASSERT_EQ(c.value, nullptr);
  ASSERT_EQ(run_v2(c), ACLNN_SUCCESS) << recent();
  EXPECT_TRUE(kvflash::testing::compare_sfa_output(data.spec().name(), data.args(), ref));
}

TEST(AclnnSfaTest, SoftmaxOutputsIgnoredWithoutLse) {
  SfaCase sc = small_case(SfaQLayout::kBsnd, SfaKvLayout::kBsnd, true, false);
  SfaCaseData data(sc);
  Call c(data.args());
  c.lse = false;
  aclTensor* max_t = c.softmax_max;
  c.softmax_max = nullptr;  // null is fine without LSE
  ASSERT_EQ(run_v2(c), ACLNN_SUCCESS) << recent();
  // softmax_sum was passed but must not have been written (still NaN).
  const float* sum = static_cast<const float*>(data.args().softmax_sum->data);
  EXPECT_TRUE(std::isnan(sum[0]));
  c.softmax_max = max_t;
}

TEST(AclnnSfaTest, NullArgumentsAre161001WithNullExecutor) {
  SfaCaseData data(small_case(SfaQLayout::kBsnd, SfaKvLayout::kBsnd, true, false));
  auto expect_null = [&](auto mutate, const char* what) {
    Call c(data.args());
    mutate(c);
    uint64_t ws = 7;
    aclOpExecutor* ex = kSentinel;
    EXPECT_EQ(c.v2(&ws, &ex), ACLNN_ERR_PARAM_NULLPTR) << what;
    EXPECT_EQ(ex, nullptr) << what;
    EXPECT_NE(recent().find(what), std::string::npos) << recent();
  };
  expect_null([](Call& c) { c.query = nullptr; }, "query");
  expect_null([](Call& c) { c.key = nullptr; }, "key");
  expect_null([](Call& c) { c.indices = nullptr; }, "sparseIndices");
  expect_null([](Call& c) { c.out = nullptr; }, "attentionOut");
  expect_null([](Call& c) { c.layout_query_null = true; }, "layoutQuery");
  expect_null([](Call& c) { c.softmax_max = nullptr; }, "softmaxMaxOut");
  expect_null([](Call& c) { c.softmax_sum = nullptr; }, "softmaxSumOut");
  Call c(data.args());
  aclOpExecutor* ex = kSentinel;
  EXPECT_EQ(c.v2(nullptr, &ex), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(ex, nullptr);
  uint64_t ws = 0;
  EXPECT_EQ(c.v2(&ws, nullptr), ACLNN_ERR_PARAM_NULLPTR);
}

TEST(AclnnSfaTest, MissingRopeIs161002) {
  SfaCaseData data(small_case(SfaQLayout::kBsnd, SfaKvLayout::kBsnd, true, false));
  for (int which = 0; which < 2; ++which) {
    Call c(data.args());
    (which == 0 ? c.query_rope : c.key_rope) = nullptr;
    uint64_t ws = 0;
    aclOpExecutor* ex = kSentinel;
    EXPECT_EQ(c.v2(&ws, &ex), ACLNN_ERR_PARAM_INVALID);
    EXPECT_EQ(ex, nullptr);
  }
}

TEST(AclnnSfaTest, InvalidAttributeIs161002) {
  SfaCaseData data(small_case(SfaQLayout::kBsnd, SfaKvLayout::kBsnd, true, false));
  Call c(data.args());
  c.args.attention_mode = 1;
  uint64_t ws = 0;
  aclOpExecutor* ex = kSentinel;
  EXPECT_EQ(c.v2(&ws, &ex), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(ex, nullptr);
  EXPECT_NE(recent().find("attention_mode"), std::string::npos) << recent();
}

// kvflash's C++ API writes an fp32 attention_out (an extension); aclnn keeps upstream's rule.
TEST(AclnnSfaTest, Fp32AttentionOutIs161002) {
  SfaCase sc = small_case(SfaQLayout::kBsnd, SfaKvLayout::kBsnd, false, false);
  sc.fp32_out = true;
  SfaCaseData data(sc);
  Call c(data.args());
  uint64_t ws = 0;
  aclOpExecutor* ex = kSentinel;
  EXPECT_EQ(c.v2(&ws, &ex), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(ex, nullptr);
  EXPECT_NE(recent().find("attentionOut dtype fp32"), std::string::npos) << recent();
}

TEST(AclnnSfaTest, SinksAcceptedOnPagedLayoutAndPlatformIs950) {
  EXPECT_EQ(op::GetCurrentPlatformInfo().GetCurNpuArch(), NpuArch::DAV_3510);
  SfaCaseData data(small_case(SfaQLayout::kBsnd, SfaKvLayout::kPaBsnd, true, false));
  const auto ref = kvflash::reference::sfa_reference(data.args());
  Call c(data.args());
  ASSERT_NE(c.sinks, nullptr);
  ASSERT_EQ(run_v2(c), ACLNN_SUCCESS) << recent();
  EXPECT_TRUE(kvflash::testing::compare_sfa_output(data.spec().name(), data.args(), ref));
}

TEST(AclnnSfaTest, Phase2Contract) {
  SfaCaseData data(small_case(SfaQLayout::kBsnd, SfaKvLayout::kPaBsnd, false, false));
  Call c(data.args());
  uint64_t ws_size = 0;
  aclOpExecutor* ex = nullptr;
  ASSERT_EQ(c.v1(&ws_size, &ex), ACLNN_SUCCESS) << recent();
  ASSERT_NE(ex, nullptr);
  std::vector<std::byte> ws(ws_size);
  EXPECT_EQ(aclnnSparseFlashAttention(ws.data(), ws_size, nullptr, nullptr),
            ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(aclnnSparseFlashAttention(ws.data(), ws_size - 1, ex, nullptr),
            ACLNN_ERR_PARAM_INVALID);
  ASSERT_EQ(aclnnSparseFlashAttention(ws.data(), ws_size, ex, nullptr), ACLNN_SUCCESS) << recent();
  ASSERT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);
  // Single use: the consumed executor is refused.
  EXPECT_EQ(aclnnSparseFlashAttention(ws.data(), ws_size, ex, nullptr), ACLNN_ERR_PARAM_INVALID);
  const auto ref = kvflash::reference::sfa_reference(data.args());
  EXPECT_TRUE(kvflash::testing::compare_sfa_output(data.spec().name(), data.args(), ref));
}

// Copies n int32 from host to the device tensor v (contiguous) on stream.
void copy_async(const TensorView& v, const std::vector<int32_t>& host, aclrtStream stream) {
  ASSERT_TRUE(v.is_contiguous());
  ASSERT_EQ(static_cast<int64_t>(host.size()), v.numel());
  const size_t bytes = host.size() * sizeof(int32_t);
  ASSERT_EQ(aclrtMemcpyAsync(v.data, bytes, host.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE, stream),
            ACL_SUCCESS);
}
std::vector<int32_t> contents(const TensorView& v) {
  const auto* p = static_cast<const int32_t*>(v.data);
  return std::vector<int32_t>(p, p + v.numel());
}

// Bug 1 (stream order), as DeepSeek-V3.2 runs it: the indexer writes sparse_indices (and the
// lengths arrive) on the same stream just before the operator. When phase 2 is called the device
// tensors still hold stale garbage (indices and kv lengths out of range, block ids invalid); the
// copies queued before the operator make them valid, and the operator must see them.
TEST(AclnnSfaTest, IndicesLengthsAndTableWrittenOnTheStreamBeforeTheCallAreHonoured) {
  SfaCase spec = small_case(SfaQLayout::kTnd, SfaKvLayout::kPaBsnd, true, false);
  spec.lse = true;
  SfaCaseData data(spec);
  const SfaArgs& a = data.args();
  const std::vector<int32_t> indices = contents(a.sparse_indices);
  const std::vector<int32_t> lens_q = contents(*a.actual_seq_lengths_query);
  const std::vector<int32_t> lens_kv = contents(*a.actual_seq_lengths_kv);
  const std::vector<int32_t> table = contents(*a.block_table);
  for (const TensorView* v : {&a.sparse_indices, &*a.actual_seq_lengths_kv, &*a.block_table}) {
    std::fill_n(static_cast<int32_t*>(v->data), v->numel(), 1 << 30);
  }
  std::fill_n(static_cast<int32_t*>(a.actual_seq_lengths_query->data),
              a.actual_seq_lengths_query->numel(), 0);
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  {
    Call c(a);
    uint64_t ws_size = 0;
    aclOpExecutor* ex = nullptr;
    ASSERT_EQ(c.v2(&ws_size, &ex), ACLNN_SUCCESS) << recent();
    std::vector<std::byte> ws(ws_size);
    kvflash::testing::StreamGate gate(stream);
    copy_async(a.sparse_indices, indices, stream);
    copy_async(*a.actual_seq_lengths_query, lens_q, stream);
    copy_async(*a.actual_seq_lengths_kv, lens_kv, stream);
    copy_async(*a.block_table, table, stream);
    data.poison_outputs();
    ASSERT_EQ(aclnnSparseFlashAttentionV2(ws.data(), ws_size, ex, stream), ACLNN_SUCCESS)
        << recent();
    gate.release();
    ASSERT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS) << recent();
  }
  const auto ref = kvflash::reference::sfa_reference(a);
  EXPECT_TRUE(kvflash::testing::compare_sfa_output(data.spec().name(), a, ref));
  EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
}

// Lengths that become invalid on the stream are found by the run and reported by the stream's
// next synchronisation; every output is NaN.
TEST(AclnnSfaTest, BadLengthsWrittenOnTheStreamAreReportedAtSynchronize) {
  SfaCaseData data(small_case(SfaQLayout::kBsnd, SfaKvLayout::kBsnd, false, false));
  const SfaArgs& a = data.args();
  std::vector<int32_t> lens_kv = contents(*a.actual_seq_lengths_kv);
  lens_kv[1] = static_cast<int32_t>(a.key.shape[1] + 1);
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  {
    Call c(a);
    uint64_t ws_size = 0;
    aclOpExecutor* ex = nullptr;
    ASSERT_EQ(c.v1(&ws_size, &ex), ACLNN_SUCCESS) << recent();
    std::vector<std::byte> ws(ws_size);
    kvflash::testing::StreamGate gate(stream);
    copy_async(*a.actual_seq_lengths_kv, lens_kv, stream);
    ASSERT_EQ(aclnnSparseFlashAttention(ws.data(), ws_size, ex, stream), ACLNN_SUCCESS) << recent();
    gate.release();
    EXPECT_EQ(aclrtSynchronizeStream(stream), ACL_ERROR_RT_AICORE_EXCEPTION);
    EXPECT_NE(recent().find("actual_seq_lengths_kv[1]"), std::string::npos) << recent();
  }
  const auto* out = static_cast<const uint16_t*>(a.attention_out.data);
  for (int64_t i = 0; i < a.attention_out.numel(); ++i) {
    ASSERT_TRUE((out[i] & 0x7c00) == 0x7c00 && (out[i] & 0x3ff) != 0) << i;
  }
  EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
}

}  // namespace
