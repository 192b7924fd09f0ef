// Regression tests for the bugs the fuzz targets, the fault test and the fuzzing campaign found
// (docs/testing.md, "Findings"; each test names its finding). The reproducing fuzz inputs are in
// fuzz/corpus/<target>/ and replayed by CTest fuzz_replay_<target> as well; these tests pin each
// bug down without the fuzz harness. Several fail only under a sanitizer (the ASan+UBSan pass).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "aclnnop/aclnn_incre_flash_attention.h"
#include "ifa_reference.hpp"
#include "kvflash/ifa.hpp"
#include "kvflash/sfa.hpp"
#include "support/acl_raw.h"
#include "support/compare.hpp"
#include "support/ifa_cases.hpp"
#include "support/ifa_run.hpp"
#include "support/sfa_cases.hpp"

namespace kvflash::testing {
namespace {

constexpr int64_t kHuge = int64_t{1} << 62;

std::string msg() { return last_error_message(); }

IfaCase small_ifa() {
  IfaCase c;
  c.batch = 2;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 16;
  c.kv_lens = {5, 9};
  c.tag = "finding";
  return c;
}

// Runs args through a fresh plan; the status of create, then of run.
std::pair<Status, Status> create_and_run(const IfaArgs& args) {
  std::unique_ptr<IfaPlan> plan;
  const Status c = IfaPlan::create(args, &plan);
  if (c != Status::kSuccess) return {c, Status::kSuccess};
  std::vector<std::byte> ws(plan->workspace_size());
  return {c, plan->run(args, ws.data(), ws.size())};
}

// F1: value list shorter than the key list: IfaPlan::create read value[i] past the end of the
// vector while checking devices (AddressSanitizer: heap-buffer-overflow).
TEST(FuzzFindings, F1_ValueListShorterThanKeyList) {
  IfaCase c = small_ifa();
  c.list_mode = true;
  IfaCaseData data(c);
  IfaArgs a = data.args();
  a.value.pop_back();
  std::unique_ptr<IfaPlan> plan;
  EXPECT_EQ(IfaPlan::create(a, &plan), Status::kInvalid);
  EXPECT_NE(msg().find("value list length"), std::string::npos) << msg();
}

// F2: an aclDataType outside the enum's range (a C caller may pass any int) was read as the C++
// enum (UndefinedBehaviorSanitizer: invalid enum load) when a tensor reached an operator, and
// likewise aclFormat, aclrtMemcpyKind, aclrtMemMallocPolicy and aclDataTypeSize's argument.
TEST(FuzzFindings, F2_OutOfRangeEnumArguments) {
  uint16_t q[64] = {};
  const int64_t dims[] = {1, 1, 64}, strides[] = {64, 64, 1};
  aclTensor* t = kvflash_raw_create_tensor(dims, 3, 99, strides, 0, 1234, nullptr, 0, q);
  ASSERT_NE(t, nullptr) << aclGetRecentErrMsg();  // any dtype is accepted by aclCreateTensor
  aclnnStatus st = 0;
  EXPECT_EQ(kvflash_raw_get_data_type(t, &st), 99);
  EXPECT_EQ(st, ACLNN_SUCCESS);
  aclTensorList* list = aclCreateTensorList(&t, 1);
  uint64_t ws = 0;
  aclOpExecutor* exec = nullptr;
  char layout[] = "BSH";
  EXPECT_EQ(aclnnIncreFlashAttentionGetWorkspaceSize(t, list, list, nullptr, nullptr, nullptr, 1,
                                                     1.0, layout, 1, t, &ws, &exec),
            ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("aclDataType 99"), std::string::npos)
      << aclGetRecentErrMsg();
  EXPECT_EQ(kvflash_raw_data_type_size(99), 0u);
  EXPECT_EQ(kvflash_raw_data_type_size(-7), 0u);
  void* p = nullptr;
  EXPECT_EQ(kvflash_raw_malloc(&p, 64, 99), ACL_ERROR_INVALID_PARAM);
  char a[8] = {}, b[8] = {};
  EXPECT_EQ(kvflash_raw_memcpy(a, 8, b, 8, 99), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclDestroyTensorList(list), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyTensor(t), ACLNN_SUCCESS);
}

// F3: TensorView::numel() multiplied dims without overflow checks (signed overflow) and read
// dims beyond kMaxRank for a bad rank; SfaPlan::create called it on an unchecked tensor.
TEST(FuzzFindings, F3_NumelOfHugeOrInvalidViews) {
  TensorView v;
  v.rank = 3;
  v.shape = {kHuge, 4, 1};
  EXPECT_EQ(v.numel(), std::numeric_limits<int64_t>::max());
  v.shape = {kHuge, 0, 4};
  EXPECT_EQ(v.numel(), 0);
  v.rank = 12;  // only the first kMaxRank dims are ever read
  v.shape.fill(2);
  EXPECT_EQ(v.numel(), 256);
  EXPECT_FALSE(v.is_contiguous());
  EXPECT_EQ(v.describe(), "fp32[2,2,2,2,2,2,2,2]");
  v.rank = -3;
  EXPECT_EQ(v.numel(), 1);
  EXPECT_EQ(v.describe(), "fp32[]");
}

// F4: a plan made with a NaN scale_value refused its own run ("scale_value differs from the
// plan's": NaN != NaN), so through aclnn the stream failed with 507015 on good data.
TEST(FuzzFindings, F4_NanScaleValueRuns) {
  IfaCaseData data(small_ifa());
  IfaArgs a = data.args();
  a.scale_value = std::numeric_limits<double>::quiet_NaN();
  const auto [c, r] = create_and_run(a);
  ASSERT_EQ(c, Status::kSuccess) << msg();
  EXPECT_EQ(r, Status::kSuccess) << msg();
  const reference::IfaReference ref = reference::ifa_reference(a);
  EXPECT_TRUE(compare_ifa_output("nan scale", a, ref));  // NaN everywhere, as the reference
}

// F5: SfaPlan::create accepted num_threads < 0 that SfaPlan::run then refused.
TEST(FuzzFindings, F5_SfaNegativeThreadsRefusedAtCreate) {
  SfaCase c;
  c.num_heads = 2;
  c.sparse_size = 4;
  c.kv_lens = {12};
  SfaCaseData data(c);
  SfaArgs a = data.args();
  a.num_threads = -1;
  std::unique_ptr<SfaPlan> plan;
  EXPECT_EQ(SfaPlan::create(a, &plan), Status::kInvalid);
  EXPECT_NE(msg().find("num_threads"), std::string::npos) << msg();
}

// F6: SFA messages that named no argument ("group size N1/N2", "sparse_size K", "block_size").
TEST(FuzzFindings, F6_SfaMessagesNameTheirArgument) {
  SfaCase c;
  c.num_heads = 2;
  c.sparse_size = 4;
  c.kv_lens = {12};
  c.kv_layout = SfaKvLayout::kPaBsnd;
  SfaCaseData data(c);
  {
    SfaArgs a = data.args();
    a.query.shape[2] = 3;  // N1 = 3: not a power of two
    a.query_rope.shape[2] = 3;
    a.attention_out.shape[2] = 3;
    std::unique_ptr<SfaPlan> plan;
    EXPECT_EQ(SfaPlan::create(a, &plan), Status::kInvalid);
    EXPECT_NE(msg().find("query heads"), std::string::npos) << msg();
  }
  {
    SfaArgs a = data.args();
    a.sparse_indices.shape[3] = 0;
    std::unique_ptr<SfaPlan> plan;
    EXPECT_EQ(SfaPlan::create(a, &plan), Status::kInvalid);
    EXPECT_NE(msg().find("sparse_indices"), std::string::npos) << msg();
  }
  {
    SfaArgs a = data.args();
    for (TensorView* t : {&a.key, &a.key_rope}) t->shape[1] = 8;  // block_size 8
    std::unique_ptr<SfaPlan> plan;
    EXPECT_EQ(SfaPlan::create(a, &plan), Status::kInvalid);
    EXPECT_NE(msg().find("key block_size"), std::string::npos) << msg();
  }
}

// F7: a dim of extent 1 may carry any stride; the kernel derived byte strides from it
// (s_head * element size: signed overflow) even though it never steps that dim.
TEST(FuzzFindings, F7_HugeStrideOnUnitDim) {
  IfaCase c = small_ifa();
  c.layout = IfaLayout::kBsnd;
  c.num_heads = 2;
  c.num_kv_heads = 1;
  IfaCaseData data(c);
  IfaArgs a = data.args();
  for (auto* list : {&a.key, &a.value})
    for (TensorView& t : *list) t.strides[2] = kHuge;  // (B, S, KV_N = 1, D)
  a.query.strides[1] = kHuge;                          // Q_S = 1
  const auto [cr, rr] = create_and_run(a);
  ASSERT_EQ(cr, Status::kSuccess) << msg();
  ASSERT_EQ(rr, Status::kSuccess) << msg();
  EXPECT_TRUE(compare_ifa_output(c.name(), a, reference::ifa_reference(a)));
}

// F8: a kv_padding_size the plan ignores (paged KV: docs/semantics.md §2.7) is not validated by
// create, but run matched it like any tensor and refused a null one (161001) with the very same
// arguments.
TEST(FuzzFindings, F8_IgnoredKvPaddingSizeIsIgnoredByRun) {
  IfaCase c = small_ifa();
  c.paged = true;
  c.block_size = 16;
  IfaCaseData data(c);
  IfaArgs a = data.args();
  TensorView pad = TensorView::contiguous(nullptr, DType::kInt64, {3});  // elements, no data
  a.kv_padding_size = pad;
  const auto [cr, rr] = create_and_run(a);
  ASSERT_EQ(cr, Status::kSuccess) << msg();
  EXPECT_EQ(rr, Status::kSuccess) << msg();
  // A run with another ignored kv_padding_size (or none) matches the plan as well.
  std::unique_ptr<IfaPlan> plan;
  ASSERT_EQ(IfaPlan::create(a, &plan), Status::kSuccess);
  std::vector<std::byte> ws(plan->workspace_size());
  IfaArgs b = data.args();
  EXPECT_EQ(plan->run(b, ws.data(), ws.size()), Status::kSuccess) << msg();
}

// F9: the reference read kv_padding_size through a double and cast it back (UBSan: float-cast
// overflow for INT64_MAX) and computed S - pad - len with signed overflow.
TEST(FuzzFindings, F9_ReferenceHugeKvPadding) {
  IfaCase c = small_ifa();
  c.layout = IfaLayout::kBsnd;
  c.kv_padding = 0;
  IfaCaseData data(c);
  IfaArgs a = data.args();
  const int64_t pad = std::numeric_limits<int64_t>::max();
  std::memcpy(a.kv_padding_size->data, &pad, 8);
  const auto [cr, rr] = create_and_run(a);
  ASSERT_EQ(cr, Status::kSuccess) << msg();
  ASSERT_EQ(rr, Status::kSuccess) << msg();
  const reference::IfaReference ref = reference::ifa_reference(a);
  for (auto k : ref.row_kind) EXPECT_EQ(k, reference::IfaRowKind::kEmpty);
  IfaCompareOptions o;
  o.allow_mostly_empty = true;
  EXPECT_TRUE(compare_ifa_output(c.name(), a, ref, o));
}

// F12: int8 KV folds the antiquant scale and offset into the query: (q*sc)·k + (q*sc)·off. With
// an infinite query element that is not the spec's q·((k + off) * sc): inf * 0 gave NaN where the
// spec (and the reference) has +-inf, so a row with -inf scores and a masked position came out
// NaN (int8: 0) instead of the masked positions' mean. Such heads are now scored term by term.
TEST(FuzzFindings, F12_Int8KvInfiniteQuery) {
  IfaCase c;
  c.layout = IfaLayout::kBsnd;
  c.kv_dtype = DType::kInt8;
  c.out_dtype = DType::kInt8;
  c.num_heads = 2;
  c.num_kv_heads = 1;
  c.head_dim = 32;
  c.kv_lens = {2};
  c.paged = true;
  c.block_size = 32;
  c.broadcast_length = true;
  c.mask = MaskShape::kBN1S;
  c.pse = PseShape::kBroadcast;
  c.antiquant = QuantMode::kPerTensor;
  c.antiquant_offset = false;  // offset 0: (q*sc)·0 = inf * 0
  c.out_quant = QuantMode::kPerChannel;
  c.logit_scale = 3;
  for (const double x : {-HUGE_VAL, HUGE_VAL, std::nan("")}) {
    for (const cpu::Isa isa : isas_to_test()) {
      ScopedIsaCap cap(isa);
      IfaCaseData data(c);
      IfaArgs a = data.args();
      static_cast<uint16_t*>(a.query.data)[a.query.offset + 35] =
          x < 0   ? 0xFC00
          : x > 0 ? 0x7C00
                  : 0x7E00;  // fp16 bits; element 35: head 1, d 3
      ASSERT_EQ(incre_flash_attention(a), Status::kSuccess) << msg();
      EXPECT_TRUE(compare_ifa_output(c.name(), a, reference::ifa_reference(a)))
          << "query element " << x << " at " << cpu::isa_name(isa);
    }
  }
}

}  // namespace
}  // namespace kvflash::testing
