// Every SFA rejection lives here, in the order of spec §3.5 (null pointers first), so that one
// invalid argument always produces the same code and message whatever else is wrong.
#include "sfa/sfa_validate.hpp"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/checked_math.hpp"
#include "core/error.hpp"

namespace kvflash::sfa {
namespace {

using core::SfaProblem;

constexpr int64_t kNope = SfaProblem::kNopeDim;
constexpr int64_t kRope = SfaProblem::kRopeDim;
constexpr int64_t kMaxSparseBlock = 128;
constexpr int64_t kMaxGroup = 128;
constexpr int64_t kMaxBlockSize = 1024;
constexpr int64_t kBlockSizeAlign = 16;

Status invalid(const std::string& msg) { return core::fail(Status::kInvalid, kOpName, msg); }
Status null_ptr(const std::string& msg) { return core::fail(Status::kNullPtr, kOpName, msg); }

std::string shape_str(const TensorView& v) { return v.describe(); }

std::string dims_str(std::initializer_list<int64_t> dims) {
  std::string s = "[";
  bool first = true;
  for (int64_t d : dims) {
    if (!first) s += ",";
    s += std::to_string(d);
    first = false;
  }
  return s + "]";
}

bool is_pow2(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }

// A view kvflash may index: known dtype, rank in [0, kMaxRank], non-negative dims, strides and
// offset, and a largest element offset that fits int64 (so no address computation can overflow).
Status check_view(const TensorView& v, const char* name) {
  if (!dtype_is_known(v.dtype))
    return invalid(std::string(name) + " has an unknown dtype (" +
                   std::to_string(static_cast<int>(v.dtype)) + ")");
  if (v.rank < 0 || v.rank > kMaxRank)
    return invalid(std::string(name) + " rank (" + std::to_string(v.rank) + ") must be in [0, 8]");
  if (v.offset < 0) return invalid(std::string(name) + " offset must be >= 0");
  int64_t last = v.offset;
  for (int i = 0; i < v.rank; ++i) {
    if (v.shape[i] < 0) return invalid(std::string(name) + " has a negative dim: " + shape_str(v));
    if (v.strides[i] < 0)
      return invalid(std::string(name) + " has a negative stride on axis " + std::to_string(i));
    if (v.shape[i] == 0) continue;
    auto step = core::checked_mul(v.shape[i] - 1, v.strides[i]);
    auto sum = step ? core::checked_add(last, *step) : std::nullopt;
    auto bytes =
        sum ? core::checked_mul(*sum + 1, static_cast<int64_t>(dtype_size(v.dtype))) : std::nullopt;
    if (!bytes) return invalid(std::string(name) + " is too large to address: " + shape_str(v));
    last = *sum;
  }
  return Status::kSuccess;
}

bool same_shape(const TensorView& v, std::initializer_list<int64_t> dims) {
  if (v.rank != static_cast<int>(dims.size())) return false;
  int i = 0;
  for (int64_t d : dims)
    if (v.shape[i++] != d) return false;
  return true;
}

Status expect_shape(const TensorView& v, const char* name, std::initializer_list<int64_t> dims) {
  if (!same_shape(v, dims))
    return invalid(std::string(name) + " shape must be " + dims_str(dims) + ", got " +
                   shape_str(v));
  return Status::kSuccess;
}

Status expect_dtype(const TensorView& v, const char* name, DType want) {
  if (v.dtype != want)
    return invalid(std::string(name) + " dtype must be " + dtype_name(want) + ", got " +
                   dtype_name(v.dtype));
  return Status::kSuccess;
}

int32_t read_i32(const TensorView& v, int64_t i) {
  return static_cast<const int32_t*>(v.data)[v.offset + i * v.strides[0]];
}

// A 1-D int32 actual-length tensor with exactly `batch` entries.
Status check_lengths_tensor(const TensorView& v, const char* name, int64_t batch) {
  if (v.data == nullptr) return null_ptr(std::string(name) + " data is null");
  if (Status s = check_view(v, name); s != Status::kSuccess) return s;
  if (Status s = expect_dtype(v, name, DType::kInt32); s != Status::kSuccess) return s;
  if (v.rank != 1 || v.shape[0] != batch)
    return invalid(std::string(name) + " must be 1-D with B (" + std::to_string(batch) +
                   ") entries, got " + shape_str(v));
  return Status::kSuccess;
}

// Per-batch counts in [0, limit].
Status read_counts(const TensorView& v, const char* name, int64_t batch, int64_t limit,
                   const char* limit_name, std::vector<int64_t>* out) {
  out->resize(batch);
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t x = read_i32(v, b);
    if (x < 0 || x > limit)
      return invalid(std::string(name) + "[" + std::to_string(b) + "] (" + std::to_string(x) +
                     ") must be in [0, " + limit_name + " = " + std::to_string(limit) + "]");
    (*out)[b] = x;
  }
  return Status::kSuccess;
}

// Prefix sums: non-decreasing, first >= 0, last <= total. out gets the per-batch counts and row0
// the start of each batch.
Status read_prefix(const TensorView& v, const char* name, int64_t batch, int64_t total,
                   const char* total_name, std::vector<int64_t>* counts,
                   std::vector<int64_t>* row0) {
  counts->resize(batch);
  row0->resize(batch);
  int64_t prev = 0;
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t x = read_i32(v, b);
    if (x < prev)
      return invalid(std::string(name) + " must be non-decreasing prefix sums starting at >= 0; " +
                     "entry " + std::to_string(b) + " (" + std::to_string(x) + ") < " +
                     std::to_string(prev));
    if (x > total)
      return invalid(std::string(name) + "[" + std::to_string(b) + "] (" + std::to_string(x) +
                     ") exceeds " + total_name + " (" + std::to_string(total) + ")");
    (*row0)[b] = prev;
    (*counts)[b] = x - prev;
    prev = x;
  }
  return Status::kSuccess;
}

core::SfaRowView row_view(const TensorView& v, bool tnd, int64_t s1, int head_axis) {
  core::SfaRowView r;
  r.data = v.data == nullptr
               ? nullptr
               : static_cast<char*>(v.data) + v.offset * static_cast<int64_t>(dtype_size(v.dtype));
  r.dtype = v.dtype;
  if (tnd) {  // (T, N, D)
    r.rows_inner = v.shape[0] > 0 ? v.shape[0] : 1;
    r.s_outer = 0;
    r.s_inner = v.strides[0];
  } else {  // (B, S, N, D)
    r.rows_inner = s1 > 0 ? s1 : 1;
    r.s_outer = v.strides[0];
    r.s_inner = v.strides[1];
  }
  r.s_head = v.strides[head_axis];
  r.s_dim = v.strides[v.rank - 1];
  return r;
}

// Softmax outputs: BSND (B, 1, S1, N1) -> (b, 0, i, h); TND (1, T1, N1) -> (0, t, h).
core::SfaRowView lse_view(const TensorView& v, bool tnd, int64_t s1) {
  core::SfaRowView r;
  r.data = static_cast<char*>(v.data) + v.offset * 4;
  r.dtype = DType::kFloat32;
  if (tnd) {
    r.rows_inner = v.shape[1] > 0 ? v.shape[1] : 1;
    r.s_outer = 0;
    r.s_inner = v.strides[1];
    r.s_head = v.strides[2];
  } else {
    r.rows_inner = s1 > 0 ? s1 : 1;
    r.s_outer = v.strides[0];
    r.s_inner = v.strides[2];
    r.s_head = v.strides[3];
  }
  r.s_dim = 0;
  return r;
}

core::SfaKvView kv_view(const TensorView& v, bool tnd, bool paged) {
  core::SfaKvView k;
  k.data = static_cast<const char*>(v.data) + v.offset * static_cast<int64_t>(dtype_size(v.dtype));
  if (paged) {  // (blocks, block_size, 1, D)
    k.s_block = v.strides[0];
    k.s_pos = v.strides[1];
  } else if (tnd) {  // (T2, 1, D)
    k.s_pos = v.strides[0];
  } else {  // (B, S2, 1, D)
    k.s_batch = v.strides[0];
    k.s_pos = v.strides[1];
  }
  k.s_dim = v.strides[v.rank - 1];
  return k;
}

bool same_view(const TensorView& a, const TensorView& b) {
  if (a.data != b.data || a.dtype != b.dtype || a.rank != b.rank || a.offset != b.offset)
    return false;
  for (int i = 0; i < a.rank; ++i)
    if (a.shape[i] != b.shape[i] || (a.shape[i] > 1 && a.strides[i] != b.strides[i])) return false;
  return true;
}

}  // namespace

Status validate(const SfaArgs& a, SfaProblem* p) {
  // ---- rule 1: required pointers ----------------------------------------------------------------
  if (a.query.data == nullptr) return null_ptr("query is null");
  if (a.key.data == nullptr) return null_ptr("key is null");
  if (a.sparse_indices.data == nullptr) return null_ptr("sparse_indices is null");
  if (a.attention_out.data == nullptr) return null_ptr("attention_out is null");
  if (a.return_softmax_lse) {
    // An empty output (numel 0, possibly without data) is a shape error (rule 8), not a null.
    if (!a.softmax_max || (a.softmax_max->data == nullptr && a.softmax_max->numel() != 0))
      return null_ptr("return_softmax_lse is true but softmax_max is null");
    if (!a.softmax_sum || (a.softmax_sum->data == nullptr && a.softmax_sum->numel() != 0))
      return null_ptr("return_softmax_lse is true but softmax_sum is null");
  }
  if (a.query_rope.data == nullptr)
    return invalid("query_rope is required (attention_mode 2 is MLA absorb)");
  if (a.key_rope.data == nullptr)
    return invalid("key_rope is required (attention_mode 2 is MLA absorb)");
  const TensorView& value = a.value ? *a.value : a.key;
  if (value.data == nullptr) return null_ptr("value is given but its data is null");

  // ---- views are addressable ----------------------------------------------------------------
  struct Named {
    const TensorView* v;
    const char* name;
  };
  std::vector<Named> views = {{&a.query, "query"},
                              {&a.key, "key"},
                              {&value, "value"},
                              {&a.sparse_indices, "sparse_indices"},
                              {&a.query_rope, "query_rope"},
                              {&a.key_rope, "key_rope"},
                              {&a.attention_out, "attention_out"}};
  if (a.block_table) views.push_back({&*a.block_table, "block_table"});
  if (a.sinks) views.push_back({&*a.sinks, "sinks"});
  if (a.return_softmax_lse) {
    views.push_back({&*a.softmax_max, "softmax_max"});
    views.push_back({&*a.softmax_sum, "softmax_sum"});
  }
  for (const Named& n : views)
    if (Status s = check_view(*n.v, n.name); s != Status::kSuccess) return s;

  // ---- rule 6: layouts ----------------------------------------------------------------------
  const std::string& lq = a.layout_query;
  const std::string& lk = a.layout_kv;
  if (lq != "BSND" && lq != "TND")
    return invalid("layout_query (\"" + lq + "\") must be \"BSND\" or \"TND\"");
  if (lk != "BSND" && lk != "TND" && lk != "PA_BSND")
    return invalid("layout_kv (\"" + lk + "\") must be \"BSND\", \"TND\" or \"PA_BSND\"");
  if (lk != "PA_BSND" && lk != lq)
    return invalid("layout_kv (\"" + lk + "\") must equal layout_query (\"" + lq +
                   "\") unless it is \"PA_BSND\"");
  const bool q_tnd = lq == "TND";
  const bool kv_tnd = lk == "TND";
  const bool paged = lk == "PA_BSND";

  // ---- rule 2: dtypes -----------------------------------------------------------------------
  const DType dt = a.query.dtype;
  if (dt != DType::kFloat16 && dt != DType::kBFloat16)
    return invalid(std::string("query dtype must be fp16 or bf16, got ") + dtype_name(dt));
  for (const Named& n : std::initializer_list<Named>{{&a.key, "key"},
                                                     {&value, "value"},
                                                     {&a.query_rope, "query_rope"},
                                                     {&a.key_rope, "key_rope"},
                                                     {&a.attention_out, "attention_out"}})
    if (Status s = expect_dtype(*n.v, n.name, dt); s != Status::kSuccess) return s;
  if (Status s = expect_dtype(a.sparse_indices, "sparse_indices", DType::kInt32);
      s != Status::kSuccess)
    return s;
  if (a.block_table)
    if (Status s = expect_dtype(*a.block_table, "block_table", DType::kInt32);
        s != Status::kSuccess)
      return s;
  if (a.sinks)
    if (Status s = expect_dtype(*a.sinks, "sinks", DType::kFloat32); s != Status::kSuccess)
      return s;
  if (a.return_softmax_lse) {
    if (Status s = expect_dtype(*a.softmax_max, "softmax_max", DType::kFloat32);
        s != Status::kSuccess)
      return s;
    if (Status s = expect_dtype(*a.softmax_sum, "softmax_sum", DType::kFloat32);
        s != Status::kSuccess)
      return s;
  }

  // ---- rule 3: ranks ------------------------------------------------------------------------
  const int q_rank = q_tnd ? 3 : 4;
  const int kv_rank = kv_tnd ? 3 : 4;
  if (a.query.rank != q_rank)
    return invalid("query rank must be " + std::to_string(q_rank) + " for layout_query " + lq +
                   ", got " + shape_str(a.query));
  if (a.key.rank != kv_rank)
    return invalid("key rank must be " + std::to_string(kv_rank) + " for layout_kv " + lk +
                   ", got " + shape_str(a.key));
  if (a.query_rope.rank != q_rank)
    return invalid("query_rope rank (" + std::to_string(a.query_rope.rank) +
                   ") must equal the query rank (" + std::to_string(q_rank) + ")");

  // ---- rule 4: heads and dims ---------------------------------------------------------------
  const int64_t n1 = a.query.shape[q_rank - 2];
  const int64_t d = a.query.shape[q_rank - 1];
  const int64_t n2 = a.key.shape[kv_rank - 2];
  const int64_t kd = a.key.shape[kv_rank - 1];
  if (n2 != 1) return invalid("key heads N2 (" + std::to_string(n2) + ") must be 1");
  if (n1 <= 0 || n1 % n2 != 0)
    return invalid("query heads N1 (" + std::to_string(n1) + ") must be a positive multiple of N2");
  if (!is_pow2(n1 / n2) || n1 / n2 > kMaxGroup)
    return invalid("group size N1/N2 (" + std::to_string(n1 / n2) +
                   ") must be one of 1, 2, 4, ..., 128");
  if (d != kNope) return invalid("query head dim (" + std::to_string(d) + ") must be 512");
  if (kd != kNope) return invalid("key head dim (" + std::to_string(kd) + ") must be 512");

  int64_t batch = 0, s1 = 0, t1 = 0;
  if (q_tnd) {
    t1 = a.query.shape[0];
    if (t1 <= 0) return invalid("query T1 (" + std::to_string(t1) + ") must be > 0");
    if (!a.actual_seq_lengths_query || a.actual_seq_lengths_query->data == nullptr)
      return invalid("actual_seq_lengths_query is required with layout_query TND");
    batch = a.actual_seq_lengths_query->numel();
    if (a.actual_seq_lengths_query->rank != 1 || batch <= 0)
      return invalid("actual_seq_lengths_query must be 1-D and non-empty with TND, got " +
                     shape_str(*a.actual_seq_lengths_query));
  } else {
    batch = a.query.shape[0];
    s1 = a.query.shape[1];
    if (batch <= 0) return invalid("query batch B (" + std::to_string(batch) + ") must be > 0");
    if (s1 <= 0) return invalid("query S1 (" + std::to_string(s1) + ") must be > 0");
  }
  const int64_t rows = q_tnd ? t1 : batch * s1;  // bounded by the query view check

  // Shapes of the per-row tensors.
  const int64_t kk = a.sparse_indices.rank == q_rank ? a.sparse_indices.shape[q_rank - 1] : -1;
  if (q_tnd) {
    if (Status s = expect_shape(a.query_rope, "query_rope", {t1, n1, kRope}); s != Status::kSuccess)
      return s;
    if (Status s = expect_shape(a.sparse_indices, "sparse_indices", {t1, n2, kk});
        s != Status::kSuccess)
      return s;
    if (Status s = expect_shape(a.attention_out, "attention_out", {t1, n1, d});
        s != Status::kSuccess)
      return s;
  } else {
    if (Status s = expect_shape(a.query_rope, "query_rope", {batch, s1, n1, kRope});
        s != Status::kSuccess)
      return s;
    if (Status s = expect_shape(a.sparse_indices, "sparse_indices", {batch, s1, n2, kk});
        s != Status::kSuccess)
      return s;
    if (Status s = expect_shape(a.attention_out, "attention_out", {batch, s1, n1, d});
        s != Status::kSuccess)
      return s;
  }
  // ---- rule 11: sparse size -----------------------------------------------------------------
  if (kk < 1) return invalid("sparse_size K (" + std::to_string(kk) + ") must be >= 1");

  // KV shapes.
  const int64_t kv0 = a.key.shape[0];
  const int64_t kv1 = kv_tnd ? 0 : a.key.shape[1];
  if (kv_tnd) {
    if (Status s = expect_shape(value, "value", {kv0, n2, kNope}); s != Status::kSuccess) return s;
    if (Status s = expect_shape(a.key_rope, "key_rope", {kv0, n2, kRope}); s != Status::kSuccess)
      return s;
    if (kv0 <= 0) return invalid("key T2 (" + std::to_string(kv0) + ") must be > 0");
  } else {
    if (Status s = expect_shape(value, "value", {kv0, kv1, n2, kNope}); s != Status::kSuccess)
      return s;
    if (Status s = expect_shape(a.key_rope, "key_rope", {kv0, kv1, n2, kRope});
        s != Status::kSuccess)
      return s;
    if (!paged && kv0 != batch)
      return invalid("key batch (" + std::to_string(kv0) + ") must equal B (" +
                     std::to_string(batch) + ")");
    if (!paged && kv1 <= 0) return invalid("key S2 (" + std::to_string(kv1) + ") must be > 0");
  }

  // ---- rule 5: attributes -------------------------------------------------------------------
  if (a.sparse_mode != 0 && a.sparse_mode != 3)
    return invalid("sparse_mode (" + std::to_string(a.sparse_mode) + ") must be 0 or 3");
  constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
  if (a.pre_tokens != kInt64Max)
    return invalid("pre_tokens (" + std::to_string(a.pre_tokens) + ") must be 9223372036854775807");
  if (a.next_tokens != kInt64Max)
    return invalid("next_tokens (" + std::to_string(a.next_tokens) +
                   ") must be 9223372036854775807");
  if (a.attention_mode != 2)
    return invalid("attention_mode (" + std::to_string(a.attention_mode) + ") must be 2");
  const int64_t sbs = a.sparse_block_size;
  if (!is_pow2(sbs) || sbs > kMaxSparseBlock)
    return invalid("sparse_block_size (" + std::to_string(sbs) +
                   ") must be a power of two in [1, 128]");

  // ---- rule 7: paged attention --------------------------------------------------------------
  int64_t max_blocks = 0;
  if (paged) {
    if (!a.block_table || a.block_table->data == nullptr)
      return invalid("block_table is required with layout_kv PA_BSND");
    if (!a.actual_seq_lengths_kv || a.actual_seq_lengths_kv->data == nullptr)
      return invalid("actual_seq_lengths_kv is required with layout_kv PA_BSND");
    const TensorView& bt = *a.block_table;
    if (bt.rank != 2 || bt.shape[0] != batch || bt.shape[1] <= 0)
      return invalid("block_table must be (B = " + std::to_string(batch) + ", M > 0), got " +
                     shape_str(bt));
    max_blocks = bt.shape[1];
    if (kv0 <= 0) return invalid("key block_num (" + std::to_string(kv0) + ") must be > 0");
    if (kv1 <= 0 || kv1 > kMaxBlockSize || kv1 % kBlockSizeAlign != 0)
      return invalid("block_size (" + std::to_string(kv1) +
                     ") must be a multiple of 16 in [16, 1024]");
    if (kv1 % sbs != 0)
      return invalid("sparse_block_size (" + std::to_string(sbs) + ") must divide block_size (" +
                     std::to_string(kv1) + ")");
  } else if (a.block_table && a.block_table->data != nullptr) {
    return invalid("block_table must be null unless layout_kv is PA_BSND");
  }

  // ---- rule 8: softmax outputs --------------------------------------------------------------
  if (a.return_softmax_lse) {
    if (paged) return invalid("return_softmax_lse is not supported with layout_kv PA_BSND");
    for (const TensorView* v : {&*a.softmax_max, &*a.softmax_sum}) {
      const char* name = v == &*a.softmax_max ? "softmax_max" : "softmax_sum";
      if (v->numel() == 0) return invalid(std::string(name) + " must not be empty");
      if (Status s = q_tnd ? expect_shape(*v, name, {n2, t1, n1 / n2})
                           : expect_shape(*v, name, {batch, n2, s1, n1 / n2});
          s != Status::kSuccess)
        return s;
      if (!v->is_contiguous()) return invalid(std::string(name) + " must be contiguous");
    }
  }
  if (!a.attention_out.is_contiguous()) return invalid("attention_out must be contiguous");

  // ---- rule 10: sinks -----------------------------------------------------------------------
  if (a.sinks && a.sinks->data != nullptr) {
    if (a.sinks->rank != 1 || a.sinks->shape[0] != n1)
      return invalid("sinks must be 1-D with N1 (" + std::to_string(n1) + ") entries, got " +
                     shape_str(*a.sinks));
  }

  // ---- rule 9 and §3.3: actual lengths ------------------------------------------------------
  std::vector<int64_t> lqs(batch, s1), q_row0(batch, 0), lkvs(batch, kv1), kv_row0(batch, 0);
  if (a.actual_seq_lengths_query && a.actual_seq_lengths_query->data != nullptr) {
    const TensorView& v = *a.actual_seq_lengths_query;
    if (Status s = check_lengths_tensor(v, "actual_seq_lengths_query", batch);
        s != Status::kSuccess)
      return s;
    Status s =
        q_tnd ? read_prefix(v, "actual_seq_lengths_query", batch, t1, "query T1", &lqs, &q_row0)
              : read_counts(v, "actual_seq_lengths_query", batch, s1, "query S1", &lqs);
    if (s != Status::kSuccess) return s;
  }
  if (kv_tnd && (!a.actual_seq_lengths_kv || a.actual_seq_lengths_kv->data == nullptr))
    return invalid("actual_seq_lengths_kv is required with layout_kv TND");
  if (a.actual_seq_lengths_kv && a.actual_seq_lengths_kv->data != nullptr) {
    const TensorView& v = *a.actual_seq_lengths_kv;
    if (Status s = check_lengths_tensor(v, "actual_seq_lengths_kv", batch); s != Status::kSuccess)
      return s;
    Status s = Status::kSuccess;
    if (kv_tnd) {
      s = read_prefix(v, "actual_seq_lengths_kv", batch, kv0, "key T2", &lkvs, &kv_row0);
    } else if (paged) {
      auto cap = core::checked_mul(max_blocks, kv1);
      s = read_counts(v, "actual_seq_lengths_kv", batch,
                      cap ? *cap : std::numeric_limits<int64_t>::max(),
                      "block_table columns * block_size", &lkvs);
    } else {
      s = read_counts(v, "actual_seq_lengths_kv", batch, kv1, "key S2", &lkvs);
    }
    if (s != Status::kSuccess) return s;
  }

  // ---- the normalised problem ---------------------------------------------------------------
  SfaProblem& pr = *p;
  pr = SfaProblem{};
  pr.batch = batch;
  pr.num_heads = n1;
  pr.sparse_size = kk;
  pr.sparse_block_size = sbs;
  pr.num_rows = rows;
  pr.sparse_mode = a.sparse_mode;
  pr.dtype = dt;
  pr.scale = static_cast<float>(a.scale_value);
  pr.q = row_view(a.query, q_tnd, s1, q_rank - 2);
  pr.q_rope = row_view(a.query_rope, q_tnd, s1, q_rank - 2);
  pr.indices = row_view(a.sparse_indices, q_tnd, s1, q_rank - 2);
  pr.out = row_view(a.attention_out, q_tnd, s1, q_rank - 2);
  if (a.return_softmax_lse) {
    pr.softmax_max = lse_view(*a.softmax_max, q_tnd, s1);
    pr.softmax_sum = lse_view(*a.softmax_sum, q_tnd, s1);
  }
  pr.k = kv_view(a.key, kv_tnd, paged);
  pr.k_rope = kv_view(a.key_rope, kv_tnd, paged);
  pr.v = kv_view(value, kv_tnd, paged);
  pr.v_is_k = same_view(value, a.key);
  pr.paged = paged;
  if (paged) {
    const TensorView& bt = *a.block_table;
    pr.block_table = static_cast<const int32_t*>(bt.data) + bt.offset;
    pr.bt_s0 = bt.strides[0];
    pr.bt_s1 = bt.strides[1];
    pr.block_size = kv1;
    pr.num_blocks = kv0;
  }
  if (a.sinks && a.sinks->data != nullptr) {
    pr.sinks = static_cast<const float*>(a.sinks->data) + a.sinks->offset;
    pr.sinks_s0 = a.sinks->strides[0];
  }
  pr.batches.resize(batch);
  for (int64_t b = 0; b < batch; ++b) pr.batches[b] = {lqs[b], lkvs[b], kv_row0[b]};
  pr.rows.assign(rows, core::SfaRow{});
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t first = q_tnd ? q_row0[b] : b * s1;
    for (int64_t i = 0; i < lqs[b]; ++i) pr.rows[first + i] = {static_cast<int32_t>(b), i};
  }
  pr.num_threads = a.num_threads;
  return Status::kSuccess;
}

Status check_block_ids(const SfaProblem& p) {
  if (!p.paged) return Status::kSuccess;
  const int32_t* idx = static_cast<const int32_t*>(p.indices.data);
  for (int64_t r = 0; r < p.num_rows; ++r) {
    const core::SfaRowLimits lim = core::sfa_row_limits(p, r);
    const int64_t b = p.rows[r].batch;
    for (int64_t k = 0; k < lim.valid_count; ++k) {
      int64_t begin, end;
      if (!core::sfa_selected_range(idx[p.indices.index(r, 0, k)], p.sparse_block_size, lim.thr,
                                    &begin, &end))
        break;
      if (begin == end) continue;
      for (int64_t slot = begin / p.block_size; slot <= (end - 1) / p.block_size; ++slot) {
        const int32_t id = p.block_table[b * p.bt_s0 + slot * p.bt_s1];
        if (id < 0 || id >= p.num_blocks)
          return invalid("block_table[" + std::to_string(b) + "][" + std::to_string(slot) + "] (" +
                         std::to_string(id) + ") is used by query row " + std::to_string(r) +
                         " and must be a block id in [0, " + std::to_string(p.num_blocks) + ")");
      }
    }
  }
  return Status::kSuccess;
}

}  // namespace kvflash::sfa
