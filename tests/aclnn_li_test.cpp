// aclnnLightningIndexer through the C API: agreement with the fp64 reference on every case of the
// shared list (every layout pair, strided inputs, values, ties, NaN, faults), the wrapper facts
// (null layouts mean BSND, sparseValuesOut not looked at without returnValues and 161001 when
// null with it), null and invalid arguments with *executor = nullptr, the phase-2 contract, and
// device data written on the stream before the call (honoured; bad ones reported at
// synchronisation with their rows -1). Then the DeepSeek-V3.2 step as vllm-ascend runs it: the
// indexer writes sparse_indices and SparseFlashAttention reads them on the same stream, with no
// host synchronisation between, against a float64 computation of the whole step.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_lightning_indexer.h"
#include "aclnnop/aclnn_sparse_flash_attention.h"
#include "li_reference.hpp"
#include "sfa_reference.hpp"
#include "support/li_cases.hpp"
#include "support/li_compare.hpp"
#include "support/sfa_cases.hpp"
#include "support/sfa_compare.hpp"
#include "support/stream_gate.hpp"

namespace {

using kvflash::LightningIndexerArgs;
using kvflash::TensorView;
using kvflash::testing::LiCase;
using kvflash::testing::LiCaseData;
using kvflash::testing::LiFault;
using kvflash::testing::LiKLayout;
using kvflash::testing::LiQLayout;

aclOpExecutor* const kSentinel = reinterpret_cast<aclOpExecutor*>(uintptr_t{0xdead0});

std::string recent() { return aclGetRecentErrMsg(); }

// An aclTensor over a view (the view's own storage, strides and offset), destroyed by Tensors.
class Tensors {
 public:
  ~Tensors() {
    for (aclTensor* t : owned_) EXPECT_EQ(aclDestroyTensor(t), ACLNN_SUCCESS);
  }
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
  aclTensor* make(const std::optional<TensorView>& v) { return v ? make(*v) : nullptr; }

 private:
  std::vector<aclTensor*> owned_;
};

// The handles of one indexer call.
struct LiCall {
  explicit LiCall(const LightningIndexerArgs& a) : args(a) {
    query = t.make(a.query);
    key = t.make(a.key);
    weights = t.make(a.weights);
    asq = t.make(a.actual_seq_lengths_query);
    ask = t.make(a.actual_seq_lengths_key);
    block_table = t.make(a.block_table);
    indices = t.make(a.sparse_indices);
    values = t.make(a.sparse_values);
    layout_query = a.layout_query;
    layout_key = a.layout_key;
  }
  aclnnStatus phase1(uint64_t* ws, aclOpExecutor** ex) {
    return aclnnLightningIndexerGetWorkspaceSize(
        query, key, weights, asq, ask, block_table, null_layouts ? nullptr : layout_query.data(),
        null_layouts ? nullptr : layout_key.data(), args.sparse_count, args.sparse_mode,
        args.pre_tokens, args.next_tokens, args.return_value, indices, values, ws, ex);
  }
  // Phase 1, phase 2 on stream, no synchronisation.
  aclnnStatus enqueue(aclrtStream stream, std::vector<std::byte>* ws) {
    uint64_t size = 0;
    aclOpExecutor* ex = nullptr;
    const aclnnStatus s = phase1(&size, &ex);
    if (s != ACLNN_SUCCESS) return s;
    ws->resize(size);
    return aclnnLightningIndexer(ws->data(), size, ex, stream);
  }

  Tensors t;
  LightningIndexerArgs args;
  aclTensor *query, *key, *weights, *asq, *ask, *block_table, *indices, *values;
  std::string layout_query, layout_key;
  bool null_layouts = false;
};

// Phase 1 + 2 on the default stream, then its synchronisation's status.
aclError run(LiCall& c) {
  std::vector<std::byte> ws;
  const aclnnStatus s = c.enqueue(nullptr, &ws);
  if (s != ACLNN_SUCCESS) return s;
  return aclrtSynchronizeStream(nullptr);
}

class AclnnLiCases : public ::testing::TestWithParam<LiCase> {};

TEST_P(AclnnLiCases, MatchesReference) {
  const LiCase& spec = GetParam();
  LiCaseData data(spec);
  const auto ref = kvflash::reference::li_reference(data.call());
  LiCall c(data.call());
  const aclError st = run(c);
  if (ref.fault.empty()) {
    ASSERT_EQ(st, ACL_SUCCESS) << recent();
  } else {
    ASSERT_EQ(st, ACL_ERROR_RT_AICORE_EXCEPTION);
    EXPECT_NE(recent().find(ref.fault), std::string::npos) << recent() << " vs " << ref.fault;
  }
  EXPECT_TRUE(
      kvflash::testing::compare_li_output(spec.name(), data.call(), ref, spec.expect_mostly_empty));
}

// The smoke tier: every layout pair, fp16 / bf16, values, ties, NaN and a fault.
INSTANTIATE_TEST_SUITE_P(
    Cases, AclnnLiCases,
    ::testing::ValuesIn(kvflash::testing::li_cases(kvflash::testing::Tier::kSmoke)),
    [](const ::testing::TestParamInfo<LiCase>& info) {
      return std::to_string(info.index) + "_" + info.param.test_name();
    });

LiCase small_case(LiQLayout q, LiKLayout k, bool values) {
  LiCase c;
  c.q_layout = q;
  c.k_layout = k;
  c.num_heads = 8;
  c.sparse_count = 16;
  c.q_lens = {2, 3};
  c.kv_lens = {40, 25};
  c.return_value = values;
  return c;
}

TEST(AclnnLiTest, NullLayoutsMeanBsnd) {
  LiCaseData data(small_case(LiQLayout::kBsnd, LiKLayout::kBsnd, true));
  const auto ref = kvflash::reference::li_reference(data.call());
  LiCall c(data.call());
  c.null_layouts = true;
  ASSERT_EQ(run(c), ACL_SUCCESS) << recent();
  EXPECT_TRUE(kvflash::testing::compare_li_output("null layouts", data.call(), ref, false));
}

TEST(AclnnLiTest, SparseValuesNotLookedAtWithoutReturnValues) {
  LiCaseData data(small_case(LiQLayout::kTnd, LiKLayout::kPaBsnd, true));
  LiCall c(data.call());
  c.args.return_value = false;
  c.values = nullptr;  // null is fine
  ASSERT_EQ(run(c), ACL_SUCCESS) << recent();
  LiCall d(data.call());
  d.args.return_value = false;
  ASSERT_EQ(run(d), ACL_SUCCESS) << recent();
  // Passed but not written: still the poison NaN.
  const auto* v = static_cast<const uint16_t*>(data.call().sparse_values->data);
  EXPECT_EQ(v[0] & 0x7f80, 0x7f80);
  EXPECT_NE(v[0] & 0x7f, 0);
}

TEST(AclnnLiTest, NullArgumentsAre161001WithNullExecutor) {
  LiCaseData data(small_case(LiQLayout::kTnd, LiKLayout::kPaBsnd, true));
  auto expect_null = [&](auto mutate, const char* what) {
    LiCall c(data.call());
    mutate(c);
    uint64_t ws = 7;
    aclOpExecutor* ex = kSentinel;
    EXPECT_EQ(c.phase1(&ws, &ex), ACLNN_ERR_PARAM_NULLPTR) << what;
    EXPECT_EQ(ex, nullptr) << what;
    EXPECT_NE(recent().find(what), std::string::npos) << recent();
  };
  expect_null([](LiCall& c) { c.query = nullptr; }, "query");
  expect_null([](LiCall& c) { c.key = nullptr; }, "key");
  expect_null([](LiCall& c) { c.weights = nullptr; }, "weights");
  expect_null([](LiCall& c) { c.indices = nullptr; }, "sparseIndicesOut");
  expect_null([](LiCall& c) { c.values = nullptr; }, "sparseValuesOut");
  LiCall c(data.call());
  aclOpExecutor* ex = kSentinel;
  EXPECT_EQ(c.phase1(nullptr, &ex), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(ex, nullptr);
  uint64_t ws = 0;
  EXPECT_EQ(c.phase1(&ws, nullptr), ACLNN_ERR_PARAM_NULLPTR);
}

TEST(AclnnLiTest, InvalidArgumentsAre161002NamingThem) {
  LiCaseData data(small_case(LiQLayout::kTnd, LiKLayout::kPaBsnd, false));
  auto expect_invalid = [&](auto mutate, const char* what) {
    LiCall c(data.call());
    mutate(c);
    uint64_t ws = 7;
    aclOpExecutor* ex = kSentinel;
    EXPECT_EQ(c.phase1(&ws, &ex), ACLNN_ERR_PARAM_INVALID) << what;
    EXPECT_EQ(ex, nullptr) << what;
    EXPECT_NE(recent().find(what), std::string::npos) << recent();
  };
  expect_invalid([](LiCall& c) { c.args.sparse_count = 3000; }, "sparse_count");
  expect_invalid([](LiCall& c) { c.args.sparse_mode = 1; }, "sparse_mode");
  expect_invalid([](LiCall& c) { c.args.pre_tokens = 100; }, "pre_tokens");
  expect_invalid([](LiCall& c) { c.args.next_tokens = 0; }, "next_tokens");
  expect_invalid([](LiCall& c) { c.layout_key = "TND"; }, "layout_key");
  expect_invalid([](LiCall& c) { c.block_table = nullptr; }, "block_table");
  expect_invalid([](LiCall& c) { c.asq = nullptr; }, "actual_seq_lengths_query");
}

// The C++ API's fp32 sparse_values (the unrounded scores) is an extension: aclnn keeps upstream's
// rule, the query dtype.
TEST(AclnnLiTest, Fp32SparseValuesOutIs161002) {
  LiCaseData data(small_case(LiQLayout::kTnd, LiKLayout::kPaBsnd, true));
  std::vector<float> scores(data.call().sparse_indices.numel());
  LightningIndexerArgs a = data.call();
  a.sparse_values = TensorView::contiguous(scores.data(), kvflash::DType::kFloat32,
                                           {a.sparse_indices.shape[0], 1, a.sparse_count});
  LiCall c(a);
  uint64_t ws = 0;
  aclOpExecutor* ex = kSentinel;
  EXPECT_EQ(c.phase1(&ws, &ex), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(ex, nullptr);
  EXPECT_NE(recent().find("sparseValuesOut dtype fp32"), std::string::npos) << recent();
}

TEST(AclnnLiTest, Phase2Contract) {
  LiCaseData data(small_case(LiQLayout::kTnd, LiKLayout::kPaBsnd, false));
  LiCall c(data.call());
  uint64_t ws_size = 0;
  aclOpExecutor* ex = nullptr;
  ASSERT_EQ(c.phase1(&ws_size, &ex), ACLNN_SUCCESS) << recent();
  ASSERT_NE(ex, nullptr);
  std::vector<std::byte> ws(ws_size);
  EXPECT_EQ(aclnnLightningIndexer(ws.data(), ws_size, nullptr, nullptr), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(aclnnLightningIndexer(ws.data(), ws_size - 1, ex, nullptr), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(aclnnLightningIndexer(nullptr, ws_size, ex, nullptr), ACLNN_ERR_PARAM_NULLPTR);
  ASSERT_EQ(aclnnLightningIndexer(ws.data(), ws_size, ex, nullptr), ACLNN_SUCCESS) << recent();
  ASSERT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);
  EXPECT_EQ(aclnnLightningIndexer(ws.data(), ws_size, ex, nullptr), ACLNN_ERR_PARAM_INVALID);
  const auto ref = kvflash::reference::li_reference(data.call());
  EXPECT_TRUE(kvflash::testing::compare_li_output("phase 2", data.call(), ref, false));
}

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

// D10: the lengths and the block table are read in stream order. Garbage when phase 2 is called,
// made valid by copies queued before it on the same stream: the run sees the valid ones.
TEST(AclnnLiTest, LengthsAndTableWrittenOnTheStreamBeforeTheCallAreHonoured) {
  LiCaseData data(small_case(LiQLayout::kTnd, LiKLayout::kPaBsnd, false));
  const LightningIndexerArgs& a = data.call();
  const std::vector<int32_t> lq = contents(*a.actual_seq_lengths_query);
  const std::vector<int32_t> lk = contents(*a.actual_seq_lengths_key);
  const std::vector<int32_t> table = contents(*a.block_table);
  for (const TensorView* v :
       {&*a.actual_seq_lengths_query, &*a.actual_seq_lengths_key, &*a.block_table}) {
    std::fill_n(static_cast<int32_t*>(v->data), v->numel(), 1 << 30);
  }
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  {
    LiCall c(a);
    std::vector<std::byte> ws;
    kvflash::testing::StreamGate gate(stream);
    copy_async(*a.actual_seq_lengths_query, lq, stream);
    copy_async(*a.actual_seq_lengths_key, lk, stream);
    copy_async(*a.block_table, table, stream);
    ASSERT_EQ(c.enqueue(stream, &ws), ACLNN_SUCCESS) << recent();
    gate.release();
    ASSERT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS) << recent();
  }
  const auto ref = kvflash::reference::li_reference(a);
  EXPECT_TRUE(kvflash::testing::compare_li_output("stream order", a, ref, false));
  EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
}

// A block id made bad on the stream before the call: the run faults that batch (all -1), the
// other batch is computed, and the stream's synchronisation reports 507015 naming the entry.
TEST(AclnnLiTest, BadBlockIdWrittenOnTheStreamIsReportedAtSynchronize) {
  LiCaseData data(small_case(LiQLayout::kTnd, LiKLayout::kPaBsnd, false));
  const LightningIndexerArgs& a = data.call();
  std::vector<int32_t> table = contents(*a.block_table);
  const int64_t cols = a.block_table->shape[1];
  table[1 * cols + 0] = static_cast<int32_t>(data.num_blocks());  // batch 1, slot 0
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  {
    LiCall c(a);
    std::vector<std::byte> ws;
    kvflash::testing::StreamGate gate(stream);
    copy_async(*a.block_table, table, stream);
    ASSERT_EQ(c.enqueue(stream, &ws), ACLNN_SUCCESS) << recent();
    gate.release();
    EXPECT_EQ(aclrtSynchronizeStream(stream), ACL_ERROR_RT_AICORE_EXCEPTION);
    EXPECT_NE(recent().find("block_table[1][0]"), std::string::npos) << recent();
  }
  const auto ref = kvflash::reference::li_reference(a);  // reads the bad table too
  EXPECT_FALSE(ref.fault.empty());
  EXPECT_TRUE(kvflash::testing::compare_li_output("bad block id", a, ref, false));
  const auto* idx = static_cast<const int32_t*>(a.sparse_indices.data);
  const int64_t k = a.sparse_count;
  for (int64_t r = 2; r < 5; ++r) {  // batch 1's rows (q_lens 2, 3)
    for (int64_t s = 0; s < k; ++s) ASSERT_EQ(idx[r * k + s], -1) << r << " " << s;
  }
  EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
}

// The DeepSeek-V3.2 step as vllm-ascend runs it (docs/fia-pfa-indexer.md §4.2): TND query rows
// (a decode row, MTP rows), PA_BSND caches, the indexer's sparse_indices [T, 1, K] read by
// SparseFlashAttention (sparse_mode 3, attention_mode 2), both sharing the length tensors, both
// queued on one stream behind a gate: nothing has run when the second phase 2 is called, so SFA
// can only see the indices through stream order. Checked against the float64 step: the fp64
// indexer's selection fed to the fp64 SFA.
TEST(AclnnDsaStep, IndexerFeedsSparseAttentionInStreamOrder) {
  LiCase lc;
  lc.q_layout = LiQLayout::kTnd;
  lc.k_layout = LiKLayout::kPaBsnd;
  lc.dtype = kvflash::DType::kBFloat16;
  lc.w_dtype = kvflash::DType::kBFloat16;
  lc.num_heads = 16;
  lc.sparse_count = 32;
  lc.q_lens = {1, 3, 2};
  lc.kv_lens = {150, 90, 31};
  lc.block_size = 16;
  LiCaseData li(lc);
  kvflash::testing::SfaCase sc;
  sc.q_layout = kvflash::testing::SfaQLayout::kTnd;
  sc.kv_layout = kvflash::testing::SfaKvLayout::kPaBsnd;
  sc.dtype = kvflash::DType::kBFloat16;
  sc.num_heads = 16;
  sc.sparse_size = lc.sparse_count;
  sc.q_lens = lc.q_lens;
  sc.kv_lens = lc.kv_lens;
  sc.block_size = 16;
  sc.indices = kvflash::testing::SfaIndexPattern::kClean;
  kvflash::testing::SfaCaseData sfa(sc);
  kvflash::SfaArgs& sa = sfa.mutable_args();
  ASSERT_TRUE(sa.sparse_indices.is_contiguous());
  sa.sparse_indices = li.call().sparse_indices;
  sa.actual_seq_lengths_query = li.call().actual_seq_lengths_query;
  sa.actual_seq_lengths_kv = li.call().actual_seq_lengths_key;

  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  {
    LiCall indexer(li.call());
    Tensors t;
    std::vector<std::byte> li_ws, sfa_ws;
    kvflash::testing::StreamGate gate(stream);
    ASSERT_EQ(indexer.enqueue(stream, &li_ws), ACLNN_SUCCESS) << recent();
    uint64_t size = 0;
    aclOpExecutor* ex = nullptr;
    char lq[] = "TND", lkv[] = "PA_BSND";
    ASSERT_EQ(aclnnSparseFlashAttentionGetWorkspaceSize(
                  t.make(sa.query), t.make(sa.key), t.make(sa.value), t.make(sa.sparse_indices),
                  t.make(sa.block_table), t.make(sa.actual_seq_lengths_query),
                  t.make(sa.actual_seq_lengths_kv), t.make(sa.query_rope), t.make(sa.key_rope),
                  sa.scale_value, 1, lq, lkv, 3, sa.pre_tokens, sa.next_tokens, 2, false,
                  t.make(sa.attention_out), nullptr, nullptr, &size, &ex),
              ACLNN_SUCCESS)
        << recent();
    sfa_ws.resize(size);
    ASSERT_EQ(aclnnSparseFlashAttention(sfa_ws.data(), size, ex, stream), ACLNN_SUCCESS)
        << recent();
    // Nothing has run yet: the indices still hold the poison of the case builder.
    EXPECT_EQ(static_cast<const int32_t*>(li.call().sparse_indices.data)[0], 0x7eadbeef);
    gate.release();
    ASSERT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS) << recent();
  }
  EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);

  const auto li_ref = kvflash::reference::li_reference(li.call());
  ASSERT_TRUE(kvflash::testing::compare_li_output("dsa step indexer", li.call(), li_ref, false));
  // The float64 step: the fp64 indexer's indices into the fp64 SFA.
  std::vector<int32_t> ref_indices(li_ref.indices.begin(), li_ref.indices.end());
  kvflash::SfaArgs fa = sa;
  fa.sparse_indices = TensorView::contiguous(ref_indices.data(), kvflash::DType::kInt32,
                                             {sa.sparse_indices.shape[0], 1, lc.sparse_count});
  const auto sfa_ref = kvflash::reference::sfa_reference(fa);
  EXPECT_TRUE(kvflash::testing::compare_sfa_output("dsa step", sa, sfa_ref));
}

}  // namespace
