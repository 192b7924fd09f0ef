// aclnnIncreFlashAttention{,V2,V3,V4} through the C API: every null-pointer and invalid-argument
// path returns its code with *executor = nullptr, the phase-2 contract (workspace size, single
// use, guard bytes, stream order), what each version passes on (V1/V2 ignore pseShift), strided
// inputs, and numerical agreement with the double-precision reference on cases of the shared list.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <future>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "aclnn/acl_objects.hpp"
#include "aclnn/same_arguments.hpp"
#include "aclnnop/aclnn_incre_flash_attention.h"
#include "aclnnop/aclnn_incre_flash_attention_v2.h"
#include "aclnnop/aclnn_incre_flash_attention_v3.h"
#include "aclnnop/aclnn_incre_flash_attention_v4.h"
#include "core/half.hpp"
#include "ifa_reference.hpp"
#include "ops/ifa/ifa_fields.hpp"
#include "support/compare.hpp"
#include "support/ifa_cases.hpp"
#include "support/stream_gate.hpp"

namespace {

using kvflash::DType;
using kvflash::IfaArgs;
using kvflash::TensorView;
using kvflash::testing::IfaCase;
using kvflash::testing::IfaCaseData;
using kvflash::testing::IfaLayout;

aclOpExecutor* const kSentinel = reinterpret_cast<aclOpExecutor*>(uintptr_t{0xdead0});

std::string recent() { return aclGetRecentErrMsg(); }

// Owns the aclTensor / list / array handles of one call and destroys them.
class Handles {
 public:
  ~Handles() {
    for (auto* t : tensors_) EXPECT_EQ(aclDestroyTensor(t), ACLNN_SUCCESS);
    for (auto* l : lists_) EXPECT_EQ(aclDestroyTensorList(l), ACLNN_SUCCESS);
    for (auto* a : arrays_) EXPECT_EQ(aclDestroyIntArray(a), ACLNN_SUCCESS);
  }
  // The storage is described as one flat dim just large enough for the view.
  aclTensor* tensor(const TensorView& v) {
    int64_t last = v.offset;
    bool empty = false;
    for (int i = 0; i < v.rank; ++i) {
      if (v.shape[i] == 0) empty = true;
      last += (v.shape[i] - 1) * v.strides[i];
    }
    const int64_t storage = empty ? 0 : last + 1;
    aclTensor* t = aclCreateTensor(v.shape.data(), v.rank, static_cast<aclDataType>(v.dtype),
                                   v.strides.data(), v.offset, ACL_FORMAT_ND, &storage, 1, v.data);
    EXPECT_NE(t, nullptr) << recent();
    tensors_.push_back(t);
    return t;
  }
  aclTensor* optional(const std::optional<TensorView>& v) { return v ? tensor(*v) : nullptr; }
  aclTensorList* list(const std::vector<TensorView>& views) {
    std::vector<aclTensor*> items;
    for (const auto& v : views) items.push_back(tensor(v));
    aclTensorList* l = aclCreateTensorList(items.data(), items.size());
    lists_.push_back(l);
    return l;
  }
  aclIntArray* ints(const std::optional<std::vector<int64_t>>& v) {
    if (!v) return nullptr;
    aclIntArray* a = aclCreateIntArray(v->data(), v->size());
    arrays_.push_back(a);
    return a;
  }
  // Destroys a handle early (it must not be destroyed again at the end).
  void destroy_array(aclIntArray* a) {
    std::erase(arrays_, a);
    EXPECT_EQ(aclDestroyIntArray(a), ACLNN_SUCCESS);
  }

 private:
  std::vector<aclTensor*> tensors_;
  std::vector<aclTensorList*> lists_;
  std::vector<aclIntArray*> arrays_;
};

// The aclnn-level arguments of one call, built from IfaArgs.
struct Call {
  const aclTensor* query = nullptr;
  const aclTensorList* key = nullptr;
  const aclTensorList* value = nullptr;
  const aclTensor *pse = nullptr, *mask = nullptr;
  const aclIntArray* lens = nullptr;
  const aclTensor *dq1 = nullptr, *qs1 = nullptr, *dq2 = nullptr, *qs2 = nullptr, *qo2 = nullptr;
  const aclTensor *aq_scale = nullptr, *aq_offset = nullptr, *block_table = nullptr,
                  *kv_padding = nullptr;
  int64_t num_heads = 1;
  double scale = 1.0;
  std::string layout;
  bool null_layout = false;
  int64_t num_kv_heads = 0, block_size = 0, inner_precise = 1;
  const aclTensor* out = nullptr;

  static Call from(const IfaArgs& a, Handles* h) {
    Call c;
    c.query = h->tensor(a.query);
    c.key = h->list(a.key);
    c.value = h->list(a.value);
    c.pse = h->optional(a.pse_shift);
    c.mask = h->optional(a.atten_mask);
    c.lens = h->ints(a.actual_seq_lengths);
    c.dq1 = h->optional(a.dequant_scale1);
    c.qs1 = h->optional(a.quant_scale1);
    c.dq2 = h->optional(a.dequant_scale2);
    c.qs2 = h->optional(a.quant_scale2);
    c.qo2 = h->optional(a.quant_offset2);
    c.aq_scale = h->optional(a.antiquant_scale);
    c.aq_offset = h->optional(a.antiquant_offset);
    c.block_table = h->optional(a.block_table);
    c.kv_padding = h->optional(a.kv_padding_size);
    c.num_heads = a.num_heads;
    c.scale = a.scale_value;
    c.layout = a.input_layout;
    c.num_kv_heads = a.num_key_value_heads;
    c.block_size = a.block_size;
    c.inner_precise = a.inner_precise;
    c.out = h->tensor(a.attention_out);
    return c;
  }

  // Phase 1 of the given version (1..4).
  aclnnStatus phase1(int version, uint64_t* ws, aclOpExecutor** e) const {
    std::vector<char> layout_buf(layout.begin(), layout.end());
    layout_buf.push_back('\0');
    char* lay = null_layout ? nullptr : layout_buf.data();
    switch (version) {
      case 1:
        return aclnnIncreFlashAttentionGetWorkspaceSize(
            query, key, value, pse, mask, lens, num_heads, scale, lay, num_kv_heads, out, ws, e);
      case 2:
        return aclnnIncreFlashAttentionV2GetWorkspaceSize(query, key, value, pse, mask, lens, dq1,
                                                          qs1, dq2, qs2, qo2, num_heads, scale, lay,
                                                          num_kv_heads, out, ws, e);
      case 3:
        return aclnnIncreFlashAttentionV3GetWorkspaceSize(
            query, key, value, pse, mask, lens, dq1, qs1, dq2, qs2, qo2, aq_scale, aq_offset,
            block_table, num_heads, scale, lay, num_kv_heads, block_size, inner_precise, out, ws,
            e);
      default:
        return aclnnIncreFlashAttentionV4GetWorkspaceSize(
            query, key, value, pse, mask, lens, dq1, qs1, dq2, qs2, qo2, aq_scale, aq_offset,
            block_table, kv_padding, num_heads, scale, lay, num_kv_heads, block_size, inner_precise,
            out, ws, e);
    }
  }
};

aclnnStatus phase2(int version, void* ws, uint64_t size, aclOpExecutor* e, aclrtStream s) {
  switch (version) {
    case 1:
      return aclnnIncreFlashAttention(ws, size, e, s);
    case 2:
      return aclnnIncreFlashAttentionV2(ws, size, e, s);
    case 3:
      return aclnnIncreFlashAttentionV3(ws, size, e, s);
    default:
      return aclnnIncreFlashAttentionV4(ws, size, e, s);
  }
}

// The lowest version whose signature carries every feature of the case.
int version_for(const IfaArgs& a) {
  if (a.kv_padding_size) return 4;
  if (a.pse_shift || a.antiquant_scale || a.antiquant_offset || a.block_table) return 3;
  if (a.quant_scale2 || a.quant_offset2) return 2;
  return 1;
}

// Runs both phases on stream with a fresh workspace; returns the first non-success code.
aclnnStatus run_call(const Call& c, int version, aclrtStream stream = nullptr) {
  uint64_t ws = 0;
  aclOpExecutor* e = nullptr;
  if (aclnnStatus s = c.phase1(version, &ws, &e); s != ACLNN_SUCCESS) return s;
  std::vector<std::byte> workspace(ws);
  if (aclnnStatus s = phase2(version, workspace.data(), ws, e, stream); s != ACLNN_SUCCESS)
    return s;
  return aclrtSynchronizeStream(stream);
}

IfaCase small_case() {
  IfaCase c;
  c.layout = IfaLayout::kBsh;
  c.batch = 2;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 32;
  c.kv_lens = {20, 9};
  return c;
}

// A strided (non-contiguous) view over a case's real output buffer: (B, 1, H/2), every other
// element of each row. aclnn refuses it.
TensorView strided_output(const IfaCaseData& data) {
  TensorView out = data.args().attention_out;
  out.shape[2] /= 2;
  out.strides[2] = 2;
  return out;
}

// ---- phase 1: null pointers and invalid arguments ---------------------------------------------

TEST(AclnnIfa, NullRequiredPointersReturn161001WithNullExecutor) {
  IfaCaseData data(small_case());
  Handles h;
  const Call good = Call::from(data.args(), &h);
  for (int version = 1; version <= 4; ++version) {
    SCOPED_TRACE("V" + std::to_string(version));
    uint64_t ws = 0;
    aclOpExecutor* e = kSentinel;
    EXPECT_EQ(good.phase1(version, nullptr, &e), ACLNN_ERR_PARAM_NULLPTR);
    EXPECT_EQ(e, nullptr);
    EXPECT_EQ(good.phase1(version, &ws, nullptr), ACLNN_ERR_PARAM_NULLPTR);
    const std::vector<std::pair<const char*, void (*)(Call*)>> nulls = {
        {"query", [](Call* c) { c->query = nullptr; }},
        {"key", [](Call* c) { c->key = nullptr; }},
        {"value", [](Call* c) { c->value = nullptr; }},
        {"attentionOut", [](Call* c) { c->out = nullptr; }},
        {"inputLayout", [](Call* c) { c->null_layout = true; }},
    };
    for (const auto& [name, apply] : nulls) {
      Call c = good;
      apply(&c);
      e = kSentinel;
      EXPECT_EQ(c.phase1(version, &ws, &e), ACLNN_ERR_PARAM_NULLPTR) << name;
      EXPECT_EQ(e, nullptr) << name;
      EXPECT_NE(recent().find(name), std::string::npos) << recent();
    }
    // The good call itself succeeds (so the codes above come from the nulls).
    e = nullptr;
    ASSERT_EQ(good.phase1(version, &ws, &e), ACLNN_SUCCESS) << recent();
    EXPECT_NE(e, nullptr);
    EXPECT_EQ(aclDestroyAclOpExecutor(e), ACLNN_SUCCESS);
  }
}

TEST(AclnnIfa, NullTensorInsideKeyListReturns161001) {
  IfaCaseData data(small_case());
  Handles h;
  Call c = Call::from(data.args(), &h);
  const aclTensor* items[] = {nullptr};
  aclTensorList* bad = aclCreateTensorList(items, 1);
  ASSERT_NE(bad, nullptr);
  c.key = bad;
  uint64_t ws = 0;
  aclOpExecutor* e = kSentinel;
  EXPECT_EQ(c.phase1(4, &ws, &e), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(e, nullptr);
  EXPECT_NE(recent().find("key[0]"), std::string::npos) << recent();
  EXPECT_EQ(aclDestroyTensorList(bad), ACLNN_SUCCESS);
}

TEST(AclnnIfa, InvalidArgumentsReturn161002WithNullExecutor) {
  IfaCaseData data(small_case());
  Handles h;
  const Call good = Call::from(data.args(), &h);
  aclTensor* bad_out = h.tensor(strided_output(data));
  // An fp32 output view: kvflash's C++ API accepts it (an extension), aclnn does not.
  TensorView f32_out = data.args().attention_out;
  f32_out.dtype = DType::kFloat32;
  f32_out.shape[2] /= 2;  // within the fp16 buffer
  f32_out.strides = {f32_out.shape[1] * f32_out.shape[2], f32_out.shape[2], 1};
  aclTensor* fp32_out = h.tensor(f32_out);
  const std::vector<std::pair<std::string, std::function<void(Call*)>>> cases = {
      {"numHeads 0", [](Call* c) { c->num_heads = 0; }},
      {"numHeads not a multiple of numKeyValueHeads", [](Call* c) { c->num_kv_heads = 3; }},
      {"layout XYZ", [](Call* c) { c->layout = "XYZ"; }},
      {"empty layout", [](Call* c) { c->layout = ""; }},
      {"non-contiguous attentionOut", [&](Call* c) { c->out = bad_out; }},
      {"fp32 attentionOut", [&](Call* c) { c->out = fp32_out; }},
      {"innerPrecise 2 (V3/V4)", [](Call* c) { c->inner_precise = 2; }},
  };
  for (int version = 1; version <= 4; ++version) {
    for (const auto& [name, apply] : cases) {
      if (name.find("V3/V4") != std::string::npos && version < 3) continue;
      Call c = good;
      apply(&c);
      uint64_t ws = 0;
      aclOpExecutor* e = kSentinel;
      EXPECT_EQ(c.phase1(version, &ws, &e), ACLNN_ERR_PARAM_INVALID)
          << "V" << version << " " << name;
      EXPECT_EQ(e, nullptr) << name;
      EXPECT_FALSE(recent().empty()) << name;
    }
  }
  {
    Call c = good;
    c.out = fp32_out;
    uint64_t ws = 0;
    aclOpExecutor* e = kSentinel;
    EXPECT_EQ(c.phase1(4, &ws, &e), ACLNN_ERR_PARAM_INVALID);
    EXPECT_NE(recent().find("attentionOut dtype fp32"), std::string::npos) << recent();
  }
  // A handle that was destroyed is recognised, not dereferenced.
  const TensorView& q = data.args().query;
  aclTensor* twin = aclCreateTensor(q.shape.data(), q.rank, ACL_FLOAT16, q.strides.data(), q.offset,
                                    ACL_FORMAT_ND, nullptr, 0, q.data);
  ASSERT_NE(twin, nullptr) << recent();
  ASSERT_EQ(aclDestroyTensor(twin), ACLNN_SUCCESS);
  Call c = good;
  c.query = twin;
  uint64_t ws = 0;
  aclOpExecutor* e = kSentinel;
  EXPECT_EQ(c.phase1(4, &ws, &e), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(e, nullptr);
  EXPECT_NE(recent().find("not a live aclTensor"), std::string::npos) << recent();
}

TEST(AclnnIfa, QuantisationArgumentsMustBeNullForFloatQuery) {
  IfaCaseData data(small_case());
  Handles h;
  Call c = Call::from(data.args(), &h);
  c.dq1 = c.query;  // any tensor: dequantScale1 must be null for an fp16 query
  uint64_t ws = 0;
  aclOpExecutor* e = kSentinel;
  EXPECT_EQ(c.phase1(2, &ws, &e), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(e, nullptr);
}

// ---- phase 2 -----------------------------------------------------------------------------------

// A problem long enough that the kernel wants scratch memory (split-KV partial results).
IfaCase long_case() {
  IfaCase c;
  c.layout = IfaLayout::kBnsd;
  c.batch = 1;
  c.num_heads = 2;
  c.num_kv_heads = 1;
  c.head_dim = 64;
  c.kv_lens = {4000};
  return c;
}

TEST(AclnnIfa, PhaseTwoContract) {
  IfaCaseData data(long_case());
  Handles h;
  const Call c = Call::from(data.args(), &h);
  for (int version = 1; version <= 4; ++version) {
    SCOPED_TRACE("V" + std::to_string(version));
    EXPECT_EQ(phase2(version, nullptr, 0, nullptr, nullptr), ACLNN_ERR_PARAM_NULLPTR);
    uint64_t ws = 0;
    aclOpExecutor* e = nullptr;
    ASSERT_EQ(c.phase1(version, &ws, &e), ACLNN_SUCCESS) << recent();
    // Guard bytes on both sides of the workspace must survive the run.
    constexpr size_t kGuard = 256;
    std::vector<uint8_t> buf(ws + 2 * kGuard, 0xa5);
    void* workspace = buf.data() + kGuard;
    if (ws > 0) {
      EXPECT_EQ(phase2(version, workspace, ws - 1, e, nullptr), ACLNN_ERR_PARAM_INVALID);
      EXPECT_NE(recent().find("workspaceSize"), std::string::npos) << recent();
      EXPECT_EQ(phase2(version, nullptr, ws, e, nullptr), ACLNN_ERR_PARAM_NULLPTR);
    }
    data.poison_outputs();
    ASSERT_EQ(phase2(version, workspace, ws, e, nullptr), ACLNN_SUCCESS) << recent();
    ASSERT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS) << recent();
    for (size_t i = 0; i < kGuard; ++i) {
      ASSERT_EQ(buf[i], 0xa5) << "guard byte before the workspace overwritten at " << i;
      ASSERT_EQ(buf[kGuard + ws + i], 0xa5)
          << "guard byte after the workspace overwritten at " << i;
    }
    EXPECT_TRUE(kvflash::testing::compare_ifa_output(
        "long", data.args(), kvflash::reference::ifa_reference(data.args())));
    // The executor was consumed.
    EXPECT_EQ(phase2(version, workspace, ws, e, nullptr), ACLNN_ERR_PARAM_INVALID);
    EXPECT_NE(recent().find("consumed"), std::string::npos) << recent();
  }
}

TEST(AclnnIfa, WorkspaceIsNeededForLongSequences) {
  IfaCaseData data(long_case());
  Handles h;
  const Call c = Call::from(data.args(), &h);
  uint64_t ws = 0;
  aclOpExecutor* e = nullptr;
  ASSERT_EQ(c.phase1(1, &ws, &e), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyAclOpExecutor(e), ACLNN_SUCCESS);
  if (ws == 0) GTEST_SKIP() << "the kernel needs no workspace here; size checks untested";
  SUCCEED();
}

TEST(AclnnIfa, ResultIsOrderedBeforeLaterStreamWork) {
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  IfaCaseData data(long_case());
  Handles h;
  const Call c = Call::from(data.args(), &h);
  data.poison_outputs();
  uint64_t ws = 0;
  aclOpExecutor* e = nullptr;
  ASSERT_EQ(c.phase1(4, &ws, &e), ACLNN_SUCCESS);
  std::vector<std::byte> workspace(ws);
  ASSERT_EQ(phase2(4, workspace.data(), ws, e, stream), ACLNN_SUCCESS);
  // Queued behind the attention: copies the output once it is complete.
  const TensorView& out = data.args().attention_out;
  const size_t bytes = out.numel() * kvflash::dtype_size(out.dtype);
  std::vector<std::byte> copy(bytes);
  ASSERT_EQ(
      aclrtMemcpyAsync(copy.data(), bytes, out.base(), bytes, ACL_MEMCPY_DEVICE_TO_HOST, stream),
      ACL_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS) << recent();
  EXPECT_EQ(copy, data.output_bytes());
  EXPECT_TRUE(kvflash::testing::compare_ifa_output("ordered", data.args(),
                                                   kvflash::reference::ifa_reference(data.args())));
  EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
}

TEST(AclnnIfa, TwoStreamsComputeIndependentCalls) {
  aclrtStream s1 = nullptr, s2 = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s1), ACL_SUCCESS);
  ASSERT_EQ(aclrtCreateStream(&s2), ACL_SUCCESS);
  IfaCaseData d1(long_case()), d2(small_case());
  Handles h;
  const Call c1 = Call::from(d1.args(), &h), c2 = Call::from(d2.args(), &h);
  d1.poison_outputs();
  d2.poison_outputs();
  uint64_t w1 = 0, w2 = 0;
  aclOpExecutor *e1 = nullptr, *e2 = nullptr;
  ASSERT_EQ(c1.phase1(4, &w1, &e1), ACLNN_SUCCESS);
  ASSERT_EQ(c2.phase1(1, &w2, &e2), ACLNN_SUCCESS);
  std::vector<std::byte> ws1(w1), ws2(w2);
  ASSERT_EQ(phase2(4, ws1.data(), w1, e1, s1), ACLNN_SUCCESS);
  ASSERT_EQ(phase2(1, ws2.data(), w2, e2, s2), ACLNN_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(s1), ACL_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(s2), ACL_SUCCESS);
  EXPECT_TRUE(kvflash::testing::compare_ifa_output("s1", d1.args(),
                                                   kvflash::reference::ifa_reference(d1.args())));
  EXPECT_TRUE(kvflash::testing::compare_ifa_output("s2", d2.args(),
                                                   kvflash::reference::ifa_reference(d2.args())));
  EXPECT_EQ(aclrtDestroyStream(s1), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(s2), ACL_SUCCESS);
}

TEST(AclnnIfa, ActualSeqLengthsAreCopiedInPhaseOne) {
  IfaCaseData data(small_case());
  Handles h;
  Call c = Call::from(data.args(), &h);
  uint64_t ws = 0;
  aclOpExecutor* e = nullptr;
  ASSERT_EQ(c.phase1(1, &ws, &e), ACLNN_SUCCESS);
  h.destroy_array(const_cast<aclIntArray*>(c.lens));  // gone before phase 2
  std::vector<std::byte> workspace(ws);
  data.poison_outputs();
  ASSERT_EQ(phase2(1, workspace.data(), ws, e, nullptr), ACLNN_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);
  EXPECT_TRUE(kvflash::testing::compare_ifa_output("lens", data.args(),
                                                   kvflash::reference::ifa_reference(data.args())));
}

std::vector<int32_t> table_of(const TensorView& bt) {
  EXPECT_TRUE(bt.is_contiguous());
  const auto* p = static_cast<const int32_t*>(bt.data);
  return std::vector<int32_t>(p, p + bt.numel());
}

IfaCase paged_case() {
  IfaCase spec = small_case();
  spec.paged = true;
  spec.block_size = 16;
  spec.kv_lens = {40, 17};
  return spec;
}

// Bug 1 (stream order): a block table copied asynchronously on the same stream before phase 2 is
// the one the operator uses. The table in device memory is invalid when phase 2 is called (an
// enqueue-time check would refuse it); the copy queued before the operator makes it valid.
TEST(AclnnIfa, BlockTableCopiedAsyncBeforeTheCallIsHonoured) {
  IfaCaseData data(paged_case());
  const TensorView& bt = *data.args().block_table;
  const std::vector<int32_t> good = table_of(bt);
  std::fill_n(static_cast<int32_t*>(bt.data), bt.numel(), -1);  // stale: invalid everywhere
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  {
    Handles h;
    const Call c = Call::from(data.args(), &h);
    uint64_t ws = 0;
    aclOpExecutor* e = nullptr;
    ASSERT_EQ(c.phase1(3, &ws, &e), ACLNN_SUCCESS) << recent();
    std::vector<std::byte> workspace(ws);
    kvflash::testing::StreamGate gate(stream);
    const size_t bytes = good.size() * sizeof(int32_t);
    ASSERT_EQ(
        aclrtMemcpyAsync(bt.data, bytes, good.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE, stream),
        ACL_SUCCESS);
    data.poison_outputs();
    ASSERT_EQ(phase2(3, workspace.data(), ws, e, stream), ACLNN_SUCCESS) << recent();
    gate.release();
    ASSERT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS) << recent();
  }
  EXPECT_TRUE(kvflash::testing::compare_ifa_output("async table", data.args(),
                                                   kvflash::reference::ifa_reference(data.args())));
  EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
}

// The converse: a valid table when phase 2 is called, overwritten with a bad id by a copy queued
// before the operator. The run finds it (never dereferencing it) and the stream's next
// synchronisation reports it, like a kernel fault; the batch's outputs are NaN.
TEST(AclnnIfa, BadBlockIdCopiedAsyncIsReportedAtSynchronize) {
  IfaCaseData data(paged_case());
  const TensorView& bt = *data.args().block_table;
  std::vector<int32_t> bad = table_of(bt);
  bad[0] = static_cast<int32_t>(data.num_blocks());  // batch 0, slot 0: referenced
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  {
    Handles h;
    const Call c = Call::from(data.args(), &h);
    uint64_t ws = 0;
    aclOpExecutor* e = nullptr;
    ASSERT_EQ(c.phase1(3, &ws, &e), ACLNN_SUCCESS) << recent();
    std::vector<std::byte> workspace(ws);
    kvflash::testing::StreamGate gate(stream);
    const size_t bytes = bad.size() * sizeof(int32_t);
    ASSERT_EQ(
        aclrtMemcpyAsync(bt.data, bytes, bad.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE, stream),
        ACL_SUCCESS);
    ASSERT_EQ(phase2(3, workspace.data(), ws, e, stream), ACLNN_SUCCESS) << recent();
    gate.release();
    EXPECT_EQ(aclrtSynchronizeStream(stream), ACL_ERROR_RT_AICORE_EXCEPTION);
    EXPECT_NE(recent().find("block_table[0][0] (" + std::to_string(data.num_blocks()) + ")"),
              std::string::npos)
        << recent();
    EXPECT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS);  // reported once
  }
  const TensorView& out = data.args().attention_out;
  const auto* o = static_cast<const uint16_t*>(out.data);
  const int64_t row = out.numel() / out.shape[0];
  for (int64_t i = 0; i < row; ++i) {
    ASSERT_TRUE(std::isnan(kvflash::core::fp16_to_float(o[i]))) << i;
  }
  EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
}

// kv_padding_size is device data too: the value written by a copy queued before the operator is
// the one used. The device holds a stale padding (every batch would be empty) at phase 1 and 2.
TEST(AclnnIfa, KvPaddingSizeIsReadInStreamOrder) {
  IfaCase spec = small_case();
  spec.kv_padding = 2;
  IfaCaseData data(spec);
  auto* pad = static_cast<int64_t*>(data.args().kv_padding_size->base());
  const int64_t wanted = *pad;
  *pad = 1000;
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  {
    Handles h;
    const Call c = Call::from(data.args(), &h);
    uint64_t ws = 0;
    aclOpExecutor* e = nullptr;
    ASSERT_EQ(c.phase1(4, &ws, &e), ACLNN_SUCCESS) << recent();
    std::vector<std::byte> workspace(ws);
    kvflash::testing::StreamGate gate(stream);
    ASSERT_EQ(aclrtMemcpyAsync(pad, sizeof(wanted), &wanted, sizeof(wanted),
                               ACL_MEMCPY_HOST_TO_DEVICE, stream),
              ACL_SUCCESS);
    data.poison_outputs();
    ASSERT_EQ(phase2(4, workspace.data(), ws, e, stream), ACLNN_SUCCESS) << recent();
    gate.release();
    ASSERT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS) << recent();
  }
  EXPECT_TRUE(kvflash::testing::compare_ifa_output("pad", data.args(),
                                                   kvflash::reference::ifa_reference(data.args())));
  EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
}

TEST(AclnnIfa, ConcurrentCallsFromManyThreads) {
  constexpr int kThreads = 4;
  std::vector<std::unique_ptr<IfaCaseData>> data;
  for (int i = 0; i < kThreads; ++i) {
    IfaCase spec = small_case();
    spec.tag = "t" + std::to_string(i);
    data.push_back(std::make_unique<IfaCaseData>(spec));
  }
  std::vector<aclnnStatus> status(kThreads, -1);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      aclrtStream stream = nullptr;
      if (aclrtCreateStream(&stream) != ACL_SUCCESS) return;
      Handles h;
      const Call c = Call::from(data[i]->args(), &h);
      data[i]->poison_outputs();
      status[i] = run_call(c, 1 + i % 4, stream);
      aclrtDestroyStream(stream);
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < kThreads; ++i) {
    ASSERT_EQ(status[i], ACLNN_SUCCESS) << i;
    EXPECT_TRUE(kvflash::testing::compare_ifa_output(
        "thread", data[i]->args(), kvflash::reference::ifa_reference(data[i]->args())));
  }
}

// ---- phase 1's reuse of the last plan (aclnn/acl_objects.hpp, plan_executor_reusing) -----------

// Calls that differ from the previous one in a single argument each (data pointers, the scale,
// the lengths) compute with their own arguments: a reuse of the previous call's plan and tensors
// would leave the poisoned output, or the previous arguments' values, in place.
TEST(AclnnIfa, PhaseOneReusesAPlanOnlyForIdenticalArguments) {
  IfaCase spec = small_case();
  IfaCaseData d1(spec);
  spec.tag = "twin";  // the same metadata over other buffers
  IfaCaseData d2(spec);
  Handles h;
  const Call c1 = Call::from(d1.args(), &h), c2 = Call::from(d2.args(), &h);
  // d1's tensors with another scale, and with shorter lengths.
  IfaArgs scaled = d1.args();
  scaled.scale_value *= 0.5;
  Call c_scaled = c1;
  c_scaled.scale = scaled.scale_value;
  IfaArgs shorter = d1.args();
  (*shorter.actual_seq_lengths)[0] -= 5;
  Call c_shorter = c1;
  c_shorter.lens = h.ints(shorter.actual_seq_lengths);
  struct Step {
    const char* name;
    const Call* call;
    IfaCaseData* data;
    const IfaArgs* args;  // what the reference computes
  };
  const Step steps[] = {{"d1", &c1, &d1, &d1.args()},         {"d1 again", &c1, &d1, &d1.args()},
                        {"d2", &c2, &d2, &d2.args()},         {"d1 after d2", &c1, &d1, &d1.args()},
                        {"scale", &c_scaled, &d1, &scaled},   {"lengths", &c_shorter, &d1, &shorter},
                        {"d1 at last", &c1, &d1, &d1.args()}};
  for (const Step& step : steps) {
    step.data->poison_outputs();
    ASSERT_EQ(run_call(*step.call, 4), ACLNN_SUCCESS) << step.name << ": " << recent();
    EXPECT_TRUE(kvflash::testing::compare_ifa_output(step.name, *step.args,
                                                     kvflash::reference::ifa_reference(*step.args)))
        << step.name;
  }
  // Two executors of one call (the second reusing the first's plan) are each single-use, and
  // each runs.
  uint64_t w1 = 0, w2 = 0;
  aclOpExecutor *e1 = nullptr, *e2 = nullptr;
  ASSERT_EQ(c1.phase1(4, &w1, &e1), ACLNN_SUCCESS);
  ASSERT_EQ(c1.phase1(4, &w2, &e2), ACLNN_SUCCESS);
  EXPECT_NE(e1, e2);
  EXPECT_EQ(w1, w2);
  std::vector<std::byte> ws(w1);
  for (aclOpExecutor* e : {e1, e2}) {
    d1.poison_outputs();
    ASSERT_EQ(phase2(4, ws.data(), w1, e, nullptr), ACLNN_SUCCESS);
    ASSERT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);
    EXPECT_TRUE(kvflash::testing::compare_ifa_output(
        "executor", d1.args(), kvflash::reference::ifa_reference(d1.args())));
    EXPECT_EQ(phase2(4, ws.data(), w1, e, nullptr), ACLNN_ERR_PARAM_INVALID);  // consumed
  }
}

// An invalid call right after a valid one with the same tensors is refused in phase 1 as ever:
// the reuse is for identical arguments only, and validation runs for everything else.
TEST(AclnnIfa, InvalidCallAfterAValidOneIsStillRefusedInPhaseOne) {
  IfaCaseData data(small_case());
  Handles h;
  const Call good = Call::from(data.args(), &h);
  aclTensor* bad_out = h.tensor(strided_output(data));
  const std::vector<int64_t> too_long = {1000, 9};
  const aclIntArray* long_lens = h.ints(too_long);
  const std::vector<std::pair<std::string, std::function<void(Call*)>>> cases = {
      {"numHeads 0", [](Call* c) { c->num_heads = 0; }},
      {"numKeyValueHeads 3", [](Call* c) { c->num_kv_heads = 3; }},
      {"layout XYZ", [](Call* c) { c->layout = "XYZ"; }},
      {"non-contiguous attentionOut", [&](Call* c) { c->out = bad_out; }},
      {"innerPrecise 2", [](Call* c) { c->inner_precise = 2; }},
      {"actualSeqLengths past the cache", [&](Call* c) { c->lens = long_lens; }},
  };
  for (const auto& [name, apply] : cases) {
    uint64_t ws = 0;
    aclOpExecutor* e = nullptr;
    ASSERT_EQ(good.phase1(4, &ws, &e), ACLNN_SUCCESS) << name << ": " << recent();
    ASSERT_EQ(aclDestroyAclOpExecutor(e), ACLNN_SUCCESS);
    Call bad = good;
    apply(&bad);
    e = kSentinel;
    EXPECT_EQ(bad.phase1(4, &ws, &e), ACLNN_ERR_PARAM_INVALID) << name;
    EXPECT_EQ(e, nullptr) << name;
    EXPECT_FALSE(recent().empty()) << name;
  }
  data.poison_outputs();
  ASSERT_EQ(run_call(good, 4), ACLNN_SUCCESS) << recent();
  EXPECT_TRUE(kvflash::testing::compare_ifa_output("good", data.args(),
                                                   kvflash::reference::ifa_reference(data.args())));
}

// same_arguments (the comparison behind the reuse) tells apart argument sets that differ in any
// member of any field: each change below alone makes a difference.
TEST(AclnnSameArguments, EveryMemberOfEveryFieldCounts) {
  IfaCase spec = small_case();
  spec.mask = kvflash::testing::MaskShape::kBS;
  IfaCaseData data(spec);
  const IfaArgs& base = data.args();
  const auto same = [](const IfaArgs& a, const IfaArgs& b) {
    return kvflash::aclnn::same_arguments<kvflash::ifa::kFields>(a, b);
  };
  ASSERT_TRUE(same(base, base));
  ASSERT_TRUE(same(base, IfaArgs(base)));
  const std::vector<std::pair<std::string, std::function<void(IfaArgs*)>>> changes = {
      {"query data", [](IfaArgs* a) { a->query.data = static_cast<char*>(a->query.data) + 2; }},
      {"query dtype", [](IfaArgs* a) { a->query.dtype = DType::kBFloat16; }},
      {"query rank", [](IfaArgs* a) { a->query.rank = 4; }},
      {"query dim", [](IfaArgs* a) { a->query.shape[0] += 1; }},
      {"query dim past the rank", [](IfaArgs* a) { a->query.shape[5] = 7; }},
      {"query stride", [](IfaArgs* a) { a->query.strides[0] += 1; }},
      {"query offset", [](IfaArgs* a) { a->query.offset = 1; }},
      {"query device", [](IfaArgs* a) { a->query.device.index = 1; }},
      {"key list length", [](IfaArgs* a) { a->key.push_back(a->key[0]); }},
      {"key element", [](IfaArgs* a) { a->key[0].strides[0] += 1; }},
      {"value element", [](IfaArgs* a) { a->value[0].offset = 3; }},
      {"mask absent", [](IfaArgs* a) { a->atten_mask.reset(); }},
      {"mask dim", [](IfaArgs* a) { a->atten_mask->shape[0] += 1; }},
      {"pse present", [](IfaArgs* a) { a->pse_shift = a->query; }},
      {"lengths absent", [](IfaArgs* a) { a->actual_seq_lengths.reset(); }},
      {"length value", [](IfaArgs* a) { (*a->actual_seq_lengths)[1] -= 1; }},
      {"lengths count", [](IfaArgs* a) { a->actual_seq_lengths->push_back(1); }},
      {"numHeads", [](IfaArgs* a) { a->num_heads *= 2; }},
      {"scale", [](IfaArgs* a) { a->scale_value = std::nextafter(a->scale_value, 2.0); }},
      {"scale -0.0 against 0.0", [](IfaArgs* a) { a->scale_value = -0.0; }},
      {"layout", [](IfaArgs* a) { a->input_layout = "BSND"; }},
      {"numKeyValueHeads", [](IfaArgs* a) { a->num_key_value_heads += 1; }},
      {"blockSize", [](IfaArgs* a) { a->block_size = 16; }},
      {"innerPrecise", [](IfaArgs* a) { a->inner_precise = 0; }},
      {"attentionOut data", [](IfaArgs* a) { a->attention_out.data = nullptr; }},
      {"softmax_lse present", [](IfaArgs* a) { a->softmax_lse = a->query; }},
      {"zero_fully_masked_rows", [](IfaArgs* a) { a->zero_fully_masked_rows = true; }},
      {"blocks_may_repeat", [](IfaArgs* a) { a->blocks_may_repeat = true; }},
  };
  for (const auto& [name, change] : changes) {
    IfaArgs other = base;
    if (name == "scale -0.0 against 0.0") {
      IfaArgs zero = base;
      zero.scale_value = 0.0;
      change(&other);
      EXPECT_FALSE(same(zero, other)) << name;
      continue;
    }
    change(&other);
    EXPECT_FALSE(same(base, other)) << name;
    EXPECT_FALSE(same(other, base)) << name;
  }
  // A NaN scale equals itself bit for bit (the same call), not another NaN.
  IfaArgs nan1 = base, nan2 = base;
  nan1.scale_value = std::numeric_limits<double>::quiet_NaN();
  nan2.scale_value = -std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(same(nan1, IfaArgs(nan1)));
  EXPECT_FALSE(same(nan1, nan2));
}

// ---- what each version passes on ---------------------------------------------------------------

TEST(AclnnIfa, V1AndV2IgnorePseShiftV3AndV4ApplyIt) {
  IfaCase spec = small_case();
  spec.pse = kvflash::testing::PseShape::kBatch;
  IfaCaseData data(spec);
  ASSERT_TRUE(data.args().pse_shift.has_value());
  IfaArgs without_pse = data.args();
  without_pse.pse_shift.reset();
  const auto ref_without = kvflash::reference::ifa_reference(without_pse);
  const auto ref_with = kvflash::reference::ifa_reference(data.args());
  Handles h;
  Call c = Call::from(data.args(), &h);
  for (int version = 1; version <= 2; ++version) {
    data.poison_outputs();
    ASSERT_EQ(run_call(c, version), ACLNN_SUCCESS) << recent();
    EXPECT_TRUE(kvflash::testing::compare_ifa_output("no-pse", data.args(), ref_without))
        << "V" << version;
    // Not even looked at: a pointer that is no tensor at all is fine.
    Call garbage = c;
    garbage.pse = reinterpret_cast<const aclTensor*>(uintptr_t{0x8});
    data.poison_outputs();
    ASSERT_EQ(run_call(garbage, version), ACLNN_SUCCESS) << recent();
    EXPECT_TRUE(kvflash::testing::compare_ifa_output("no-pse", data.args(), ref_without))
        << "V" << version;
  }
  for (int version = 3; version <= 4; ++version) {
    data.poison_outputs();
    ASSERT_EQ(run_call(c, version), ACLNN_SUCCESS) << recent();
    EXPECT_TRUE(kvflash::testing::compare_ifa_output("pse", data.args(), ref_with))
        << "V" << version;
    // ... and the pse makes a difference, so the V1/V2 check above could fail.
    EXPECT_FALSE(kvflash::testing::compare_ifa_output("pse-vs-none", data.args(), ref_without));
  }
}

TEST(AclnnIfa, V4AppliesKvPadding) {
  IfaCase spec = small_case();
  spec.kv_padding = 2;
  IfaCaseData data(spec);
  Handles h;
  const Call c = Call::from(data.args(), &h);
  data.poison_outputs();
  ASSERT_EQ(run_call(c, 4), ACLNN_SUCCESS) << recent();
  EXPECT_TRUE(kvflash::testing::compare_ifa_output("padded", data.args(),
                                                   kvflash::reference::ifa_reference(data.args())));
}

// ---- strided inputs and the reference ----------------------------------------------------------

TEST(AclnnIfa, StridedInputViewsAreHonoured) {
  for (IfaLayout layout : {IfaLayout::kBsh, IfaLayout::kBsnd, IfaLayout::kBnsd}) {
    IfaCase spec = small_case();
    spec.layout = layout;
    spec.strided = true;
    spec.mask = kvflash::testing::MaskShape::kB11S;
    IfaCaseData data(spec);
    ASSERT_FALSE(data.args().query.is_contiguous());
    Handles h;
    const Call c = Call::from(data.args(), &h);
    data.poison_outputs();
    ASSERT_EQ(run_call(c, 1), ACLNN_SUCCESS) << recent();
    EXPECT_TRUE(kvflash::testing::compare_ifa_output(
        spec.name(), data.args(), kvflash::reference::ifa_reference(data.args())));
  }
}

TEST(AclnnIfa, MatchesTheReferenceOnTheSharedCaseList) {
  int ran = 0;
  for (const IfaCase& spec : kvflash::testing::ifa_cases_for_run()) {
    if (spec.lse || spec.zero_fully_masked) continue;  // kvflash extensions, not in aclnn
    IfaCaseData data(spec);
    if (data.args().num_threads != 0) continue;
    Handles h;
    const Call c = Call::from(data.args(), &h);
    const int version = version_for(data.args());
    data.poison_outputs();
    ASSERT_EQ(run_call(c, version), ACLNN_SUCCESS) << spec.name() << ": " << recent();
    kvflash::testing::IfaCompareOptions options;
    options.allow_mostly_empty = spec.expect_mostly_empty;
    EXPECT_TRUE(kvflash::testing::compare_ifa_output(
        spec.name(), data.args(), kvflash::reference::ifa_reference(data.args()), options))
        << "V" << version;
    ++ran;
  }
  EXPECT_GE(ran, 5);
  std::printf("%d cases through the aclnn API\n", ran);
}

}  // namespace
