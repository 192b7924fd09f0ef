// One test per SFA validation rule (docs/semantics.md §3.5, §3.3 ranges, decisions #13/#18/#20):
// each breaks exactly one argument of an otherwise valid call and expects the documented code and a
// message naming the argument.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "kvflash/sfa.hpp"
#include "support/sfa_cases.hpp"

namespace kvflash::testing {
namespace {

SfaCase base_case(SfaQLayout q, SfaKvLayout kv) {
  SfaCase c;
  c.q_layout = q;
  c.kv_layout = kv;
  c.num_heads = 2;
  c.sparse_size = 4;
  c.q_lens = {1, 2};
  c.kv_lens = {8, 20};
  c.q_slack = 1;
  c.lse = kv != SfaKvLayout::kPaBsnd;
  c.sinks = true;
  c.block_size = 16;
  return c;
}

class SfaValidateTest : public ::testing::Test {
 protected:
  SfaValidateTest()
      : bsnd_(base_case(SfaQLayout::kBsnd, SfaKvLayout::kBsnd)),
        tnd_(base_case(SfaQLayout::kTnd, SfaKvLayout::kTnd)),
        pa_(base_case(SfaQLayout::kBsnd, SfaKvLayout::kPaBsnd)) {}

  // Creates a plan and checks the code and that the message mentions `needle`.
  static void expect(const SfaArgs& a, Status want, const std::string& needle) {
    std::unique_ptr<SfaPlan> plan;
    const Status got = SfaPlan::create(a, &plan);
    EXPECT_EQ(static_cast<int>(got), static_cast<int>(want)) << last_error_message();
    if (want != Status::kSuccess) {
      EXPECT_EQ(plan, nullptr);
      const std::string msg = last_error_message();
      EXPECT_NE(msg.find("[sparse_flash_attention]"), std::string::npos) << msg;
      EXPECT_NE(msg.find(needle), std::string::npos) << "message: " << msg;
    }
  }
  static void invalid(const SfaArgs& a, const std::string& needle) {
    expect(a, Status::kInvalid, needle);
  }
  // Device data (the actual lengths) is checked by the run: create succeeds, run returns kInvalid
  // naming `needle`, and every output is NaN.
  static void invalid_at_run(const SfaArgs& a, const std::string& needle) {
    std::unique_ptr<SfaPlan> plan;
    ASSERT_EQ(SfaPlan::create(a, &plan), Status::kSuccess) << last_error_message();
    std::vector<std::byte> ws(plan->workspace_size());
    EXPECT_EQ(plan->run(a, ws.data(), ws.size()), Status::kInvalid);
    const std::string msg = last_error_message();
    EXPECT_NE(msg.find("[sparse_flash_attention]"), std::string::npos) << msg;
    EXPECT_NE(msg.find(needle), std::string::npos) << "message: " << msg;
    const uint16_t* out = static_cast<const uint16_t*>(a.attention_out.data);
    for (int64_t i = 0; i < a.attention_out.numel(); ++i) {
      ASSERT_TRUE((out[i] & 0x7c00) == 0x7c00 && (out[i] & 0x3ff) != 0) << i;
    }
  }
  static void null(const SfaArgs& a, const std::string& needle) {
    expect(a, Status::kNullPtr, needle);
  }
  static void set_i32(const TensorView& v, int64_t i, int32_t x) {
    static_cast<int32_t*>(v.data)[v.offset + i * v.strides[0]] = x;
  }

  SfaCaseData bsnd_, tnd_, pa_;
};

TEST_F(SfaValidateTest, ValidBaseCasesAreAccepted) {
  expect(bsnd_.args(), Status::kSuccess, "");
  expect(tnd_.args(), Status::kSuccess, "");
  expect(pa_.args(), Status::kSuccess, "");
}

// ---- rule 1: null pointers -----------------------------------------------------------------
TEST_F(SfaValidateTest, Rule1NullQuery) {
  SfaArgs a = bsnd_.args();
  a.query.data = nullptr;
  null(a, "query");
}
TEST_F(SfaValidateTest, Rule1NullKey) {
  SfaArgs a = bsnd_.args();
  a.key.data = nullptr;
  null(a, "key");
}
TEST_F(SfaValidateTest, Rule1NullSparseIndices) {
  SfaArgs a = bsnd_.args();
  a.sparse_indices.data = nullptr;
  null(a, "sparse_indices");
}
TEST_F(SfaValidateTest, Rule1NullAttentionOut) {
  SfaArgs a = bsnd_.args();
  a.attention_out.data = nullptr;
  null(a, "attention_out");
}
TEST_F(SfaValidateTest, Rule1GivenValueWithNullData) {
  SfaArgs a = bsnd_.args();
  a.value = a.key;
  a.value->data = nullptr;
  null(a, "value");
}
TEST_F(SfaValidateTest, Rule1NullRopesAreInvalidNotNull) {
  SfaArgs a = bsnd_.args();
  a.query_rope.data = nullptr;
  invalid(a, "query_rope");
  a = bsnd_.args();
  a.key_rope.data = nullptr;
  invalid(a, "key_rope");
}
TEST_F(SfaValidateTest, AbsentValueMeansKey) {
  SfaArgs a = bsnd_.args();
  a.value.reset();
  expect(a, Status::kSuccess, "");
}

// ---- rule 2: dtypes ------------------------------------------------------------------------
TEST_F(SfaValidateTest, Rule2QueryDtype) {
  SfaArgs a = bsnd_.args();
  a.query.dtype = DType::kFloat32;
  invalid(a, "query dtype");
}
TEST_F(SfaValidateTest, Rule2KeyDtypeMustMatchQuery) {
  SfaArgs a = bsnd_.args();
  a.key.dtype = DType::kBFloat16;
  invalid(a, "key dtype");
}
TEST_F(SfaValidateTest, Rule2ValueDtypeMustMatchQuery) {
  SfaArgs a = bsnd_.args();
  a.value = a.key;
  a.value->dtype = DType::kBFloat16;
  invalid(a, "value dtype");
}
TEST_F(SfaValidateTest, Rule2RopeDtypes) {
  SfaArgs a = bsnd_.args();
  a.query_rope.dtype = DType::kBFloat16;
  invalid(a, "query_rope dtype");
  a = bsnd_.args();
  a.key_rope.dtype = DType::kBFloat16;
  invalid(a, "key_rope dtype");
}
TEST_F(SfaValidateTest, Rule2OutputDtype) {
  SfaArgs a = bsnd_.args();
  a.attention_out.dtype = DType::kBFloat16;
  invalid(a, "attention_out dtype");
  a.attention_out.dtype = DType::kInt8;
  invalid(a, "attention_out dtype");
  // fp32 is kvflash's extension (the unrounded result); create reads no data.
  a.attention_out.dtype = DType::kFloat32;
  expect(a, Status::kSuccess, "");
}
TEST_F(SfaValidateTest, Rule2IndicesInt32) {
  SfaArgs a = bsnd_.args();
  a.sparse_indices.dtype = DType::kInt64;
  invalid(a, "sparse_indices dtype");
}
TEST_F(SfaValidateTest, Rule2BlockTableInt32) {
  SfaArgs a = pa_.args();
  a.block_table->dtype = DType::kInt64;
  invalid(a, "block_table dtype");
}
TEST_F(SfaValidateTest, Rule2LengthsInt32OrInt64) {
  SfaArgs a = bsnd_.args();
  for (DType t : {DType::kInt8, DType::kUInt8, DType::kFloat32, DType::kBool}) {
    a.actual_seq_lengths_kv->dtype = t;
    invalid(a, "actual_seq_lengths_kv dtype must be int32 or int64");
  }
  // int64 is taken (the rule of every operator's length tensors); the values are then read as
  // int64 (SfaInt64Lengths below).
  SfaCase c = base_case(SfaQLayout::kBsnd, SfaKvLayout::kBsnd);
  c.lengths_dtype = DType::kInt64;
  SfaCaseData wide(c);
  expect(wide.args(), Status::kSuccess, "");
}
TEST_F(SfaValidateTest, Rule2SoftmaxOutputsFp32) {
  SfaArgs a = bsnd_.args();
  a.softmax_sum->dtype = DType::kFloat16;
  invalid(a, "softmax_sum dtype");
}
TEST_F(SfaValidateTest, Rule2SinksFp32) {
  SfaArgs a = bsnd_.args();
  a.sinks->dtype = DType::kFloat16;
  invalid(a, "sinks dtype");
}

// ---- rule 3: ranks and shapes --------------------------------------------------------------
TEST_F(SfaValidateTest, Rule3QueryRank) {
  SfaArgs a = bsnd_.args();
  a.query.rank = 3;
  invalid(a, "query rank");
}
TEST_F(SfaValidateTest, Rule3KeyRank) {
  SfaArgs a = tnd_.args();
  a.key.rank = 4;
  a.key.shape[3] = 512;
  invalid(a, "key rank");
}
TEST_F(SfaValidateTest, Rule3QueryRopeRank) {
  SfaArgs a = bsnd_.args();
  a.query_rope.rank = 3;
  invalid(a, "query_rope rank");
}
TEST_F(SfaValidateTest, Rule3IndicesShape) {
  SfaArgs a = bsnd_.args();
  a.sparse_indices.shape[2] = 2;  // N2 axis must be 1
  invalid(a, "sparse_indices shape");
  a = bsnd_.args();
  a.sparse_indices.shape[1] += 1;  // S1 mismatch
  invalid(a, "sparse_indices shape");
}
TEST_F(SfaValidateTest, Rule3RopeShapes) {
  SfaArgs a = bsnd_.args();
  a.query_rope.shape[3] = 32;
  invalid(a, "query_rope shape");
  a = bsnd_.args();
  a.key_rope.shape[1] -= 1;
  invalid(a, "key_rope shape");
}
TEST_F(SfaValidateTest, Rule3ValueShape) {
  SfaArgs a = bsnd_.args();
  a.value = a.key;
  a.value->shape[1] -= 1;
  invalid(a, "value shape");
}
TEST_F(SfaValidateTest, Rule3OutputShape) {
  SfaArgs a = tnd_.args();
  a.attention_out.shape[0] -= 1;
  invalid(a, "attention_out shape");
}

// ---- rule 4: heads and dims ----------------------------------------------------------------
TEST_F(SfaValidateTest, Rule4KeyHeadsMustBeOne) {
  SfaArgs a = bsnd_.args();
  a.key.shape[2] = 2;
  invalid(a, "N2");
}
TEST_F(SfaValidateTest, Rule4GroupSizePowerOfTwoUpTo128) {
  for (int64_t n1 : {3, 256}) {
    SfaArgs a = tnd_.args();
    a.query.shape[1] = n1;
    invalid(a, "group size");
  }
}
TEST_F(SfaValidateTest, Rule4HeadDims) {
  SfaArgs a = bsnd_.args();
  a.query.shape[3] = 256;
  invalid(a, "query head dim");
  a = bsnd_.args();
  a.key.shape[3] = 256;
  invalid(a, "key head dim");
}
TEST_F(SfaValidateTest, Rule4EmptyBatchOrTokens) {
  SfaArgs a = bsnd_.args();
  a.query.shape[0] = 0;
  invalid(a, "query batch");
  a = tnd_.args();
  a.query.shape[0] = 0;
  invalid(a, "query T1");
}

// ---- rule 5: attributes --------------------------------------------------------------------
TEST_F(SfaValidateTest, Rule5SparseMode) {
  for (int64_t m : {1, 2, 4, -1}) {
    SfaArgs a = bsnd_.args();
    a.sparse_mode = m;
    invalid(a, "sparse_mode");
  }
}
TEST_F(SfaValidateTest, Rule5PreAndNextTokens) {
  SfaArgs a = bsnd_.args();
  a.pre_tokens = 2048;
  invalid(a, "pre_tokens");
  a = bsnd_.args();
  a.next_tokens = 0;
  invalid(a, "next_tokens");
}
TEST_F(SfaValidateTest, Rule5AttentionMode) {
  SfaArgs a = bsnd_.args();
  a.attention_mode = 0;
  invalid(a, "attention_mode");
}
TEST_F(SfaValidateTest, Rule5SparseBlockSize) {
  for (int64_t s : {0, 3, 256, -2}) {
    SfaArgs a = bsnd_.args();
    a.sparse_block_size = s;
    invalid(a, "sparse_block_size");
  }
}

// ---- rule 6: layouts -----------------------------------------------------------------------
TEST_F(SfaValidateTest, Rule6Layouts) {
  SfaArgs a = bsnd_.args();
  a.layout_query = "BNSD";
  invalid(a, "layout_query");
  a = bsnd_.args();
  a.layout_kv = "BSH";
  invalid(a, "layout_kv");
  a = bsnd_.args();
  a.layout_kv = "TND";  // non-PA KV layout must equal the query layout
  invalid(a, "must equal layout_query");
}

// ---- rule 7: paged attention ---------------------------------------------------------------
TEST_F(SfaValidateTest, Rule7PagedNeedsBlockTableAndKvLengths) {
  SfaArgs a = pa_.args();
  a.block_table.reset();
  invalid(a, "block_table is required");
  a = pa_.args();
  a.actual_seq_lengths_kv.reset();
  invalid(a, "actual_seq_lengths_kv is required");
}
TEST_F(SfaValidateTest, Rule7BlockTableShape) {
  SfaArgs a = pa_.args();
  a.block_table->shape[0] = 3;
  invalid(a, "block_table must be");
  a = pa_.args();
  a.block_table->shape[1] = 0;
  invalid(a, "block_table must be");
  a = pa_.args();
  a.block_table->rank = 1;
  invalid(a, "block_table must be");
}
TEST_F(SfaValidateTest, Rule7BlockSize) {
  for (int64_t bs : {8, 24, 2048}) {
    SfaArgs a = pa_.args();
    a.key.shape[1] = a.value ? bs : bs;
    a.key_rope.shape[1] = bs;
    invalid(a, "block_size");
  }
}
TEST_F(SfaValidateTest, Rule7SparseBlockMustDivideBlockSize) {
  SfaArgs a = pa_.args();
  a.sparse_block_size = 32;  // block_size 16
  invalid(a, "must divide the key block_size");
}
TEST_F(SfaValidateTest, Rule7BlockTableOnlyWithPaged) {
  SfaArgs a = bsnd_.args();
  a.block_table = pa_.args().block_table;
  a.block_table->shape[0] = 2;
  invalid(a, "block_table must be null");
}

// ---- rule 8: softmax outputs ---------------------------------------------------------------
// Decision 22 (revised 2026-11-30): context-parallel decode asks for the LSE with a paged cache.
TEST_F(SfaValidateTest, Rule8LseWithPagedIsAccepted) {
  SfaArgs a = pa_.args();
  a.return_softmax_lse = true;
  a.softmax_max = bsnd_.args().softmax_max;
  a.softmax_sum = bsnd_.args().softmax_sum;
  expect(a, Status::kSuccess, "");
}
TEST_F(SfaValidateTest, Rule8NullSoftmaxOutputIsNullPtr) {
  SfaArgs a = bsnd_.args();
  a.softmax_max.reset();
  null(a, "softmax_max");
  a = bsnd_.args();
  a.softmax_sum->data = nullptr;
  null(a, "softmax_sum");
}
TEST_F(SfaValidateTest, Rule8EmptySoftmaxOutputIsInvalid) {
  SfaArgs a = bsnd_.args();
  a.softmax_max->shape[2] = 0;
  invalid(a, "softmax_max must not be empty");
}
TEST_F(SfaValidateTest, Rule8SoftmaxShape) {
  SfaArgs a = tnd_.args();
  a.softmax_sum->shape[2] = 1;
  invalid(a, "softmax_sum shape");
}
TEST_F(SfaValidateTest, Rule8NoLseMeansOutputsIgnored) {
  SfaArgs a = bsnd_.args();
  a.return_softmax_lse = false;
  a.softmax_max.reset();
  a.softmax_sum->dtype = DType::kInt8;  // not looked at
  expect(a, Status::kSuccess, "");
}

// ---- rule 9: actual lengths (shapes at create; values are device data, checked by the run) -----
TEST_F(SfaValidateTest, Rule9LengthsNumelIsBatch) {
  SfaArgs a = bsnd_.args();
  a.actual_seq_lengths_kv->shape[0] = 1;
  invalid(a, "actual_seq_lengths_kv must be 1-D");
}
TEST_F(SfaValidateTest, Rule9TndNeedsLengths) {
  SfaArgs a = tnd_.args();
  a.actual_seq_lengths_query.reset();
  invalid(a, "actual_seq_lengths_query is required");
  a = tnd_.args();
  a.actual_seq_lengths_kv.reset();
  invalid(a, "actual_seq_lengths_kv is required");
}
TEST_F(SfaValidateTest, Rule9QueryLengthRange) {
  const SfaArgs& a = bsnd_.args();
  set_i32(*a.actual_seq_lengths_query, 0, static_cast<int32_t>(a.query.shape[1] + 1));
  invalid_at_run(a, "actual_seq_lengths_query[0]");
  set_i32(*a.actual_seq_lengths_query, 0, -1);
  invalid_at_run(a, "actual_seq_lengths_query[0]");
}
TEST_F(SfaValidateTest, Rule9KvLengthRange) {
  const SfaArgs& a = bsnd_.args();
  set_i32(*a.actual_seq_lengths_kv, 1, static_cast<int32_t>(a.key.shape[1] + 1));
  invalid_at_run(a, "actual_seq_lengths_kv[1]");
}
TEST_F(SfaValidateTest, Rule9Int64LengthsAreReadWhole) {
  // An entry no int32 holds is out of range as it is (not truncated), and TND prefix sums whose
  // difference overflows int64 are refused as decreasing.
  const auto set_i64 = [](const TensorView& v, int64_t i, int64_t x) {
    static_cast<int64_t*>(v.data)[v.offset + i * v.strides[0]] = x;
  };
  SfaCase c = base_case(SfaQLayout::kBsnd, SfaKvLayout::kBsnd);
  c.lengths_dtype = DType::kInt64;
  SfaCaseData bsnd(c);
  set_i64(*bsnd.args().actual_seq_lengths_kv, 1, (int64_t{1} << 32) + 8);
  invalid_at_run(bsnd.args(), "actual_seq_lengths_kv[1] (4294967304)");
  c = base_case(SfaQLayout::kTnd, SfaKvLayout::kTnd);
  c.lengths_dtype = DType::kInt64;
  SfaCaseData tnd(c);
  set_i64(*tnd.args().actual_seq_lengths_kv, 0, -(int64_t{1} << 62));
  set_i64(*tnd.args().actual_seq_lengths_kv, 1, int64_t{1} << 62);
  invalid_at_run(tnd.args(),
                 "actual_seq_lengths_kv must be non-decreasing prefix sums starting at >= 0; "
                 "entry 0 (-4611686018427387904)");
}
TEST_F(SfaValidateTest, Rule9PagedKvLengthBoundedByBlockTable) {
  const SfaArgs& a = pa_.args();
  const int64_t cap = a.block_table->shape[1] * a.key.shape[1];
  set_i32(*a.actual_seq_lengths_kv, 0, static_cast<int32_t>(cap + 1));
  invalid_at_run(a, "block_table columns * block_size");
}
TEST_F(SfaValidateTest, Rule9PrefixSumsNonDecreasingAndBounded) {
  const SfaArgs& a = tnd_.args();
  set_i32(*a.actual_seq_lengths_kv, 0, 25);  // > askv[1] = 28? make it decrease
  set_i32(*a.actual_seq_lengths_kv, 1, 10);
  invalid_at_run(a, "non-decreasing");
  set_i32(*a.actual_seq_lengths_kv, 0, 8);
  set_i32(*a.actual_seq_lengths_kv, 1, static_cast<int32_t>(a.key.shape[0] + 1));
  invalid_at_run(a, "exceeds key T2");
  set_i32(*a.actual_seq_lengths_kv, 1, 28);
  set_i32(*a.actual_seq_lengths_query, 1, static_cast<int32_t>(a.query.shape[0] + 1));
  invalid_at_run(a, "exceeds query T1");
}

// ---- rule 10: sinks ------------------------------------------------------------------------
TEST_F(SfaValidateTest, Rule10SinksShape) {
  SfaArgs a = bsnd_.args();
  a.sinks->shape[0] = 3;
  invalid(a, "sinks must be 1-D");
  a = bsnd_.args();
  a.sinks->rank = 2;
  a.sinks->shape[1] = 1;
  invalid(a, "sinks must be 1-D");
}
TEST_F(SfaValidateTest, Rule10SinksAcceptedOnEveryLayout) {
  expect(tnd_.args(), Status::kSuccess, "");
  expect(pa_.args(), Status::kSuccess, "");
}

// ---- rule 11 and views ---------------------------------------------------------------------
TEST_F(SfaValidateTest, Rule11SparseSizeAtLeastOne) {
  SfaArgs a = bsnd_.args();
  a.sparse_indices.shape[3] = 0;
  invalid(a, "sparse_size");
}
TEST_F(SfaValidateTest, OutputMustBeContiguous) {
  SfaArgs a = bsnd_.args();
  a.attention_out.offset = 1;
  invalid(a, "attention_out must be contiguous");
}
TEST_F(SfaValidateTest, EveryTensorOnTheQuerysDevice) {
  SfaArgs a = bsnd_.args();
  a.key_rope.device = {DeviceType::kCuda, 0};
  invalid(a, "key_rope is on cuda:0 but query is on cpu");
  a = tnd_.args();
  a.actual_seq_lengths_kv->device = {DeviceType::kCuda, 0};
  invalid(a, "actual_seq_lengths_kv is on cuda:0");
}
TEST_F(SfaValidateTest, NegativeStrideRejected) {
  SfaArgs a = bsnd_.args();
  a.key.strides[1] = -a.key.strides[1];
  invalid(a, "negative stride");
}
TEST_F(SfaValidateTest, UnaddressableViewRejected) {
  SfaArgs a = bsnd_.args();
  a.key.strides[0] = int64_t{1} << 62;
  invalid(a, "beyond the int64 range");
}

// ---- run time: block ids of selected positions (decision 13b) ------------------------------
TEST_F(SfaValidateTest, RunBadBlockIdOfSelectedPositionFaultsItsRowsOnly) {
  const SfaArgs& a = pa_.args();
  std::unique_ptr<SfaPlan> plan;
  ASSERT_EQ(SfaPlan::create(a, &plan), Status::kSuccess) << last_error_message();
  std::vector<std::byte> ws(plan->workspace_size());
  ASSERT_EQ(plan->run(a, ws.data(), ws.size()), Status::kSuccess) << last_error_message();
  const std::vector<std::byte> good = pa_.output_bytes();
  // Batch 1 (kv 20, block 16) uses slots 0 and 1; corrupt slot 0 (its rows select from it).
  int32_t* e = pa_.block_table_entry(1, 0);
  const int32_t saved = *e;
  const int64_t rows = a.attention_out.shape[0] * a.attention_out.shape[1];
  const int64_t row_elems = a.attention_out.numel() / rows;
  const int64_t s1 = a.attention_out.shape[1];
  for (int32_t bad : {-1, static_cast<int32_t>(pa_.num_blocks())}) {
    *e = bad;
    pa_.poison_outputs();
    EXPECT_EQ(plan->run(a, ws.data(), ws.size()), Status::kInvalid);
    EXPECT_NE(std::string(last_error_message()).find("block_table[1][0]"), std::string::npos)
        << last_error_message();
    const uint16_t* out = static_cast<const uint16_t*>(a.attention_out.data);
    const auto* ref = reinterpret_cast<const uint16_t*>(good.data());
    int faulted = 0;
    for (int64_t r = 0; r < rows; ++r) {
      const bool nan_row = (out[r * row_elems] & 0x7c00) == 0x7c00 && (out[r * row_elems] & 0x3ff);
      faulted += nan_row;
      if (r / s1 != 1) {
        ASSERT_FALSE(nan_row) << "row " << r << " of another batch faulted";
      }
      for (int64_t i = 0; i < row_elems; ++i) {
        const uint16_t x = out[r * row_elems + i];
        if (nan_row) {
          ASSERT_TRUE((x & 0x7c00) == 0x7c00 && (x & 0x3ff)) << "row " << r;
        } else {
          ASSERT_EQ(x, ref[r * row_elems + i]) << "row " << r;
        }
      }
    }
    EXPECT_GT(faulted, 0);
  }
  *e = saved;
  EXPECT_EQ(plan->run(a, ws.data(), ws.size()), Status::kSuccess) << last_error_message();
  EXPECT_EQ(pa_.output_bytes(), good);
}
TEST_F(SfaValidateTest, RunUnreferencedBlockTableSlotsAreNotChecked) {
  // The case fills every slot past a batch's length with INT32_MAX; the call must still run.
  std::unique_ptr<SfaPlan> plan;
  ASSERT_EQ(SfaPlan::create(pa_.args(), &plan), Status::kSuccess);
  EXPECT_EQ(*pa_.block_table_entry(0, pa_.args().block_table->shape[1] - 1), INT32_MAX);
  std::vector<std::byte> ws(plan->workspace_size());
  EXPECT_EQ(plan->run(pa_.args(), ws.data(), ws.size()), Status::kSuccess) << last_error_message();
}
TEST_F(SfaValidateTest, RunWorkspaceTooSmall) {
  std::unique_ptr<SfaPlan> plan;
  ASSERT_EQ(SfaPlan::create(bsnd_.args(), &plan), Status::kSuccess);
  ASSERT_GT(plan->workspace_size(), 0u);
  std::vector<std::byte> ws(plan->workspace_size());
  EXPECT_EQ(plan->run(bsnd_.args(), ws.data(), ws.size() - 1), Status::kInvalid);
  EXPECT_NE(std::string(last_error_message()).find("workspace_size"), std::string::npos);
}
TEST_F(SfaValidateTest, RunRefusesTensorsThatDoNotMatchThePlan) {
  std::unique_ptr<SfaPlan> plan;
  ASSERT_EQ(SfaPlan::create(bsnd_.args(), &plan), Status::kSuccess);
  std::vector<std::byte> ws(plan->workspace_size());
  SfaArgs a = bsnd_.args();
  a.query.strides[0] += 1;
  EXPECT_EQ(plan->run(a, ws.data(), ws.size()), Status::kInvalid);
  EXPECT_NE(std::string(last_error_message()).find("query"), std::string::npos);
  a = bsnd_.args();
  a.sparse_mode = 0;
  EXPECT_EQ(plan->run(a, ws.data(), ws.size()), Status::kInvalid);
  EXPECT_NE(std::string(last_error_message()).find("sparse_mode"), std::string::npos);
  a = bsnd_.args();
  a.sinks.reset();
  EXPECT_EQ(plan->run(a, ws.data(), ws.size()), Status::kInvalid);
  a = bsnd_.args();
  a.key.data = nullptr;
  EXPECT_EQ(plan->run(a, ws.data(), ws.size()), Status::kNullPtr);
}
TEST_F(SfaValidateTest, CreateWithNullPlanSlot) {
  EXPECT_EQ(SfaPlan::create(bsnd_.args(), nullptr), Status::kNullPtr);
}

}  // namespace
}  // namespace kvflash::testing
