// Every SFA rejection lives here, in the order of docs/semantics.md §3.5 (null pointers first), so
// that one invalid argument always produces the same code and message whatever else is wrong.
#include "ops/sfa/sfa_validate.hpp"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/checked_math.hpp"
#include "core/error.hpp"
#include "core/length_tensor.hpp"
#include "core/view_check.hpp"
#include "ops/sfa/sfa_fields.hpp"
#include "ops/sparse/sparse_rules.hpp"

namespace kvflash::sfa {
namespace {

using core::SfaProblem;

constexpr int64_t kNope = SfaProblem::kNopeDim;
constexpr int64_t kRope = SfaProblem::kRopeDim;
constexpr int64_t kMaxSparseBlock = 128;
constexpr int64_t kMaxGroup = 128;

Status invalid(const std::string& msg) { return core::fail(Status::kInvalid, kOpName, msg); }
Status null_ptr(const std::string& msg) { return core::fail(Status::kNullPtr, kOpName, msg); }

std::string shape_str(const TensorView& v) { return v.describe(); }

bool is_pow2(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }

Status check_view(const TensorView& v, const char* name) {
  int64_t numel = 0;
  return core::check_view(kOpName, v, name, &numel);
}

Status expect_shape(const TensorView& v, const char* name, std::initializer_list<int64_t> dims) {
  return sparse::expect_shape(kOpName, v, name, dims);
}
Status expect_dtype(const TensorView& v, const char* name, DType want) {
  return sparse::expect_dtype(kOpName, v, name, want);
}

// A 1-D int32 or int64 actual-length tensor with exactly `batch` entries (its values are read by
// the run).
Status check_lengths_tensor(const TensorView& v, const char* name, int64_t batch) {
  if (v.data == nullptr) return null_ptr(std::string(name) + " data is null");
  KVFLASH_RETURN_IF_ERROR(check_view(v, name));
  return sparse::expect_lengths(kOpName, v, name, batch);
}

core::SfaRowView row_view(const TensorView& v, bool tnd, int64_t s1, int head_axis) {
  core::SfaRowView r;
  r.present = true;
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
  r.present = true;
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

}  // namespace

Status validate(const SfaArgs& user_args, SfaProblem* p) {
  const SfaArgs a = core::with_canonical_strides(kFields, user_args);
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
  for (const Named& n : views) KVFLASH_RETURN_IF_ERROR(check_view(*n.v, n.name));
  std::vector<Named> placed = views;  // every tensor of the call, for the device rule
  if (a.actual_seq_lengths_query)
    placed.push_back({&*a.actual_seq_lengths_query, "actual_seq_lengths_query"});
  if (a.actual_seq_lengths_kv)
    placed.push_back({&*a.actual_seq_lengths_kv, "actual_seq_lengths_kv"});
  for (const Named& n : placed) {
    if (n.v->device != a.query.device)
      return invalid(std::string(n.name) + " is on " + device_name(n.v->device) +
                     " but query is on " + device_name(a.query.device) +
                     ": every tensor of a call must be on one device");
  }

  // ---- rule 6: layouts ----------------------------------------------------------------------
  const std::string& lq = a.layout_query;
  const std::string& lk = a.layout_kv;
  sparse::Layouts lay;
  KVFLASH_RETURN_IF_ERROR(sparse::layouts(kOpName, lq, lk, "layout_kv", &lay));
  const bool q_tnd = lay.q_tnd, kv_tnd = lay.k_tnd, paged = lay.paged;

  // ---- rule 2: dtypes -----------------------------------------------------------------------
  const DType dt = a.query.dtype;
  if (dt != DType::kFloat16 && dt != DType::kBFloat16)
    return invalid(std::string("query dtype must be fp16 or bf16, got ") + dtype_name(dt));
  for (const Named& n : std::initializer_list<Named>{{&a.key, "key"},
                                                     {&value, "value"},
                                                     {&a.query_rope, "query_rope"},
                                                     {&a.key_rope, "key_rope"}})
    KVFLASH_RETURN_IF_ERROR(expect_dtype(*n.v, n.name, dt));
  // attention_out: the query dtype, or fp32 (kvflash extension: the unrounded result, a partial
  // for a log-sum-exp merge; not available through aclnn).
  if (a.attention_out.dtype != DType::kFloat32)
    KVFLASH_RETURN_IF_ERROR(expect_dtype(a.attention_out, "attention_out", dt));
  KVFLASH_RETURN_IF_ERROR(expect_dtype(a.sparse_indices, "sparse_indices", DType::kInt32));
  if (a.block_table)
    KVFLASH_RETURN_IF_ERROR(expect_dtype(*a.block_table, "block_table", DType::kInt32));
  if (a.sinks) KVFLASH_RETURN_IF_ERROR(expect_dtype(*a.sinks, "sinks", DType::kFloat32));
  if (a.return_softmax_lse) {
    KVFLASH_RETURN_IF_ERROR(expect_dtype(*a.softmax_max, "softmax_max", DType::kFloat32));
    KVFLASH_RETURN_IF_ERROR(expect_dtype(*a.softmax_sum, "softmax_sum", DType::kFloat32));
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
    return invalid("query heads N1 / key heads N2 (group size " + std::to_string(n1 / n2) +
                   ") must be one of 1, 2, 4, ..., 128");
  if (d != kNope) return invalid("query head dim (" + std::to_string(d) + ") must be 512");
  if (kd != kNope) return invalid("key head dim (" + std::to_string(kd) + ") must be 512");

  sparse::QueryRows qr;
  KVFLASH_RETURN_IF_ERROR(
      sparse::query_rows(kOpName, a.query, a.actual_seq_lengths_query, q_tnd, "T1", &qr));
  const int64_t batch = qr.batch, s1 = qr.s1, rows = qr.rows, t1 = q_tnd ? qr.rows : 0;

  // Shapes of the per-row tensors.
  const int64_t kk = a.sparse_indices.rank == q_rank ? a.sparse_indices.shape[q_rank - 1] : -1;
  if (q_tnd) {
    KVFLASH_RETURN_IF_ERROR(expect_shape(a.query_rope, "query_rope", {t1, n1, kRope}));
    KVFLASH_RETURN_IF_ERROR(expect_shape(a.sparse_indices, "sparse_indices", {t1, n2, kk}));
    KVFLASH_RETURN_IF_ERROR(expect_shape(a.attention_out, "attention_out", {t1, n1, d}));
  } else {
    KVFLASH_RETURN_IF_ERROR(expect_shape(a.query_rope, "query_rope", {batch, s1, n1, kRope}));
    KVFLASH_RETURN_IF_ERROR(expect_shape(a.sparse_indices, "sparse_indices", {batch, s1, n2, kk}));
    KVFLASH_RETURN_IF_ERROR(expect_shape(a.attention_out, "attention_out", {batch, s1, n1, d}));
  }
  // ---- rule 11: sparse size -----------------------------------------------------------------
  if (kk < 1)
    return invalid("sparse_indices last dim (sparse_size K = " + std::to_string(kk) +
                   ") must be >= 1");

  // KV shapes.
  const int64_t kv0 = a.key.shape[0];
  const int64_t kv1 = kv_tnd ? 0 : a.key.shape[1];
  if (kv_tnd) {
    KVFLASH_RETURN_IF_ERROR(expect_shape(value, "value", {kv0, n2, kNope}));
    KVFLASH_RETURN_IF_ERROR(expect_shape(a.key_rope, "key_rope", {kv0, n2, kRope}));
    if (kv0 <= 0) return invalid("key T2 (" + std::to_string(kv0) + ") must be > 0");
  } else {
    KVFLASH_RETURN_IF_ERROR(expect_shape(value, "value", {kv0, kv1, n2, kNope}));
    KVFLASH_RETURN_IF_ERROR(expect_shape(a.key_rope, "key_rope", {kv0, kv1, n2, kRope}));
    if (!paged && kv0 != batch)
      return invalid("key batch (" + std::to_string(kv0) + ") must equal B (" +
                     std::to_string(batch) + ")");
    if (!paged && kv1 <= 0) return invalid("key S2 (" + std::to_string(kv1) + ") must be > 0");
  }

  // ---- rule 5: attributes -------------------------------------------------------------------
  if (a.num_threads < 0)
    return invalid("num_threads (" + std::to_string(a.num_threads) +
                   ") must be >= 0 (0 = library default)");
  KVFLASH_RETURN_IF_ERROR(
      sparse::attributes(kOpName, a.sparse_mode, a.pre_tokens, a.next_tokens));
  if (a.attention_mode != 2)
    return invalid("attention_mode (" + std::to_string(a.attention_mode) + ") must be 2");
  const int64_t sbs = a.sparse_block_size;
  if (!is_pow2(sbs) || sbs > kMaxSparseBlock)
    return invalid("sparse_block_size (" + std::to_string(sbs) +
                   ") must be a power of two in [1, 128]");

  // ---- rule 7: paged attention --------------------------------------------------------------
  int64_t max_blocks = 0;
  if (paged) {
    KVFLASH_RETURN_IF_ERROR(sparse::paged_key(kOpName, a.key, a.block_table,
                                              a.actual_seq_lengths_kv.has_value(), "layout_kv",
                                              "actual_seq_lengths_kv", batch));
    max_blocks = a.block_table->shape[1];
    if (kv1 % sbs != 0)
      return invalid("sparse_block_size (" + std::to_string(sbs) +
                     ") must divide the key block_size (" + std::to_string(kv1) + ")");
  } else if (a.block_table) {
    return invalid("block_table must be null unless layout_kv is PA_BSND");
  }

  // ---- rule 8: softmax outputs --------------------------------------------------------------
  if (a.return_softmax_lse) {
    for (const TensorView* v : {&*a.softmax_max, &*a.softmax_sum}) {
      const char* name = v == &*a.softmax_max ? "softmax_max" : "softmax_sum";
      if (v->numel() == 0) return invalid(std::string(name) + " must not be empty");
      KVFLASH_RETURN_IF_ERROR(q_tnd ? expect_shape(*v, name, {n2, t1, n1 / n2})
                                    : expect_shape(*v, name, {batch, n2, s1, n1 / n2}));
      if (!v->is_contiguous()) return invalid(std::string(name) + " must be contiguous");
    }
  }
  if (!a.attention_out.is_contiguous()) return invalid("attention_out must be contiguous");

  // ---- rule 10: sinks -----------------------------------------------------------------------
  if (a.sinks) {
    if (a.sinks->rank != 1 || a.sinks->shape[0] != n1)
      return invalid("sinks must be 1-D with N1 (" + std::to_string(n1) + ") entries, got " +
                     shape_str(*a.sinks));
  }

  // ---- rule 9 and §3.3: actual lengths (their values are device data, read by the run) --------
  const bool has_lq = a.actual_seq_lengths_query.has_value();
  const bool has_lkv = a.actual_seq_lengths_kv.has_value();
  if (has_lq) {
    KVFLASH_RETURN_IF_ERROR(
        check_lengths_tensor(*a.actual_seq_lengths_query, "actual_seq_lengths_query", batch));
  }
  if (kv_tnd && !has_lkv) return invalid("actual_seq_lengths_kv is required with layout_kv TND");
  if (has_lkv) {
    KVFLASH_RETURN_IF_ERROR(
        check_lengths_tensor(*a.actual_seq_lengths_kv, "actual_seq_lengths_kv", batch));
  }

  // ---- the normalised problem ---------------------------------------------------------------
  SfaProblem& pr = *p;
  pr = SfaProblem{};
  pr.device = a.query.device;
  pr.batch = batch;
  pr.num_heads = n1;
  pr.sparse_size = kk;
  pr.sparse_block_size = sbs;
  pr.num_rows = rows;
  pr.sparse_mode = a.sparse_mode;
  pr.dtype = dt;
  pr.out_dtype = a.attention_out.dtype;
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
  pr.paged = paged;
  if (paged) {
    const TensorView& bt = *a.block_table;
    pr.bt_s0 = bt.strides[0];
    pr.bt_s1 = bt.strides[1];
    pr.block_size = kv1;
    pr.num_blocks = kv0;
    const auto cap = core::checked_mul(max_blocks, kv1);
    pr.kv_capacity = cap ? *cap : std::numeric_limits<int64_t>::max();
  }
  if (a.sinks) {
    pr.has_sinks = true;
    pr.sinks_s0 = a.sinks->strides[0];
  }
  pr.query_tnd = q_tnd;
  pr.kv_tnd = kv_tnd;
  pr.has_lengths_query = has_lq;
  pr.has_lengths_kv = has_lkv;
  if (has_lq) {
    pr.lengths_query_s0 = a.actual_seq_lengths_query->strides[0];
    pr.lengths_query_64 = a.actual_seq_lengths_query->dtype == DType::kInt64;
  }
  if (has_lkv) {
    pr.lengths_kv_s0 = a.actual_seq_lengths_kv->strides[0];
    pr.lengths_kv_64 = a.actual_seq_lengths_kv->dtype == DType::kInt64;
  }
  pr.s1 = s1;
  pr.kv_rows = kv_tnd ? kv0 : kv1;
  return Status::kSuccess;
}

}  // namespace kvflash::sfa
