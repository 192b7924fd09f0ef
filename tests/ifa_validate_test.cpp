// validate_ifa: one test per rejection rule of docs/semantics.md §2.2-2.11 (exact status
// code, and a message that names the argument), plus the normalised problem every accepted
// layout and mode produces.
#include "ops/ifa/ifa_validate.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "ops/ifa/ifa_problem.hpp"
#include "cuda/device.hpp"
#include "ops/ifa/ifa_bind.hpp"
#include "kvflash/ifa.hpp"

namespace kvflash {
namespace {

using core::IfaProblem;

// ---- helpers -------------------------------------------------------------------------------

class IfaValidateTest : public ::testing::Test {
 protected:
  // A zero-filled contiguous tensor; the buffer lives as long as the fixture.
  TensorView tensor(DType dtype, std::initializer_list<int64_t> shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    bufs_.emplace_back(static_cast<size_t>(std::max<int64_t>(n, 1)) * dtype_size(dtype));
    return TensorView::contiguous(bufs_.back().data(), dtype, shape);
  }
  // A view with explicit strides and offset over a fresh buffer large enough for it.
  TensorView strided(DType dtype, std::initializer_list<int64_t> shape,
                     std::initializer_list<int64_t> strides, int64_t offset) {
    TensorView v;
    v.dtype = dtype;
    v.rank = static_cast<int>(shape.size());
    int64_t furthest = offset;
    int i = 0;
    for (int64_t d : shape) v.shape[i++] = d;
    i = 0;
    for (int64_t s : strides) {
      v.strides[i] = s;
      furthest += (v.shape[i] - 1) * s;
      ++i;
    }
    v.offset = offset;
    bufs_.emplace_back(static_cast<size_t>(furthest + 1) * dtype_size(dtype));
    v.data = bufs_.back().data();
    return v;
  }
  TensorView int32_table(std::initializer_list<std::initializer_list<int32_t>> rows) {
    const int64_t b = static_cast<int64_t>(rows.size());
    const int64_t m = static_cast<int64_t>(rows.begin()->size());
    TensorView t = tensor(DType::kInt32, {b, m});
    int32_t* p = static_cast<int32_t*>(t.data);
    for (const auto& row : rows) {
      for (int32_t id : row) *p++ = id;
    }
    return t;
  }
  TensorView int64_scalar(int64_t value) {
    TensorView t = tensor(DType::kInt64, {1});
    *static_cast<int64_t*>(t.data) = value;
    return t;
  }

  // A valid BSH problem: B=2, N=4, KV_N=2, D=16, S=8, fp16 everywhere.
  IfaArgs bsh(int64_t b = 2, int64_t n = 4, int64_t kvn = 2, int64_t d = 16, int64_t s = 8,
              DType q = DType::kFloat16, DType kv = DType::kFloat16, DType out = DType::kFloat16) {
    IfaArgs a;
    a.query = tensor(q, {b, 1, n * d});
    a.key = {tensor(kv, {b, s, kvn * d})};
    a.value = {tensor(kv, {b, s, kvn * d})};
    a.attention_out = tensor(out, {b, 1, n * d});
    a.num_heads = n;
    a.num_key_value_heads = kvn;
    a.input_layout = "BSH";
    a.scale_value = 0.25;
    return a;
  }
  IfaArgs bsnd(int64_t b = 2, int64_t n = 4, int64_t kvn = 2, int64_t d = 16, int64_t s = 8) {
    IfaArgs a;
    a.query = tensor(DType::kFloat16, {b, 1, n, d});
    a.key = {tensor(DType::kFloat16, {b, s, kvn, d})};
    a.value = {tensor(DType::kFloat16, {b, s, kvn, d})};
    a.attention_out = tensor(DType::kFloat16, {b, 1, n, d});
    a.num_heads = n;
    a.num_key_value_heads = kvn;
    a.input_layout = "BSND";
    return a;
  }
  IfaArgs bnsd(int64_t b = 2, int64_t n = 4, int64_t kvn = 2, int64_t d = 16, int64_t s = 8) {
    IfaArgs a;
    a.query = tensor(DType::kFloat16, {b, n, 1, d});
    a.key = {tensor(DType::kFloat16, {b, kvn, s, d})};
    a.value = {tensor(DType::kFloat16, {b, kvn, s, d})};
    a.attention_out = tensor(DType::kFloat16, {b, n, 1, d});
    a.num_heads = n;
    a.num_key_value_heads = kvn;
    a.input_layout = "BNSD";
    return a;
  }
  // Paged BSH: B=2, N=4, KV_N=2, D=16, 3-D cache of 6 blocks of 16, lengths {20, 5}.
  IfaArgs paged_bsh(DType kv = DType::kFloat16, int64_t bs = 16) {
    IfaArgs a = bsh(2, 4, 2, 16, 8, DType::kFloat16, kv);
    a.key = {tensor(kv, {6, bs, 32})};
    a.value = {tensor(kv, {6, bs, 32})};
    a.block_table = int32_table({{0, 3, -1}, {5, -1, -1}});
    a.block_size = bs;
    a.actual_seq_lengths = std::vector<int64_t>{20, 5};
    if (kv == DType::kInt8) a.antiquant_scale = tensor(DType::kFloat16, {2});
    return a;
  }

  Status validate(const IfaArgs& a, IfaProblem* p) {
    core::clear_error();
    return ifa::validate_ifa(a, p);
  }
  IfaProblem accept(const IfaArgs& a) {
    IfaProblem p;
    const Status st = validate(a, &p);
    EXPECT_EQ(st, Status::kSuccess) << last_error_message();
    return p;
  }
  // The accepted problem and the pointers a run of a binds (ifa::bind_data, and the batch bases
  // a CPU run derives from them: ifa::bind_batch_bases).
  struct Bound {
    IfaProblem p;
    core::IfaData d;
    std::vector<const void*> k_seq, v_seq;
  };
  std::unique_ptr<Bound> bind(const IfaArgs& a) {
    auto r = std::make_unique<Bound>();
    r->p = accept(a);
    r->k_seq.resize(static_cast<size_t>(r->p.batch));
    r->v_seq.resize(static_cast<size_t>(r->p.batch));
    ifa::bind_data(r->p, a, &r->d);
    if (!r->p.k.paged) ifa::bind_batch_bases(r->p, r->k_seq.data(), r->v_seq.data(), &r->d);
    return r;
  }
  // The first attended position of every batch for a left-padding value, and which are empty.
  static std::vector<int64_t> begins(const IfaProblem& p, int64_t pad) {
    std::vector<int64_t> v;
    for (int64_t b = 0; b < p.batch; ++b) v.push_back(core::ifa_kv_range(p, b, pad).begin);
    return v;
  }
  static std::vector<bool> empties(const IfaProblem& p, int64_t pad) {
    std::vector<bool> v;
    for (int64_t b = 0; b < p.batch; ++b) v.push_back(core::ifa_kv_range(p, b, pad).empty);
    return v;
  }
  // create + run with a fresh workspace: the run-time checks of device data.
  Status plan_and_run(const IfaArgs& a) {
    std::unique_ptr<IfaPlan> plan;
    const Status created = IfaPlan::create(a, &plan);
    EXPECT_EQ(created, Status::kSuccess) << last_error_message();
    if (created != Status::kSuccess) return created;
    std::vector<std::byte> ws(plan->workspace_size());
    return plan->run(a, ws.data(), ws.size());
  }
  // The exact code, and a message "[incre_flash_attention] ..." that names `arg`.
  void reject(const IfaArgs& a, Status code, const std::string& arg) {
    IfaProblem p;
    p.batch = -7;  // sentinel: a failed validation leaves *out alone
    const Status st = validate(a, &p);
    EXPECT_EQ(st, code) << "message: " << last_error_message();
    const std::string msg = last_error_message();
    EXPECT_EQ(msg.rfind("[incre_flash_attention] ", 0), 0u) << msg;
    EXPECT_NE(msg.find(arg), std::string::npos) << "expected '" << arg << "' in: " << msg;
    EXPECT_EQ(p.batch, -7);
  }
  void invalid(const IfaArgs& a, const std::string& arg) { reject(a, Status::kInvalid, arg); }
  void null(const IfaArgs& a, const std::string& arg) { reject(a, Status::kNullPtr, arg); }

  static const void* at(const TensorView& t, int64_t elems) {
    return static_cast<const char*>(t.data) + elems * static_cast<int64_t>(dtype_size(t.dtype));
  }

  std::deque<std::vector<std::byte>> bufs_;
};

// ---- rule 1: null pointers (161001) ---------------------------------------------------------

TEST_F(IfaValidateTest, NullQueryData) {
  IfaArgs a = bsh();
  a.query.data = nullptr;
  null(a, "query");
}

TEST_F(IfaValidateTest, EmptyKeyList) {
  IfaArgs a = bsh();
  a.key.clear();
  null(a, "key");
}

TEST_F(IfaValidateTest, EmptyValueList) {
  IfaArgs a = bsh();
  a.value.clear();
  null(a, "value");
}

TEST_F(IfaValidateTest, NullTensorInKeyList) {
  IfaArgs a = bsh();
  a.key = {tensor(DType::kFloat16, {1, 8, 32}), TensorView{}};
  a.value = {tensor(DType::kFloat16, {1, 8, 32}), tensor(DType::kFloat16, {1, 8, 32})};
  null(a, "key[1]");
}

TEST_F(IfaValidateTest, NullValueData) {
  IfaArgs a = bsh();
  a.value[0].data = nullptr;
  null(a, "value[0]");
}

TEST_F(IfaValidateTest, NullAttentionOutData) {
  IfaArgs a = bsh();
  a.attention_out.data = nullptr;
  null(a, "attention_out");
}

TEST_F(IfaValidateTest, NullCheckedBeforeOtherRules) {
  IfaArgs a = bsh();
  a.num_heads = 0;  // also invalid, but the null pointer is reported first
  a.attention_out.data = nullptr;
  null(a, "attention_out");
}

// ---- view geometry (161002) -----------------------------------------------------------------

TEST_F(IfaValidateTest, NegativeStride) {
  IfaArgs a = bsh();
  a.key[0].strides[1] = -32;
  invalid(a, "key[0] stride 1");
}

TEST_F(IfaValidateTest, NegativeDim) {
  IfaArgs a = bsh();
  a.value[0].shape[1] = -8;
  invalid(a, "value[0] dim 1");
}

TEST_F(IfaValidateTest, NegativeOffset) {
  IfaArgs a = bsh();
  a.query.offset = -1;
  invalid(a, "query offset");
}

TEST_F(IfaValidateTest, AddressOverflow) {
  IfaArgs a = bsh();
  a.key[0].strides[0] = INT64_MAX / 2;  // (B-1) * stride * 2 bytes overflows int64
  invalid(a, "key[0]");
}

TEST_F(IfaValidateTest, ElementCountOverflow) {
  IfaArgs a = bsh();
  a.atten_mask = tensor(DType::kBool, {2, 8});
  a.atten_mask->shape[0] = INT64_MAX / 2;
  a.atten_mask->shape[1] = 4;
  invalid(a, "atten_mask");
}

TEST_F(IfaValidateTest, UnknownDtype) {
  IfaArgs a = bsh();
  a.query.dtype = static_cast<DType>(99);
  invalid(a, "query");
}

TEST_F(IfaValidateTest, RankAboveMax) {
  IfaArgs a = bsh();
  a.pse_shift = tensor(DType::kFloat16, {2, 4, 1, 8});
  a.pse_shift->rank = kMaxRank + 1;
  invalid(a, "pse_shift rank");
}

TEST_F(IfaValidateTest, OptionalTensorWithoutData) {
  IfaArgs a = bsh();
  a.atten_mask = tensor(DType::kBool, {2, 8});
  a.atten_mask->data = nullptr;
  invalid(a, "atten_mask");
}

// ---- attributes -----------------------------------------------------------------------------

TEST_F(IfaValidateTest, NegativeNumThreads) {
  IfaArgs a = bsh();
  a.num_threads = -1;
  invalid(a, "num_threads");
}

TEST_F(IfaValidateTest, InnerPreciseOutOfRange) {
  IfaArgs a = bsh();
  a.inner_precise = 2;
  invalid(a, "inner_precise");
  a.inner_precise = -1;
  invalid(a, "inner_precise");
}

TEST_F(IfaValidateTest, UnknownLayout) {
  for (const char* layout : {"TND", "bsh", "", "BSHD", "NSD"}) {
    IfaArgs a = bsh();
    a.input_layout = layout;
    invalid(a, "input_layout");
  }
}

// ---- rule 2: empty query --------------------------------------------------------------------

TEST_F(IfaValidateTest, EmptyQuery) {
  IfaArgs a = bsh();
  a.query = tensor(DType::kFloat16, {0, 1, 64});
  a.attention_out = tensor(DType::kFloat16, {0, 1, 64});
  invalid(a, "query must not be empty");
  a.query.data = nullptr;  // an empty tensor may have no data: still "empty", not "null"
  invalid(a, "query must not be empty");
}

// ---- rule 3: dtypes -------------------------------------------------------------------------

TEST_F(IfaValidateTest, QueryDtypeMustBeHalf) {
  for (DType q : {DType::kFloat32, DType::kInt8}) {
    IfaArgs a = bsh(2, 4, 2, 16, 8, q, q, q);
    invalid(a, "query dtype");
  }
}

TEST_F(IfaValidateTest, ValueDtypeMustEqualKey) {
  IfaArgs a = bsh();
  a.value = {tensor(DType::kBFloat16, {2, 8, 32})};
  invalid(a, "value[0] dtype");
}

TEST_F(IfaValidateTest, ListKeyDtypesMustAgree) {
  IfaArgs a = bsh();
  a.key = {tensor(DType::kFloat16, {1, 8, 32}), tensor(DType::kBFloat16, {1, 8, 32})};
  a.value = {tensor(DType::kFloat16, {1, 8, 32}), tensor(DType::kFloat16, {1, 8, 32})};
  invalid(a, "key[1] dtype");
}

// Exactly the 8 (query, kv, out) rows of docs/semantics.md §2.2 are accepted, plus kvflash's fp32
// output (the unrounded result, for partials merged by log-sum-exp) with each query / KV pair.
TEST_F(IfaValidateTest, DtypeCombinationTable) {
  const DType all[] = {DType::kFloat16, DType::kBFloat16, DType::kFloat32, DType::kInt8};
  const std::vector<std::vector<DType>> allowed = {
      {DType::kFloat16, DType::kFloat16, DType::kFloat16},
      {DType::kBFloat16, DType::kBFloat16, DType::kBFloat16},
      {DType::kFloat16, DType::kFloat16, DType::kInt8},
      {DType::kFloat16, DType::kInt8, DType::kFloat16},
      {DType::kFloat16, DType::kInt8, DType::kInt8},
      {DType::kBFloat16, DType::kInt8, DType::kBFloat16},
      {DType::kBFloat16, DType::kInt8, DType::kInt8},
      {DType::kBFloat16, DType::kBFloat16, DType::kInt8},
      {DType::kFloat16, DType::kFloat16, DType::kFloat32},
      {DType::kBFloat16, DType::kBFloat16, DType::kFloat32},
      {DType::kFloat16, DType::kInt8, DType::kFloat32},
      {DType::kBFloat16, DType::kInt8, DType::kFloat32}};
  int accepted = 0;
  for (DType q : all) {
    for (DType kv : all) {
      for (DType out : all) {
        IfaArgs a = bsh(2, 4, 2, 16, 8, q, kv, out);
        // The companions each accepted combo needs, typed so they never fail on their own.
        if (kv == DType::kInt8) a.antiquant_scale = tensor(q, {2});
        if (out == DType::kInt8) a.quant_scale2 = tensor(DType::kFloat32, {1});
        bool want = false;
        for (const auto& row : allowed) want |= row == std::vector<DType>{q, kv, out};
        IfaProblem p;
        const Status st = validate(a, &p);
        SCOPED_TRACE(std::string(dtype_name(q)) + "," + dtype_name(kv) + "," + dtype_name(out));
        if (want) {
          EXPECT_EQ(st, Status::kSuccess) << last_error_message();
          EXPECT_EQ(p.q_dtype, q);
          EXPECT_EQ(p.k.dtype, kv);
          EXPECT_EQ(p.v.dtype, kv);
          EXPECT_EQ(p.out_dtype, out);
          ++accepted;
        } else {
          EXPECT_EQ(st, Status::kInvalid);
          EXPECT_NE(std::string(last_error_message()).find("dtype"), std::string::npos)
              << last_error_message();
        }
      }
    }
  }
  EXPECT_EQ(accepted, 12);
}

// ---- rule 4: heads and limits ---------------------------------------------------------------

TEST_F(IfaValidateTest, NumHeadsMustBePositive) {
  IfaArgs a = bsh();
  a.num_heads = 0;
  invalid(a, "num_heads (0)");
  a.num_heads = -4;
  invalid(a, "num_heads (-4)");
}

TEST_F(IfaValidateTest, NumHeadsAtMost256) {
  IfaArgs a = bsh(1, 257, 257, 1, 4);
  a.num_key_value_heads = 1;
  invalid(a, "num_heads (257)");
}

TEST_F(IfaValidateTest, NumKvHeadsNegative) {
  IfaArgs a = bsh();
  a.num_key_value_heads = -2;
  invalid(a, "num_key_value_heads (-2)");
}

TEST_F(IfaValidateTest, NumKvHeadsAtMost256) {
  IfaArgs a = bsh(1, 256, 256, 1, 4);
  a.num_key_value_heads = 512;
  invalid(a, "num_key_value_heads (512)");
}

TEST_F(IfaValidateTest, NumHeadsMultipleOfKvHeads) {
  IfaArgs a = bsh(2, 4, 3, 16, 8);
  invalid(a, "num_heads (4) must be a multiple of num_key_value_heads (3)");
  IfaArgs b = bsh(2, 2, 4, 16, 8);  // KV_N > N
  invalid(b, "num_key_value_heads (4)");
}

TEST_F(IfaValidateTest, GroupAtMost64) {
  IfaArgs a = bsh(1, 128, 1, 4, 4);
  invalid(a, "num_heads / num_key_value_heads");
  IfaArgs ok = bsh(1, 64, 1, 4, 4);
  accept(ok);
}

TEST_F(IfaValidateTest, HeadDimAtMost512) {
  IfaArgs a = bsnd(1, 1, 1, 513, 2);
  invalid(a, "head_dim (513)");
  IfaArgs ok = bsnd(1, 1, 1, 512, 2);
  accept(ok);
}

TEST_F(IfaValidateTest, BatchAtMost65536) {
  IfaArgs a = bsh(65537, 1, 1, 1, 1);
  invalid(a, "batch (65537)");
}

TEST_F(IfaValidateTest, KvHeadsZeroMeansNumHeads) {
  IfaArgs a = bsh(2, 4, 4, 16, 8);
  a.num_key_value_heads = 0;
  const IfaProblem p = accept(a);
  EXPECT_EQ(p.num_kv_heads, 4);
  EXPECT_EQ(p.group, 1);
}

// ---- rules 5, 6: query and attention_out shapes ---------------------------------------------

TEST_F(IfaValidateTest, QueryRankPerLayout) {
  IfaArgs a = bsh();
  a.query = tensor(DType::kFloat16, {2, 1, 4, 16});
  invalid(a, "query must be 3-D");
  IfaArgs b = bsnd();
  b.query = tensor(DType::kFloat16, {2, 1, 64});
  invalid(b, "query must be 4-D");
}

TEST_F(IfaValidateTest, QueryHiddenMultipleOfHeads) {
  IfaArgs a = bsh();
  a.query = tensor(DType::kFloat16, {2, 1, 66});
  a.attention_out = tensor(DType::kFloat16, {2, 1, 66});
  invalid(a, "query hidden size (66)");
}

TEST_F(IfaValidateTest, QuerySeqLenMustBeOne) {
  IfaArgs a = bsh();
  a.query = tensor(DType::kFloat16, {2, 2, 64});
  a.attention_out = tensor(DType::kFloat16, {2, 2, 64});
  invalid(a, "query sequence length (2");
  IfaArgs b = bnsd();
  b.query = tensor(DType::kFloat16, {2, 4, 3, 16});
  b.attention_out = tensor(DType::kFloat16, {2, 4, 3, 16});
  invalid(b, "query sequence length (3");
}

TEST_F(IfaValidateTest, QueryHeadsMustEqualNumHeads) {
  IfaArgs a = bsnd();
  a.num_heads = 2;
  a.num_key_value_heads = 2;
  invalid(a, "query head dim 2 (4)");
  IfaArgs b = bnsd();
  b.num_heads = 8;
  invalid(b, "query head dim 1 (4)");
}

TEST_F(IfaValidateTest, OutShapeMustEqualQuery) {
  IfaArgs a = bsh();
  a.attention_out = tensor(DType::kFloat16, {2, 64});
  invalid(a, "attention_out shape");
  IfaArgs b = bnsd();
  b.attention_out = tensor(DType::kFloat16, {2, 1, 4, 16});
  invalid(b, "attention_out shape");
}

TEST_F(IfaValidateTest, OutMustBeContiguous) {
  IfaArgs a = bsh();
  a.attention_out = strided(DType::kFloat16, {2, 1, 64}, {128, 64, 1}, 0);
  invalid(a, "attention_out must be contiguous");
  IfaArgs b = bsh();
  b.attention_out = strided(DType::kFloat16, {2, 1, 64}, {64, 64, 1}, 3);
  invalid(b, "attention_out must be contiguous");
}

// ---- rule 6/7: key and value shapes ---------------------------------------------------------

TEST_F(IfaValidateTest, KeyRankPerLayout) {
  IfaArgs a = bsh();
  a.key = {tensor(DType::kFloat16, {2, 8, 2, 16})};
  a.value = {tensor(DType::kFloat16, {2, 8, 2, 16})};
  invalid(a, "key[0] must be 3-D");
}

TEST_F(IfaValidateTest, KeyBatchMustEqualQuery) {
  IfaArgs a = bsh();
  a.key = {tensor(DType::kFloat16, {3, 8, 32})};
  a.value = {tensor(DType::kFloat16, {3, 8, 32})};
  invalid(a, "key[0] dim 0 (3)");
}

TEST_F(IfaValidateTest, KeyHiddenMustBeKvHeadsTimesD) {
  IfaArgs a = bsh();
  a.key = {tensor(DType::kFloat16, {2, 8, 48})};
  a.value = {tensor(DType::kFloat16, {2, 8, 48})};
  invalid(a, "key[0] hidden size (dim 2 = 48)");
}

TEST_F(IfaValidateTest, KeyHeadsMustEqualKvHeads) {
  IfaArgs a = bsnd();
  a.key = {tensor(DType::kFloat16, {2, 8, 4, 16})};
  a.value = {tensor(DType::kFloat16, {2, 8, 4, 16})};
  invalid(a, "key[0] head dim 2 (4)");
  IfaArgs b = bnsd();
  b.key = {tensor(DType::kFloat16, {2, 1, 8, 16})};
  b.value = {tensor(DType::kFloat16, {2, 1, 8, 16})};
  invalid(b, "key[0] head dim 1 (1)");
}

TEST_F(IfaValidateTest, KeyHeadDimMustEqualQuery) {
  IfaArgs a = bnsd();
  a.key = {tensor(DType::kFloat16, {2, 2, 8, 32})};
  a.value = {tensor(DType::kFloat16, {2, 2, 8, 32})};
  invalid(a, "key[0] dim 3 (32)");
}

TEST_F(IfaValidateTest, ValueShapeMustEqualKey) {
  IfaArgs a = bsh();
  a.value = {tensor(DType::kFloat16, {2, 7, 32})};
  invalid(a, "value[0] shape");
}

TEST_F(IfaValidateTest, ValueListLengthMustEqualKey) {
  IfaArgs a = bsh();
  a.key = {tensor(DType::kFloat16, {1, 8, 32}), tensor(DType::kFloat16, {1, 8, 32})};
  invalid(a, "value list length (1)");
}

// One backend runs a whole call: every tensor must be on the query's device.
TEST_F(IfaValidateTest, EveryTensorOnTheQuerysDevice) {
  IfaArgs a = bsh();
  a.value[0].device = {DeviceType::kCuda, 0};
  invalid(a, "value[0] is on cuda:0 but query is on cpu");
  IfaArgs b = paged_bsh();
  b.block_table->device = {DeviceType::kCuda, 1};
  invalid(b, "block_table is on cuda:1");
}

// A whole call on CUDA tensors. Without the CUDA backend in the build no entry runs on the device:
// create fails with 361001. With it, create plans the call (workspace from the shapes only), and
// on a machine without a GPU the run finds no available entry: 361001 again, naming the device.
TEST_F(IfaValidateTest, NoBackendForTheDevice) {
  IfaArgs a = bsh();
  for (TensorView* t : {&a.query, &a.key[0], &a.value[0], &a.attention_out}) {
    t->device = {DeviceType::kCuda, 0};
  }
  std::unique_ptr<IfaPlan> plan;
#if defined(KVFLASH_HAVE_CUDA)
  ASSERT_EQ(IfaPlan::create(a, &plan), Status::kSuccess) << last_error_message();
  EXPECT_GT(plan->workspace_size(), 0u);
  if (cuda::device_present()) GTEST_SKIP() << "a GPU is present: the run would use the host buffers";
  std::vector<std::byte> ws(plan->workspace_size());
  EXPECT_EQ(plan->run(a, ws.data(), ws.size(), nullptr), Status::kRuntime);
  EXPECT_NE(std::string(last_error_message()).find("no backend is available for cuda:0"),
            std::string::npos)
      << last_error_message();
#else
  EXPECT_EQ(IfaPlan::create(a, &plan), Status::kRuntime);
  EXPECT_NE(std::string(last_error_message()).find("no backend runs on cuda:0"), std::string::npos)
      << last_error_message();
#endif
}

TEST_F(IfaValidateTest, ListLengthMustBeOneOrBatch) {
  IfaArgs a = bsh(3);
  a.key = {tensor(DType::kFloat16, {1, 8, 32}), tensor(DType::kFloat16, {1, 8, 32})};
  a.value = a.key;
  invalid(a, "key list length (2)");
}

TEST_F(IfaValidateTest, ListModeBatchAtMost256) {
  IfaArgs a = bsh(257, 1, 1, 1, 1);
  a.key.clear();
  for (int i = 0; i < 257; ++i) a.key.push_back(tensor(DType::kFloat16, {1, 1, 1}));
  a.value = a.key;
  invalid(a, "key tensor-list mode supports batch <= 256");
}

TEST_F(IfaValidateTest, ListElementBatchMustBeOne) {
  IfaArgs a = bsh();
  a.key = {tensor(DType::kFloat16, {1, 8, 32}), tensor(DType::kFloat16, {2, 8, 32})};
  a.value = {tensor(DType::kFloat16, {1, 8, 32}), tensor(DType::kFloat16, {2, 8, 32})};
  invalid(a, "key[1] dim 0 (2) must be 1 in tensor-list mode");
}

TEST_F(IfaValidateTest, ListElementsDifferOnlyInS) {
  // Element 1 differs in D as well as S.
  IfaArgs a = bnsd(2, 4, 2, 16, 8);
  a.key = {tensor(DType::kFloat16, {1, 2, 8, 16}), tensor(DType::kFloat16, {1, 2, 5, 32})};
  a.value = a.key;
  invalid(a, "key[1]");
}

TEST_F(IfaValidateTest, ListValueShapeMustEqualKey) {
  IfaArgs a = bsh();
  a.key = {tensor(DType::kFloat16, {1, 8, 32}), tensor(DType::kFloat16, {1, 5, 32})};
  a.value = {tensor(DType::kFloat16, {1, 8, 32}), tensor(DType::kFloat16, {1, 6, 32})};
  invalid(a, "value[1] shape");
}

// ---- actualSeqLengths (§2.4) ----------------------------------------------------------------

TEST_F(IfaValidateTest, ActualSeqLengthsBetweenOneAndBatchRejected) {
  IfaArgs a = bsh(3);
  a.actual_seq_lengths = std::vector<int64_t>{4, 4};
  invalid(a, "actual_seq_lengths has 2 entries");
}

TEST_F(IfaValidateTest, ActualSeqLengthNegative) {
  IfaArgs a = bsh();
  a.actual_seq_lengths = std::vector<int64_t>{3, -1};
  invalid(a, "actual_seq_lengths[1] (-1)");
}

TEST_F(IfaValidateTest, ActualSeqLengthAboveKeyS) {
  IfaArgs a = bsh();
  a.actual_seq_lengths = std::vector<int64_t>{9};
  invalid(a, "actual_seq_lengths[0] (9)");
}

TEST_F(IfaValidateTest, ListModeLengthBoundedByItsOwnS) {
  IfaArgs a = bsh();
  a.key = {tensor(DType::kFloat16, {1, 8, 32}), tensor(DType::kFloat16, {1, 3, 32})};
  a.value = a.key;
  a.actual_seq_lengths = std::vector<int64_t>{8, 4};
  invalid(a, "actual_seq_lengths[1] (4) must be <= the key sequence length of batch 1 (3)");
}

TEST_F(IfaValidateTest, TotalWorkOverflowRejected) {
  // Zero strides let a tiny buffer describe 2^56 positions; 2 * 2^56 * N * D overflows int64.
  IfaArgs a = bsh();
  a.key = {strided(DType::kFloat16, {2, int64_t{1} << 56, 32}, {0, 0, 1}, 0)};
  a.value = a.key;
  invalid(a, "sum of kv_len * num_heads * head_dim overflows");
}

// ---- paged KV (§2.8) ------------------------------------------------------------------------

TEST_F(IfaValidateTest, PagedBlockSizeRange) {
  for (int64_t bs : {0, -16, 528}) {
    IfaArgs a = paged_bsh();
    a.block_size = bs;
    invalid(a, "block_size (" + std::to_string(bs) + ")");
  }
}

TEST_F(IfaValidateTest, PagedBlockSizeMultipleOf16ForHalf) {
  IfaArgs a = paged_bsh(DType::kFloat16, 24);
  invalid(a, "block_size (24) must be a multiple of 16");
}

TEST_F(IfaValidateTest, PagedBlockSizeMultipleOf32ForInt8) {
  IfaArgs a = paged_bsh(DType::kInt8, 16);
  invalid(a, "block_size (16) must be a multiple of 32");
  IfaArgs ok = paged_bsh(DType::kInt8, 32);
  accept(ok);
}

TEST_F(IfaValidateTest, PagedCacheBlockDimMustEqualBlockSize) {
  IfaArgs a = paged_bsh();
  a.block_size = 32;
  invalid(a, "key cache dim 1 (16) must equal block_size (32)");
}

TEST_F(IfaValidateTest, PagedCacheHiddenMismatch) {
  IfaArgs a = paged_bsh();
  a.key = {tensor(DType::kFloat16, {6, 16, 64})};
  a.value = a.key;
  invalid(a, "key cache dim 2 (64)");
}

TEST_F(IfaValidateTest, Paged3DHiddenAtMost65535) {
  IfaArgs a = bsh(1, 256, 256, 512, 1);
  a.key = {tensor(DType::kFloat16, {1, 16, 256 * 512})};
  a.value = a.key;
  a.block_table = int32_table({{0}});
  a.block_size = 16;
  a.actual_seq_lengths = std::vector<int64_t>{1};
  invalid(a, "key cache hidden size");
}

TEST_F(IfaValidateTest, Paged4DCacheNeedsBnsd) {
  IfaArgs a = paged_bsh();
  a.key = {tensor(DType::kFloat16, {6, 2, 16, 16})};
  a.value = a.key;
  invalid(a, "key cache must be 3-D");
}

TEST_F(IfaValidateTest, PagedCacheRank) {
  IfaArgs a = paged_bsh();
  a.key = {tensor(DType::kFloat16, {6 * 16, 32})};
  a.value = a.key;
  invalid(a, "key cache must be 3-D");
}

TEST_F(IfaValidateTest, Paged4DCacheDims) {
  IfaArgs a = bnsd();
  a.block_table = int32_table({{0, 1}, {2, 3}});
  a.block_size = 16;
  a.actual_seq_lengths = std::vector<int64_t>{20, 5};
  a.key = {tensor(DType::kFloat16, {4, 3, 16, 16})};
  a.value = a.key;
  invalid(a, "key cache dim 1 (3)");
  a.key = {tensor(DType::kFloat16, {4, 2, 32, 16})};
  a.value = a.key;
  invalid(a, "key cache dim 2 (32) must equal block_size (16)");
  a.key = {tensor(DType::kFloat16, {4, 2, 16, 8})};
  a.value = a.key;
  invalid(a, "key cache dim 3 (8)");
}

TEST_F(IfaValidateTest, PagedNeedsSingleCacheTensor) {
  IfaArgs a = paged_bsh();
  a.key = {tensor(DType::kFloat16, {6, 16, 32}), tensor(DType::kFloat16, {6, 16, 32})};
  a.value = a.key;
  invalid(a, "key must be a single cache tensor");
}

TEST_F(IfaValidateTest, PagedValueShapeMustEqualKey) {
  IfaArgs a = paged_bsh();
  a.value = {tensor(DType::kFloat16, {5, 16, 32})};
  invalid(a, "value[0] shape");
}

TEST_F(IfaValidateTest, BlockTableDtype) {
  IfaArgs a = paged_bsh();
  a.block_table = tensor(DType::kInt64, {2, 3});
  invalid(a, "block_table dtype must be int32");
}

TEST_F(IfaValidateTest, BlockTableRank) {
  IfaArgs a = paged_bsh();
  a.block_table = tensor(DType::kInt32, {6});
  invalid(a, "block_table must be 2-D");
}

TEST_F(IfaValidateTest, BlockTableBatch) {
  IfaArgs a = paged_bsh();
  a.block_table = int32_table({{0, 1, 2}});
  invalid(a, "block_table dim 0 (1)");
}

TEST_F(IfaValidateTest, BlockTableEmpty) {
  IfaArgs a = paged_bsh();
  a.block_table = tensor(DType::kInt32, {2, 0});
  invalid(a, "block_table must not be empty");
}

TEST_F(IfaValidateTest, PagedRequiresActualSeqLengths) {
  IfaArgs a = paged_bsh();
  a.actual_seq_lengths.reset();
  invalid(a, "actual_seq_lengths is required");
  a.actual_seq_lengths = std::vector<int64_t>{};
  invalid(a, "actual_seq_lengths is required");
}

TEST_F(IfaValidateTest, BlockTableTooFewSlots) {
  IfaArgs a = paged_bsh();
  a.actual_seq_lengths = std::vector<int64_t>{49, 5};  // needs 4 slots, table has 3
  invalid(a, "block_table dim 1 (3) is too small");
}

TEST_F(IfaValidateTest, CacheTooFewBlocks) {
  IfaArgs a = paged_bsh();
  a.key = {tensor(DType::kFloat16, {2, 16, 32})};  // lengths {20, 5} need 2 + 1 blocks
  a.value = a.key;
  invalid(a, "key cache has 2 blocks");
}

TEST_F(IfaValidateTest, PagedLengthNegative) {
  IfaArgs a = paged_bsh();
  a.actual_seq_lengths = std::vector<int64_t>{-3};
  invalid(a, "actual_seq_lengths[0] (-3)");
}

// ---- KV left padding (§2.7) -----------------------------------------------------------------

TEST_F(IfaValidateTest, KvPaddingSizeDtypeWhenActive) {
  IfaArgs a = bsh();
  a.actual_seq_lengths = std::vector<int64_t>{3};
  a.kv_padding_size = tensor(DType::kInt32, {1});
  invalid(a, "kv_padding_size dtype must be int64");
}

TEST_F(IfaValidateTest, KvPaddingSizeWithoutDataWhenActive) {
  IfaArgs a = bsh();
  a.actual_seq_lengths = std::vector<int64_t>{3};
  a.kv_padding_size = int64_scalar(1);
  a.kv_padding_size->data = nullptr;
  invalid(a, "kv_padding_size");
}

// ---- attenMask (§2.2, §2.6) -----------------------------------------------------------------

TEST_F(IfaValidateTest, MaskDtype) {
  for (DType dt : {DType::kFloat16, DType::kFloat32, DType::kInt32}) {
    IfaArgs a = bsh();
    a.atten_mask = tensor(dt, {2, 8});
    invalid(a, "atten_mask dtype");
  }
}

TEST_F(IfaValidateTest, MaskRank) {
  IfaArgs a = bsh();
  a.atten_mask = tensor(DType::kBool, {8});
  invalid(a, "atten_mask must be 2-D");
  a.atten_mask = tensor(DType::kBool, {2, 1, 1, 1, 8});
  invalid(a, "atten_mask must be 2-D");
}

TEST_F(IfaValidateTest, MaskBatchDim) {
  IfaArgs a = bsh();
  a.atten_mask = tensor(DType::kBool, {3, 8});
  invalid(a, "atten_mask dim 0 (3)");
}

TEST_F(IfaValidateTest, MaskHeadDim) {
  IfaArgs a = bsh();
  a.atten_mask = tensor(DType::kUInt8, {2, 2, 1, 8});  // 2 is KV_N, not N
  invalid(a, "atten_mask dim 1 (2) must be 1 or num_heads (4)");
}

TEST_F(IfaValidateTest, Mask3DMiddleDimMustBeOne) {
  IfaArgs a = bsh();
  a.atten_mask = tensor(DType::kBool, {2, 4, 8});
  invalid(a, "atten_mask dim 1 (4)");
}

TEST_F(IfaValidateTest, Mask4DQuerySeqDimMustBeOne) {
  IfaArgs a = bsh();
  a.atten_mask = tensor(DType::kBool, {2, 4, 2, 8});
  invalid(a, "atten_mask dim 2 (2)");
}

TEST_F(IfaValidateTest, MaskTooShortForLengths) {
  IfaArgs a = bsh();
  a.actual_seq_lengths = std::vector<int64_t>{3, 6};
  a.atten_mask = tensor(DType::kBool, {2, 5});
  invalid(a, "atten_mask last dim (5) must be >= 6");
  a.atten_mask = tensor(DType::kBool, {2, 6});
  accept(a);
}

TEST_F(IfaValidateTest, MaskTooShortForPagedCapacity) {
  IfaArgs a = paged_bsh();
  a.atten_mask = tensor(DType::kBool, {2, 47});  // capacity 3 * 16 = 48
  invalid(a, "atten_mask last dim (47) must be >= 48");
}

TEST_F(IfaValidateTest, MaskMustCoverTheLengths) {
  IfaArgs a = bsh();  // S = 8, lengths 3
  a.actual_seq_lengths = std::vector<int64_t>{3};
  a.atten_mask = tensor(DType::kBool, {2, 2});
  invalid(a, "atten_mask last dim (2) must be >= 3");
}

// With left padding the mask is read at absolute positions that only the run knows (the padding
// is device data): a range the mask does not cover faults its batch at run time instead of
// reading past the mask.
TEST_F(IfaValidateTest, MaskShorterThanLeftPaddedRangeFaultsAtRun) {
  IfaArgs a = bsh();  // S = 8, pad 2, lengths 3: positions [3, 6)
  a.actual_seq_lengths = std::vector<int64_t>{3};
  a.kv_padding_size = int64_scalar(2);
  a.atten_mask = tensor(DType::kBool, {2, 5});
  EXPECT_EQ(plan_and_run(a), Status::kInvalid);
  EXPECT_NE(std::string(last_error_message()).find("beyond the atten_mask's last dim (5)"),
            std::string::npos)
      << last_error_message();
  *static_cast<int64_t*>(a.kv_padding_size->data) = 3;  // positions [2, 5): covered
  EXPECT_EQ(plan_and_run(a), Status::kSuccess) << last_error_message();
}

// ---- pseShift -------------------------------------------------------------------------------

TEST_F(IfaValidateTest, PseDtypeMustEqualQuery) {
  IfaArgs a = bsh();
  a.pse_shift = tensor(DType::kBFloat16, {2, 4, 1, 8});
  invalid(a, "pse_shift dtype");
}

TEST_F(IfaValidateTest, PseRank) {
  IfaArgs a = bsh();
  a.pse_shift = tensor(DType::kFloat16, {2, 4, 8});
  invalid(a, "pse_shift must be 4-D");
}

TEST_F(IfaValidateTest, PseBatchDim) {
  IfaArgs a = bsh();
  a.pse_shift = tensor(DType::kFloat16, {3, 4, 1, 8});
  invalid(a, "pse_shift dim 0 (3)");
}

TEST_F(IfaValidateTest, PseHeadDimMustBeN) {
  IfaArgs a = bsh();
  a.pse_shift = tensor(DType::kFloat16, {2, 1, 1, 8});
  invalid(a, "pse_shift dim 1 (1) must equal num_heads (4)");
}

TEST_F(IfaValidateTest, PseQuerySeqDimMustBeOne) {
  IfaArgs a = bsh();
  a.pse_shift = tensor(DType::kFloat16, {2, 4, 2, 8});
  invalid(a, "pse_shift dim 2 (2)");
}

TEST_F(IfaValidateTest, PseMustCoverKeyS) {
  IfaArgs a = bsh();
  a.actual_seq_lengths = std::vector<int64_t>{2};  // pse still needs S = 8 (Decision §2.3)
  a.pse_shift = tensor(DType::kFloat16, {2, 4, 1, 7});
  invalid(a, "pse_shift dim 3 (7) must be >= 8");
  IfaArgs p = paged_bsh();
  p.pse_shift = tensor(DType::kFloat16, {1, 4, 1, 40});
  invalid(p, "pse_shift dim 3 (40) must be >= 48");
}

// ---- antiquant (§2.9) -----------------------------------------------------------------------

TEST_F(IfaValidateTest, AntiquantOnlyWithInt8Kv) {
  IfaArgs a = bsh();
  a.antiquant_scale = tensor(DType::kFloat16, {2});
  invalid(a, "antiquant_scale is only allowed with int8");
  IfaArgs b = bsh();
  b.antiquant_offset = tensor(DType::kFloat16, {2});
  invalid(b, "antiquant_offset is only allowed with int8");
}

TEST_F(IfaValidateTest, Int8KvRequiresAntiquantScale) {
  IfaArgs a = bsh(2, 4, 2, 16, 8, DType::kFloat16, DType::kInt8);
  invalid(a, "antiquant_scale is required");
}

TEST_F(IfaValidateTest, AntiquantScaleDtypeMustEqualQuery) {
  IfaArgs a = bsh(2, 4, 2, 16, 8, DType::kBFloat16, DType::kInt8, DType::kBFloat16);
  a.antiquant_scale = tensor(DType::kFloat32, {2});
  invalid(a, "antiquant_scale dtype (fp32)");
  a.antiquant_scale = tensor(DType::kFloat16, {2});
  invalid(a, "antiquant_scale dtype (fp16)");
}

TEST_F(IfaValidateTest, AntiquantScaleShapes) {
  const std::vector<std::vector<int64_t>> bad = {{3},           {1},           {2, 2},
                                                 {2, 33},       {2, 2, 17},    {2, 2, 2, 16},
                                                 {2, 1, 1, 32}, {1, 2, 1, 16}, {2, 2, 1, 16, 1}};
  for (const auto& shape : bad) {
    IfaArgs a = bsh(2, 4, 2, 16, 8, DType::kFloat16, DType::kInt8);
    TensorView t = tensor(DType::kFloat16, {128});
    t = TensorView::contiguous(t.data, DType::kFloat16, shape);
    a.antiquant_scale = t;
    SCOPED_TRACE(t.describe());
    invalid(a, "antiquant_scale shape");
  }
}

TEST_F(IfaValidateTest, AntiquantOffsetDtype) {
  IfaArgs a = bsh(2, 4, 2, 16, 8, DType::kFloat16, DType::kInt8);
  a.antiquant_scale = tensor(DType::kFloat16, {2});
  a.antiquant_offset = tensor(DType::kBFloat16, {2});
  invalid(a, "antiquant_offset dtype (bf16)");
}

TEST_F(IfaValidateTest, AntiquantOffsetRankMustEqualScale) {
  IfaArgs a = bsh(2, 4, 2, 16, 8, DType::kFloat16, DType::kInt8);
  a.antiquant_scale = tensor(DType::kFloat16, {2, 2, 16});
  a.antiquant_offset = tensor(DType::kFloat16, {2, 32});
  invalid(a, "antiquant_offset rank (2)");
}

TEST_F(IfaValidateTest, AntiquantOffsetShape) {
  IfaArgs a = bsh(2, 4, 2, 16, 8, DType::kFloat16, DType::kInt8);
  a.antiquant_scale = tensor(DType::kFloat16, {2, 2, 16});
  a.antiquant_offset = tensor(DType::kFloat16, {2, 2, 15});
  invalid(a, "antiquant_offset shape");
}

// ---- post-quant (§2.10) ---------------------------------------------------------------------

TEST_F(IfaValidateTest, QuantParamsOnlyWithInt8Out) {
  IfaArgs a = bsh();
  a.quant_scale2 = tensor(DType::kFloat32, {1});
  invalid(a, "quant_scale2 is only allowed with an int8 attention_out");
  IfaArgs b = bsh();
  b.quant_offset2 = tensor(DType::kFloat32, {1});
  invalid(b, "quant_offset2 is only allowed with an int8 attention_out");
}

TEST_F(IfaValidateTest, Int8OutRequiresQuantScale2) {
  IfaArgs a = bsh(2, 4, 2, 16, 8, DType::kFloat16, DType::kFloat16, DType::kInt8);
  invalid(a, "quant_scale2 is required");
  a.quant_offset2 = tensor(DType::kFloat32, {1});  // an offset alone is not enough
  invalid(a, "quant_scale2 is required");
}

TEST_F(IfaValidateTest, QuantScale2Dtype) {
  IfaArgs a = bsh(2, 4, 2, 16, 8, DType::kFloat16, DType::kFloat16, DType::kInt8);
  a.quant_scale2 = tensor(DType::kFloat16, {1});
  invalid(a, "quant_scale2 dtype");
  a.quant_scale2 = tensor(DType::kBFloat16, {1});  // bf16 only with a bf16 query
  invalid(a, "quant_scale2 dtype");
  IfaArgs b = bsh(2, 4, 2, 16, 8, DType::kBFloat16, DType::kBFloat16, DType::kInt8);
  b.quant_scale2 = tensor(DType::kBFloat16, {1});
  accept(b);
}

TEST_F(IfaValidateTest, QuantScale2Shapes) {
  // N = 4, D = 16: N*D = 64.
  const std::vector<std::vector<int64_t>> bad = {
      {65}, {2}, {16, 4}, {2, 32}, {1, 4, 1, 16, 1}, {4, 16, 1}, {1, 1, 1, 64, 1}, {1, 16, 4}};
  for (const auto& shape : bad) {
    IfaArgs a = bsh(2, 4, 2, 16, 8, DType::kFloat16, DType::kFloat16, DType::kInt8);
    TensorView t = tensor(DType::kFloat32, {80});
    a.quant_scale2 = TensorView::contiguous(t.data, DType::kFloat32, shape);
    SCOPED_TRACE(a.quant_scale2->describe());
    invalid(a, "quant_scale2 shape");
  }
}

TEST_F(IfaValidateTest, QuantOffset2DtypeAndShape) {
  IfaArgs a = bsh(2, 4, 2, 16, 8, DType::kFloat16, DType::kFloat16, DType::kInt8);
  a.quant_scale2 = tensor(DType::kFloat32, {4, 16});
  a.quant_offset2 = tensor(DType::kBFloat16, {4, 16});
  invalid(a, "quant_offset2 dtype (bf16)");
  a.quant_offset2 = tensor(DType::kFloat32, {64});
  invalid(a, "quant_offset2 shape");
}

TEST_F(IfaValidateTest, Int8QueryScalesMustBeAbsent) {
  for (int which = 0; which < 3; ++which) {
    IfaArgs a = bsh();
    const char* name = which == 0   ? "dequant_scale1"
                       : which == 1 ? "quant_scale1"
                                    : "dequant_scale2";
    (which == 0   ? a.dequant_scale1
     : which == 1 ? a.quant_scale1
                  : a.dequant_scale2) = tensor(DType::kFloat32, {1});
    invalid(a, std::string(name) + " must be absent");
  }
}

// ---- softmax_lse extension ------------------------------------------------------------------

TEST_F(IfaValidateTest, LseDtype) {
  IfaArgs a = bsh();
  a.softmax_lse = tensor(DType::kFloat16, {2, 4});
  invalid(a, "softmax_lse dtype");
}

TEST_F(IfaValidateTest, LseShape) {
  IfaArgs a = bsh();
  a.softmax_lse = tensor(DType::kFloat32, {2, 4, 1});
  invalid(a, "softmax_lse shape");
  a.softmax_lse = tensor(DType::kFloat32, {2, 2});
  invalid(a, "softmax_lse shape");
}

TEST_F(IfaValidateTest, LseWithoutData) {
  IfaArgs a = bsh();
  a.softmax_lse = tensor(DType::kFloat32, {2, 4});
  a.softmax_lse->data = nullptr;
  invalid(a, "softmax_lse");
}

TEST_F(IfaValidateTest, LseContiguous) {
  IfaArgs a = bsh();
  a.softmax_lse = strided(DType::kFloat32, {2, 4}, {8, 1}, 0);
  invalid(a, "softmax_lse must be contiguous");
}

// ---- accepted inputs: the normalised problem ------------------------------------------------

TEST_F(IfaValidateTest, BshProblem) {
  IfaArgs a = bsh();
  a.zero_fully_masked_rows = true;
  const auto bound = bind(a);
  const IfaProblem& p = bound->p;
  const core::IfaData& d = bound->d;
  EXPECT_EQ(p.batch, 2);
  EXPECT_EQ(p.num_heads, 4);
  EXPECT_EQ(p.num_kv_heads, 2);
  EXPECT_EQ(p.group, 2);
  EXPECT_EQ(p.head_dim, 16);
  EXPECT_EQ(p.scale, 0.25f);
  EXPECT_EQ(d.q, a.query.data);
  EXPECT_EQ(p.q.s0, 64);
  EXPECT_EQ(p.q.s1, 16);
  EXPECT_EQ(p.q.s2, 1);
  EXPECT_EQ(d.out, a.attention_out.data);
  EXPECT_EQ(p.out_s0, 64);
  EXPECT_EQ(p.out_s1, 16);
  EXPECT_EQ(p.out_s2, 1);
  ASSERT_EQ(p.k_seqs.size(), 2u);
  ASSERT_EQ(p.v_seqs.size(), 2u);
  EXPECT_FALSE(p.k.paged);
  for (int b = 0; b < 2; ++b) {
    EXPECT_EQ(d.k_seq[b], at(a.key[0], b * 8 * 32));
    EXPECT_EQ(d.v_seq[b], at(a.value[0], b * 8 * 32));
    EXPECT_EQ(p.k_seqs[b].s_pos, 32);
    EXPECT_EQ(p.k_seqs[b].s_head, 16);
    EXPECT_EQ(p.k_seqs[b].s_dim, 1);
  }
  EXPECT_FALSE(p.left_padding);
  EXPECT_EQ(p.kv_len, (std::vector<int64_t>{8, 8}));
  EXPECT_FALSE(p.mask.present);
  EXPECT_FALSE(p.pse.present);
  EXPECT_EQ(p.antiquant, core::AntiquantMode::kNone);
  EXPECT_FALSE(p.quant_scale2.present);
  EXPECT_EQ(d.lse, nullptr);
  EXPECT_TRUE(p.zero_fully_masked_rows);
  EXPECT_EQ(d.block_table, nullptr);
}

TEST_F(IfaValidateTest, BsndProblem) {
  IfaArgs a = bsnd();
  const auto bound = bind(a);
  const IfaProblem& p = bound->p;
  const core::IfaData& d = bound->d;
  EXPECT_EQ(p.q.s0, 64);
  EXPECT_EQ(p.q.s1, 16);
  EXPECT_EQ(p.q.s2, 1);
  EXPECT_EQ(d.k_seq[1], at(a.key[0], 8 * 2 * 16));
  EXPECT_EQ(p.k_seqs[1].s_pos, 32);
  EXPECT_EQ(p.k_seqs[1].s_head, 16);
  EXPECT_EQ(p.k_seqs[1].s_dim, 1);
}

TEST_F(IfaValidateTest, BnsdProblem) {
  IfaArgs a = bnsd();
  const auto bound = bind(a);
  const IfaProblem& p = bound->p;
  const core::IfaData& d = bound->d;
  EXPECT_EQ(p.q.s0, 64);
  EXPECT_EQ(p.q.s1, 16);
  EXPECT_EQ(p.q.s2, 1);
  EXPECT_EQ(d.v_seq[1], at(a.value[0], 2 * 8 * 16));
  EXPECT_EQ(p.v_seqs[1].s_head, 8 * 16);
  EXPECT_EQ(p.v_seqs[1].s_pos, 16);
  EXPECT_EQ(p.v_seqs[1].s_dim, 1);
  EXPECT_EQ(p.out_s0, 64);
  EXPECT_EQ(p.out_s1, 16);
}

// Strides and offsets of non-contiguous inputs pass through unchanged.
TEST_F(IfaValidateTest, StridedInputsProblem) {
  IfaArgs a = bnsd(2, 4, 2, 16, 8);
  a.query = strided(DType::kFloat16, {2, 4, 1, 16}, {200, 40, 7, 2}, 5);
  a.key = {strided(DType::kFloat16, {2, 2, 8, 16}, {1000, 300, 33, 1}, 11)};
  a.value = {strided(DType::kFloat16, {2, 2, 8, 16}, {0, 16, 32, 1}, 0)};  // batch broadcast
  const auto bound = bind(a);
  const IfaProblem& p = bound->p;
  const core::IfaData& d = bound->d;
  EXPECT_EQ(d.q, at(a.query, 5));
  EXPECT_EQ(p.q.s0, 200);
  EXPECT_EQ(p.q.s1, 40);
  EXPECT_EQ(p.q.s2, 2);
  EXPECT_EQ(d.k_seq[1], at(a.key[0], 11 + 1000));
  EXPECT_EQ(p.k_seqs[1].s_head, 300);
  EXPECT_EQ(p.k_seqs[1].s_pos, 33);
  EXPECT_EQ(d.v_seq[0], d.v_seq[1]);
}

TEST_F(IfaValidateTest, StridedBshQueryAndKey) {
  IfaArgs a = bsh();
  a.query = strided(DType::kFloat16, {2, 1, 64}, {130, 1, 2}, 1);
  a.key = {strided(DType::kFloat16, {2, 8, 32}, {600, 70, 2}, 0)};
  const IfaProblem p = accept(a);
  EXPECT_EQ(p.q.s1, 32);  // head = D * channel stride
  EXPECT_EQ(p.q.s2, 2);
  EXPECT_EQ(p.k_seqs[1].s_pos, 70);
  EXPECT_EQ(p.k_seqs[1].s_head, 32);
  EXPECT_EQ(p.k_seqs[1].s_dim, 2);
}

TEST_F(IfaValidateTest, ListModeWithDifferingS) {
  IfaArgs a = bsh(3);
  a.key = {tensor(DType::kFloat16, {1, 5, 32}), tensor(DType::kFloat16, {1, 0, 32}),
           tensor(DType::kFloat16, {1, 9, 32})};
  a.key[1].data = nullptr;  // an empty tensor needs no data
  a.value = {tensor(DType::kFloat16, {1, 5, 32}), tensor(DType::kFloat16, {1, 0, 32}),
             tensor(DType::kFloat16, {1, 9, 32})};
  const auto bound = bind(a);
  const IfaProblem& p = bound->p;
  const core::IfaData& d = bound->d;
  EXPECT_EQ(p.kv_len, (std::vector<int64_t>{5, 0, 9}));
  EXPECT_EQ(d.k_seq[0], a.key[0].data);
  EXPECT_EQ(d.k_seq[1], nullptr);
  EXPECT_EQ(d.k_seq[2], a.key[2].data);
  EXPECT_EQ(d.v_seq[2], a.value[2].data);
  EXPECT_EQ(p.k_seqs[2].s_pos, 32);

  a.actual_seq_lengths = std::vector<int64_t>{4, 0, 9};
  const IfaProblem q = accept(a);
  EXPECT_EQ(q.kv_len, (std::vector<int64_t>{4, 0, 9}));
}

TEST_F(IfaValidateTest, ListModeBnsd) {
  IfaArgs a = bnsd(2, 4, 2, 16, 8);
  a.key = {tensor(DType::kFloat16, {1, 2, 3, 16}), tensor(DType::kFloat16, {1, 2, 7, 16})};
  a.value = a.key;
  const IfaProblem p = accept(a);
  EXPECT_EQ(p.kv_len, (std::vector<int64_t>{3, 7}));
  EXPECT_EQ(p.k_seqs[1].s_head, 7 * 16);
  EXPECT_EQ(p.k_seqs[0].s_head, 3 * 16);
}

TEST_F(IfaValidateTest, EmptyKvWithHugeStridesIsNeverAddressed) {
  IfaArgs a = bsh(2, 4, 2, 16, 0);
  a.key[0].strides[0] = INT64_MAX;  // nothing is addressed in an empty view: no overflow either
  a.key[0].offset = INT64_MAX;
  const auto bound = bind(a);
  const IfaProblem& p = bound->p;
  const core::IfaData& d = bound->d;
  EXPECT_EQ(d.k_seq[1], nullptr);
  EXPECT_EQ(p.kv_len, (std::vector<int64_t>{0, 0}));
}

TEST_F(IfaValidateTest, KvWithZeroLength) {
  IfaArgs a = bsh(2, 4, 2, 16, 0);
  a.key[0].data = nullptr;
  a.value[0].data = nullptr;
  const IfaProblem p = accept(a);
  EXPECT_EQ(p.kv_len, (std::vector<int64_t>{0, 0}));
}

TEST_F(IfaValidateTest, ActualSeqLengthsBroadcastAndPrefix) {
  IfaArgs a = bsh(3);
  a.actual_seq_lengths = std::vector<int64_t>{5};
  EXPECT_EQ(accept(a).kv_len, (std::vector<int64_t>{5, 5, 5}));
  a.actual_seq_lengths = std::vector<int64_t>{1, 0, 8, 99, -5};  // only the first B are used
  const IfaProblem p = accept(a);
  EXPECT_EQ(p.kv_len, (std::vector<int64_t>{1, 0, 8}));
  a.actual_seq_lengths = std::vector<int64_t>{};  // empty: as if absent
  EXPECT_EQ(accept(a).kv_len, (std::vector<int64_t>{8, 8, 8}));
}

// Left padding is planned from metadata; its value is device data that each run reads
// (core::ifa_kv_range turns it into the attended ranges).
TEST_F(IfaValidateTest, LeftPadding) {
  IfaArgs a = bsh(3);  // S = 8
  a.actual_seq_lengths = std::vector<int64_t>{3, 7, 6};
  a.kv_padding_size = int64_scalar(2);
  const IfaProblem p = accept(a);
  EXPECT_TRUE(p.left_padding);
  EXPECT_EQ(p.kv_seq_len, 8);
  EXPECT_EQ(p.kv_len, (std::vector<int64_t>{3, 7, 6}));
  // start_b = S - pad - len_b: 3, -1 (empty), 0
  EXPECT_EQ(begins(p, 2), (std::vector<int64_t>{3, 0, 0}));
  EXPECT_EQ(empties(p, 2), (std::vector<bool>{false, true, false}));
  EXPECT_EQ(begins(p, 0), (std::vector<int64_t>{5, 1, 2}));
}

TEST_F(IfaValidateTest, LeftPaddingNegativeIsZeroAndHugeEmptiesAll) {
  IfaArgs a = bsh();
  a.actual_seq_lengths = std::vector<int64_t>{3};
  a.kv_padding_size = int64_scalar(-4);
  const IfaProblem p = accept(a);
  EXPECT_EQ(begins(p, -4), (std::vector<int64_t>{5, 5}));
  EXPECT_EQ(p.kv_len, (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(empties(p, INT64_MAX), (std::vector<bool>{true, true}));
}

TEST_F(IfaValidateTest, LeftPaddingBindsElementZeroOfAView) {
  IfaArgs a = bsh();
  a.actual_seq_lengths = std::vector<int64_t>{3};
  TensorView t = tensor(DType::kInt64, {4});
  static_cast<int64_t*>(t.data)[2] = 1;
  t.offset = 2;
  t.shape[0] = 2;
  a.kv_padding_size = t;
  const auto bound = bind(a);
  ASSERT_NE(bound->d.kv_padding_size, nullptr);
  EXPECT_EQ(*bound->d.kv_padding_size, 1);
  EXPECT_EQ(begins(bound->p, *bound->d.kv_padding_size), (std::vector<int64_t>{4, 4}));
}

TEST_F(IfaValidateTest, LeftPaddingSilentlyIgnored) {
  // Without actual_seq_lengths.
  IfaArgs a = bsh();
  a.kv_padding_size = int64_scalar(3);
  EXPECT_FALSE(accept(a).left_padding);
  EXPECT_EQ(bind(a)->d.kv_padding_size, nullptr);
  // In list mode.
  IfaArgs b = bsh();
  b.key = {tensor(DType::kFloat16, {1, 8, 32}), tensor(DType::kFloat16, {1, 8, 32})};
  b.value = b.key;
  b.actual_seq_lengths = std::vector<int64_t>{2};
  b.kv_padding_size = tensor(DType::kFloat32, {1});  // not even looked at
  EXPECT_FALSE(accept(b).left_padding);
  // With paged KV.
  IfaArgs c = paged_bsh();
  c.kv_padding_size = int64_scalar(5);
  EXPECT_FALSE(accept(c).left_padding);
  // An empty kv_padding_size.
  IfaArgs d = bsh();
  d.actual_seq_lengths = std::vector<int64_t>{2};
  d.kv_padding_size = tensor(DType::kInt64, {0});
  EXPECT_FALSE(accept(d).left_padding);
}

TEST_F(IfaValidateTest, PagedBsh3DProblem) {
  IfaArgs a = paged_bsh();
  const auto bound = bind(a);
  const IfaProblem& p = bound->p;
  const core::IfaData& d = bound->d;
  EXPECT_TRUE(p.k.paged);
  EXPECT_TRUE(p.v.paged);
  EXPECT_EQ(d.k_cache, a.key[0].data);
  EXPECT_EQ(d.v_cache, a.value[0].data);
  EXPECT_EQ(p.k.s_block, 16 * 32);
  EXPECT_EQ(p.k.s_pos, 32);
  EXPECT_EQ(p.k.s_head, 16);
  EXPECT_EQ(p.k.s_dim, 1);
  EXPECT_EQ(d.block_table, a.block_table->data);
  EXPECT_EQ(p.block_table.s0, 3);
  EXPECT_EQ(p.block_table.s1, 1);
  EXPECT_EQ(p.block_table.blocks_per_seq, 3);
  EXPECT_EQ(p.block_table.block_size, 16);
  EXPECT_EQ(p.block_table.num_blocks, 6);
  EXPECT_EQ(p.kv_len, (std::vector<int64_t>{20, 5}));
}

TEST_F(IfaValidateTest, PagedBsndUses3DCache) {
  IfaArgs a = bsnd();
  a.key = {tensor(DType::kFloat16, {3, 32, 32})};
  a.value = a.key;
  a.block_table = int32_table({{0}, {1}});
  a.block_size = 32;
  a.actual_seq_lengths = std::vector<int64_t>{32};
  const IfaProblem p = accept(a);
  EXPECT_EQ(p.k.s_pos, 32);
  EXPECT_EQ(p.k.s_head, 16);
  a.key = {tensor(DType::kFloat16, {3, 32, 2, 16})};
  a.value = a.key;
  invalid(a, "key cache must be 3-D");
}

TEST_F(IfaValidateTest, PagedBnsdAccepts3DCache) {
  IfaArgs a = bnsd();
  a.key = {tensor(DType::kFloat16, {2, 16, 32})};
  a.value = a.key;
  a.block_table = int32_table({{0}, {1}});
  a.block_size = 16;
  a.actual_seq_lengths = std::vector<int64_t>{16, 3};
  const IfaProblem p = accept(a);
  EXPECT_EQ(p.k.s_block, 512);
  EXPECT_EQ(p.k.s_pos, 32);
  EXPECT_EQ(p.k.s_head, 16);
  EXPECT_EQ(p.k.s_dim, 1);
  EXPECT_EQ(p.kv_len, (std::vector<int64_t>{16, 3}));
}

TEST_F(IfaValidateTest, PagedBnsd4DProblem) {
  IfaArgs a = bnsd();
  a.key = {tensor(DType::kFloat16, {5, 2, 16, 16})};
  a.value = {strided(DType::kFloat16, {5, 2, 16, 16}, {1024, 512, 32, 1}, 7)};
  TensorView bt = tensor(DType::kInt32, {2, 4});  // transposed view of a (4, 2) table
  bt.shape = {2, 2};
  bt.strides = {1, 2};
  static_cast<int32_t*>(bt.data)[0] = 4;  // [0][0]
  static_cast<int32_t*>(bt.data)[1] = 2;  // [1][0]
  static_cast<int32_t*>(bt.data)[2] = 3;  // [0][1]
  static_cast<int32_t*>(bt.data)[3] = -1;
  a.block_table = bt;
  a.block_size = 16;
  a.actual_seq_lengths = std::vector<int64_t>{17, 16};
  const auto bound = bind(a);
  const IfaProblem& p = bound->p;
  const core::IfaData& d = bound->d;
  EXPECT_EQ(p.k.s_block, 512);
  EXPECT_EQ(p.k.s_head, 256);
  EXPECT_EQ(p.k.s_pos, 16);
  EXPECT_EQ(p.k.s_dim, 1);
  EXPECT_EQ(d.v_cache, at(a.value[0], 7));
  EXPECT_EQ(p.v.s_block, 1024);
  EXPECT_EQ(p.v.s_head, 512);
  EXPECT_EQ(p.v.s_pos, 32);
  EXPECT_EQ(p.block_table.s0, 1);
  EXPECT_EQ(p.block_table.s1, 2);
  EXPECT_EQ(p.block_table.num_blocks, 5);
}

TEST_F(IfaValidateTest, MaskBroadcastStrides) {
  struct Case {
    std::vector<int64_t> shape;
    int64_t s0, s1, s2;
  };
  // B = 2, N = 4, S_m = 10.
  const Case cases[] = {{{2, 10}, 10, 0, 1},        {{1, 10}, 0, 0, 1},
                        {{2, 1, 10}, 10, 0, 1},     {{2, 1, 1, 10}, 10, 0, 1},
                        {{2, 4, 1, 10}, 40, 10, 1}, {{1, 4, 1, 10}, 0, 10, 1},
                        {{1, 1, 1, 10}, 0, 0, 1}};
  for (const auto& c : cases) {
    IfaArgs a = bsh();
    TensorView m = tensor(DType::kUInt8, {80});
    a.atten_mask = TensorView::contiguous(m.data, DType::kUInt8, c.shape);
    SCOPED_TRACE(a.atten_mask->describe());
    const auto bound = bind(a);
    const IfaProblem& p = bound->p;
    const core::IfaData& d = bound->d;
    EXPECT_EQ(d.mask, m.data);
    EXPECT_EQ(p.mask.dtype, DType::kUInt8);
    EXPECT_EQ(p.mask.s0, c.s0);
    EXPECT_EQ(p.mask.s1, c.s1);
    EXPECT_EQ(p.mask.s2, c.s2);
  }
}

TEST_F(IfaValidateTest, EmptyMaskIsAbsent) {
  IfaArgs a = bsh();
  a.atten_mask = tensor(DType::kFloat16, {0});  // numel 0: ignored, even with a wrong dtype
  a.atten_mask->data = nullptr;
  EXPECT_FALSE(accept(a).mask.present);
}

TEST_F(IfaValidateTest, PseBroadcastStrides) {
  IfaArgs a = bsh();
  a.pse_shift = tensor(DType::kFloat16, {1, 4, 1, 12});
  IfaProblem p = accept(a);
  EXPECT_EQ(bind(a)->d.pse, a.pse_shift->data);
  EXPECT_EQ(p.pse.s0, 0);
  EXPECT_EQ(p.pse.s1, 12);
  EXPECT_EQ(p.pse.s2, 1);
  a.pse_shift = strided(DType::kFloat16, {2, 4, 1, 8}, {100, 20, 1, 2}, 3);
  p = accept(a);
  EXPECT_EQ(bind(a)->d.pse, at(*a.pse_shift, 3));
  EXPECT_EQ(p.pse.s0, 100);
  EXPECT_EQ(p.pse.s1, 20);
  EXPECT_EQ(p.pse.s2, 2);
}

TEST_F(IfaValidateTest, AntiquantViews) {
  struct Case {
    std::vector<int64_t> shape;
    core::AntiquantMode mode;
    int64_t s0, s1, s2;
  };
  // KV_N = 2, D = 16.
  const Case cases[] = {{{2}, core::AntiquantMode::kPerTensor, 1, 0, 0},
                        {{2, 32}, core::AntiquantMode::kPerChannel, 32, 16, 1},
                        {{2, 2, 16}, core::AntiquantMode::kPerChannel, 32, 16, 1},
                        {{2, 2, 1, 16}, core::AntiquantMode::kPerChannel, 32, 16, 1},
                        {{2, 1, 2, 16}, core::AntiquantMode::kPerChannel, 32, 16, 1}};
  for (const auto& c : cases) {
    IfaArgs a = bsh(2, 4, 2, 16, 8, DType::kFloat16, DType::kInt8);
    TensorView sc = tensor(DType::kFloat16, {64});
    TensorView off = tensor(DType::kFloat16, {64});
    a.antiquant_scale = TensorView::contiguous(sc.data, DType::kFloat16, c.shape);
    a.antiquant_offset = TensorView::contiguous(off.data, DType::kFloat16, c.shape);
    SCOPED_TRACE(a.antiquant_scale->describe());
    const auto bound = bind(a);
    const IfaProblem& p = bound->p;
    const core::IfaData& d = bound->d;
    EXPECT_EQ(p.antiquant, c.mode);
    for (const core::View3* v : {&p.antiquant_scale, &p.antiquant_offset}) {
      EXPECT_EQ(v->s0, c.s0);
      EXPECT_EQ(v->s1, c.s1);
      EXPECT_EQ(v->s2, c.s2);
      EXPECT_EQ(v->dtype, DType::kFloat16);
    }
    EXPECT_EQ(d.antiquant_scale, sc.data);
    EXPECT_EQ(d.antiquant_offset, off.data);
  }
  // Offset is optional.
  IfaArgs a = bsh(2, 4, 2, 16, 8, DType::kBFloat16, DType::kInt8, DType::kBFloat16);
  a.antiquant_scale = tensor(DType::kBFloat16, {2, 32});
  const auto bound = bind(a);
  EXPECT_FALSE(bound->p.antiquant_offset.present);
  EXPECT_EQ(bound->d.antiquant_offset, nullptr);
}

TEST_F(IfaValidateTest, QuantScale2Views) {
  struct Case {
    std::vector<int64_t> shape;
    int64_t s1, s2;
  };
  // N = 4, D = 16.
  const Case cases[] = {{{1}, 0, 0},           {{1, 1, 1}, 0, 0},   {{64}, 16, 1},
                        {{1, 64}, 16, 1},      {{1, 1, 64}, 16, 1}, {{4, 16}, 16, 1},
                        {{1, 4, 16}, 16, 1},   {{4, 1, 16}, 16, 1}, {{1, 4, 1, 16}, 16, 1},
                        {{1, 1, 4, 16}, 16, 1}};
  for (const auto& c : cases) {
    IfaArgs a = bsh(2, 4, 2, 16, 8, DType::kFloat16, DType::kFloat16, DType::kInt8);
    TensorView sc = tensor(DType::kFloat32, {64});
    a.quant_scale2 = TensorView::contiguous(sc.data, DType::kFloat32, c.shape);
    a.quant_offset2 = a.quant_scale2;
    SCOPED_TRACE(a.quant_scale2->describe());
    const auto bound = bind(a);
    const IfaProblem& p = bound->p;
    const core::IfaData& d = bound->d;
    EXPECT_EQ(d.quant_scale2, sc.data);
    EXPECT_EQ(p.quant_scale2.s0, 0);
    EXPECT_EQ(p.quant_scale2.s1, c.s1);
    EXPECT_EQ(p.quant_scale2.s2, c.s2);
    EXPECT_EQ(p.quant_offset2.s1, c.s1);
  }
  IfaArgs a = bsh(2, 4, 2, 16, 8, DType::kFloat16, DType::kFloat16, DType::kInt8);
  a.quant_scale2 = strided(DType::kFloat32, {64}, {3}, 2);
  const auto bound = bind(a);
  const IfaProblem& p = bound->p;
  const core::IfaData& d = bound->d;
  EXPECT_EQ(d.quant_scale2, at(*a.quant_scale2, 2));
  EXPECT_EQ(p.quant_scale2.s1, 48);
  EXPECT_EQ(p.quant_scale2.s2, 3);
  EXPECT_FALSE(p.quant_offset2.present);
}

TEST_F(IfaValidateTest, LseView) {
  IfaArgs a = bsh();
  a.softmax_lse = tensor(DType::kFloat32, {2, 4});
  const auto bound = bind(a);
  const IfaProblem& p = bound->p;
  const core::IfaData& d = bound->d;
  EXPECT_TRUE(p.has_lse);
  EXPECT_EQ(d.lse, a.softmax_lse->data);
  EXPECT_EQ(p.lse_s0, 4);
  EXPECT_EQ(p.lse_s1, 1);
}

TEST_F(IfaValidateTest, ValidationIsPureAndRepeatable) {
  IfaArgs a = paged_bsh();
  a.atten_mask = tensor(DType::kBool, {2, 48});
  const IfaProblem p1 = accept(a);
  const IfaProblem p2 = accept(a);
  EXPECT_EQ(p1.kv_len, p2.kv_len);
  EXPECT_EQ(p1.mask.s0, p2.mask.s0);
  EXPECT_STREQ(last_error_message(), "");
}

// ---- block-table ids: device data, checked by the run ------------------------------------------

TEST_F(IfaValidateTest, BlockTableIdsCheckedOnlyWhereReferenced) {
  IfaArgs a = paged_bsh();  // lengths {20, 5}: batch 0 uses slots 0, 1; batch 1 uses slot 0
  int32_t* ids = static_cast<int32_t*>(a.block_table->data);
  EXPECT_EQ(plan_and_run(a), Status::kSuccess) << last_error_message();

  ids[2] = 1000;  // batch 0, slot 2: not referenced
  ids[4] = -7;    // batch 1, slot 1: not referenced
  EXPECT_EQ(plan_and_run(a), Status::kSuccess) << last_error_message();

  ids[1] = 6;  // == num_blocks
  EXPECT_EQ(plan_and_run(a), Status::kInvalid);
  EXPECT_NE(std::string(last_error_message()).find("block_table[0][1] (6)"), std::string::npos)
      << last_error_message();

  ids[1] = 3;
  ids[3] = -1;
  EXPECT_EQ(plan_and_run(a), Status::kInvalid);
  EXPECT_NE(std::string(last_error_message()).find("block_table[1][0] (-1)"), std::string::npos)
      << last_error_message();
}

TEST_F(IfaValidateTest, BlockTableZeroLengthBatchReadsNothing) {
  IfaArgs a = paged_bsh();
  a.actual_seq_lengths = std::vector<int64_t>{16, 0};
  int32_t* ids = static_cast<int32_t*>(a.block_table->data);
  ids[3] = -1;  // batch 1 slot 0
  ids[1] = -1;  // batch 0 slot 1: 16 tokens fit one block
  EXPECT_EQ(plan_and_run(a), Status::kSuccess) << last_error_message();
}

}  // namespace
}  // namespace kvflash
