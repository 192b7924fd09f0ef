// Every LightningIndexer rejection lives here, in the order of docs/lightning_indexer.md
// ("Arguments and statuses": null pointers first), so one invalid argument always produces the
// same code and message whatever else is wrong.
#include "ops/li/li_validate.hpp"

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

#include "core/checked_math.hpp"
#include "core/error.hpp"
#include "core/length_tensor.hpp"
#include "core/view_check.hpp"
#include "ops/li/li_fields.hpp"
#include "ops/sparse/sparse_rules.hpp"

namespace kvflash::li {
namespace {

using core::LiProblem;
using core::str;

constexpr int64_t kD = 128;
constexpr int64_t kMaxHeads = 64;
constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

Status invalid(const std::string& msg) { return core::fail(Status::kInvalid, kOpName, msg); }
Status null_ptr(const std::string& msg) { return core::fail(Status::kNullPtr, kOpName, msg); }

Status expect_shape(const TensorView& v, const char* name, std::initializer_list<int64_t> dims) {
  return sparse::expect_shape(kOpName, v, name, dims);
}
Status expect_dtype(const TensorView& v, const char* name, DType want) {
  return sparse::expect_dtype(kOpName, v, name, want);
}

}  // namespace

Status validate(const LightningIndexerArgs& user_args, LiProblem* out) {
  const LightningIndexerArgs a = core::with_canonical_strides(kFields, user_args);
  // ---- 1. required pointers -------------------------------------------------------------------
  if (a.query.data == nullptr) return null_ptr("query is null");
  if (a.key.data == nullptr) return null_ptr("key is null");
  if (a.weights.data == nullptr) return null_ptr("weights is null");
  // An empty output (numel 0, possibly without data) is a shape error (rule 9), not a null.
  if (a.sparse_indices.data == nullptr && a.sparse_indices.numel() != 0)
    return null_ptr("sparse_indices is null");
  if (a.return_value &&
      (!a.sparse_values || (a.sparse_values->data == nullptr && a.sparse_values->numel() != 0)))
    return null_ptr("return_value is true but sparse_values is null");

  // ---- 2. views are addressable, on one device --------------------------------------------------
  const bool values = a.return_value;
  KVFLASH_RETURN_IF_ERROR(
      core::for_each_view(kFields, a, [&](const TensorView& v, const char* name) -> Status {
        if (!values && &v == (a.sparse_values ? &*a.sparse_values : nullptr))
          return Status::kSuccess;  // not looked at without return_value
        int64_t numel = 0;
        KVFLASH_RETURN_IF_ERROR(core::check_view(kOpName, v, name, &numel));
        if (v.device != a.query.device)
          return invalid(std::string(name) + " is on " + device_name(v.device) +
                         " but query is on " + device_name(a.query.device) +
                         ": every tensor of a call must be on one device");
        return Status::kSuccess;
      }));

  // ---- 3. layouts -------------------------------------------------------------------------------
  const std::string& lq = a.layout_query;
  const std::string& lk = a.layout_key;
  sparse::Layouts lay;
  KVFLASH_RETURN_IF_ERROR(sparse::layouts(kOpName, lq, lk, "layout_key", &lay));
  const bool q_tnd = lay.q_tnd, k_tnd = lay.k_tnd, paged = lay.paged;

  // ---- 4. dtypes --------------------------------------------------------------------------------
  const DType dt = a.query.dtype;
  if (dt != DType::kFloat16 && dt != DType::kBFloat16)
    return invalid(std::string("query dtype must be fp16 or bf16, got ") + dtype_name(dt));
  // Named after the query too: a wrong query dtype shows up here first.
  if (a.key.dtype != dt)
    return invalid(std::string("key dtype must be the query dtype (") + dtype_name(dt) + "), got " +
                   dtype_name(a.key.dtype));
  if (a.weights.dtype != DType::kFloat32 && a.weights.dtype != dt)
    return invalid(std::string("weights dtype must be fp32 or the query dtype (") + dtype_name(dt) +
                   "), got " + dtype_name(a.weights.dtype));
  KVFLASH_RETURN_IF_ERROR(expect_dtype(a.sparse_indices, "sparse_indices", DType::kInt32));
  // sparse_values: the query dtype, or fp32 (kvflash extension: the unrounded scores, what a
  // context-parallel rank hands to the exact top-k merge; not available through aclnn).
  if (values && a.sparse_values->dtype != DType::kFloat32)
    KVFLASH_RETURN_IF_ERROR(expect_dtype(*a.sparse_values, "sparse_values", dt));
  if (a.block_table)
    KVFLASH_RETURN_IF_ERROR(expect_dtype(*a.block_table, "block_table", DType::kInt32));

  // ---- 5. ranks, heads, head dim ----------------------------------------------------------------
  const int q_rank = q_tnd ? 3 : 4;
  const int k_rank = k_tnd ? 3 : 4;
  if (a.query.rank != q_rank)
    return invalid("query rank must be " + str(q_rank) + " for layout_query " + lq + ", got " +
                   a.query.describe());
  if (a.key.rank != k_rank)
    return invalid("key rank must be " + str(k_rank) + " for layout_key " + lk + ", got " +
                   a.key.describe());
  const int64_t n1 = a.query.shape[q_rank - 2];
  const int64_t d = a.query.shape[q_rank - 1];
  const int64_t n2 = a.key.shape[k_rank - 2];
  const int64_t kd = a.key.shape[k_rank - 1];
  if (n1 < 1 || n1 > kMaxHeads)
    return invalid("query heads N1 (" + str(n1) + ") must be in [1, " + str(kMaxHeads) + "]");
  if (d != kD) return invalid("query head dim (" + str(d) + ") must be 128");
  if (n2 != 1) return invalid("key heads N2 (" + str(n2) + ") must be 1");
  if (kd != kD) return invalid("key head dim (" + str(kd) + ") must be 128");

  // ---- 6. batch and query rows ------------------------------------------------------------------
  sparse::QueryRows qr;
  KVFLASH_RETURN_IF_ERROR(
      sparse::query_rows(kOpName, a.query, a.actual_seq_lengths_query, q_tnd, "T", &qr));
  const int64_t batch = qr.batch, s1 = qr.s1, rows = qr.rows;
  if (rows > kInt32Max) return invalid("query rows (" + str(rows) + ") must be at most 2147483647");
  KVFLASH_RETURN_IF_ERROR(q_tnd ? expect_shape(a.weights, "weights", {rows, n1})
                                : expect_shape(a.weights, "weights", {batch, s1, n1}));

  // ---- 7. key -----------------------------------------------------------------------------------
  const int64_t k0 = a.key.shape[0];
  const int64_t k1 = k_tnd ? 0 : a.key.shape[1];
  int64_t kv_cap = 0;
  if (paged) {
    KVFLASH_RETURN_IF_ERROR(sparse::paged_key(kOpName, a.key, a.block_table,
                                              a.actual_seq_lengths_key.has_value(), "layout_key",
                                              "actual_seq_lengths_key", batch));
    const auto cap = core::checked_mul(a.block_table->shape[1], k1);
    kv_cap = cap ? *cap : std::numeric_limits<int64_t>::max();
  } else {
    if (a.block_table) return invalid("block_table must be null unless layout_key is PA_BSND");
    if (k_tnd) {
      if (k0 <= 0) return invalid("key T2 (" + str(k0) + ") must be > 0");
      if (!a.actual_seq_lengths_key)
        return invalid("actual_seq_lengths_key is required with layout_key TND");
      kv_cap = k0;
    } else {
      if (k0 != batch)
        return invalid("key batch (" + str(k0) + ") must equal B (" + str(batch) + ")");
      if (k1 <= 0) return invalid("key S2 (" + str(k1) + ") must be > 0");
      kv_cap = k1;
    }
  }
  if (kv_cap > kInt32Max)
    return invalid("the keys one batch can hold (" +
                   std::string(paged ? "block_table columns * block_size" : "key length") + " = " +
                   str(kv_cap) + ") must be at most 2147483647 (int32 sparse_indices)");

  // ---- 8. attributes ----------------------------------------------------------------------------
  if (a.num_threads < 0)
    return invalid("num_threads (" + str(a.num_threads) + ") must be >= 0 (0 = library default)");
  const int64_t kk = a.sparse_count;
  if (kk < 1 || kk > 8192 || (kk > 2048 && kk % 1024 != 0))
    return invalid("sparse_count (" + str(kk) +
                   ") must be in [1, 2048] or a multiple of 1024 up to 8192");
  KVFLASH_RETURN_IF_ERROR(
      sparse::attributes(kOpName, a.sparse_mode, a.pre_tokens, a.next_tokens));

  // ---- 9. outputs -------------------------------------------------------------------------------
  for (const TensorView* v : {&a.sparse_indices, values ? &*a.sparse_values : nullptr}) {
    if (v == nullptr) continue;
    const char* name = v == &a.sparse_indices ? "sparse_indices" : "sparse_values";
    KVFLASH_RETURN_IF_ERROR(q_tnd ? expect_shape(*v, name, {rows, 1, kk})
                                  : expect_shape(*v, name, {batch, s1, 1, kk}));
    if (!v->is_contiguous()) return invalid(std::string(name) + " must be contiguous");
  }

  // ---- 10. length tensors (their values are device data, read by the run)
  // ------------------------
  if (a.actual_seq_lengths_query)
    KVFLASH_RETURN_IF_ERROR(
        sparse::expect_lengths(kOpName, *a.actual_seq_lengths_query, "actual_seq_lengths_query", batch));
  if (a.actual_seq_lengths_key)
    KVFLASH_RETURN_IF_ERROR(
        sparse::expect_lengths(kOpName, *a.actual_seq_lengths_key, "actual_seq_lengths_key", batch));

  // ---- the normalised problem -------------------------------------------------------------------
  LiProblem& p = *out;
  p = LiProblem{};
  p.device = a.query.device;
  p.batch = batch;
  p.num_heads = n1;
  p.sparse_count = kk;
  p.sparse_mode = a.sparse_mode;
  p.q_tnd = q_tnd;
  p.s1 = s1;
  p.num_rows = rows;
  p.dtype = dt;
  p.w_dtype = a.weights.dtype;
  const TensorView& q = a.query;
  const TensorView& w = a.weights;
  const TensorView& k = a.key;
  if (q_tnd) {
    p.q_ss = q.strides[0], p.q_sh = q.strides[1], p.q_sd = q.strides[2];
    p.w_ss = w.strides[0], p.w_sh = w.strides[1];
  } else {
    p.q_sb = q.strides[0], p.q_ss = q.strides[1], p.q_sh = q.strides[2], p.q_sd = q.strides[3];
    p.w_sb = w.strides[0], p.w_ss = w.strides[1], p.w_sh = w.strides[2];
  }
  if (paged) {
    p.key_layout = core::LiKeyLayout::kPaged;
    p.k_s0 = k.strides[0], p.k_s1 = k.strides[1], p.k_sd = k.strides[3];
    p.block_size = k1;
    p.num_blocks = k0;
    p.bt_s0 = a.block_table->strides[0], p.bt_s1 = a.block_table->strides[1];
  } else if (k_tnd) {
    p.key_layout = core::LiKeyLayout::kTnd;
    p.k_s1 = k.strides[0], p.k_sd = k.strides[2];
  } else {
    p.key_layout = core::LiKeyLayout::kBsnd;
    p.k_s0 = k.strides[0], p.k_s1 = k.strides[1], p.k_sd = k.strides[3];
  }
  p.kv_cap = kv_cap;
  if (a.actual_seq_lengths_query) {
    p.has_asq = true;
    p.asq_64 = a.actual_seq_lengths_query->dtype == DType::kInt64;
    p.asq_s = a.actual_seq_lengths_query->strides[0];
  }
  if (a.actual_seq_lengths_key) {
    p.has_ask = true;
    p.ask_64 = a.actual_seq_lengths_key->dtype == DType::kInt64;
    p.ask_s = a.actual_seq_lengths_key->strides[0];
  }
  p.scores_out = values && a.sparse_values->dtype == DType::kFloat32;
  p.return_value = values && !p.scores_out;
  return Status::kSuccess;
}

}  // namespace kvflash::li
