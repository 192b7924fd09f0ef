#include "ops/sparse/sparse_rules.hpp"

#include <limits>
#include <span>

#include "core/error.hpp"
#include "core/length_tensor.hpp"
#include "core/view_check.hpp"

namespace kvflash::sparse {
namespace {

using core::str;

Status invalid(const char* op, const std::string& msg) {
  return core::fail(Status::kInvalid, op, msg);
}

}  // namespace

Status expect_shape(const char* op, const TensorView& v, const char* name,
                    std::initializer_list<int64_t> dims) {
  bool same = v.rank == static_cast<int>(dims.size());
  int i = 0;
  for (int64_t d : dims) same = same && v.shape[i++] == d;
  if (same) return Status::kSuccess;
  return invalid(op, std::string(name) + " shape must be " +
                         core::dims_str(std::span<const int64_t>(dims.begin(), dims.size())) +
                         ", got " + v.describe());
}

Status expect_dtype(const char* op, const TensorView& v, const char* name, DType want) {
  if (v.dtype == want) return Status::kSuccess;
  return invalid(op, std::string(name) + " dtype must be " + dtype_name(want) + ", got " +
                         dtype_name(v.dtype));
}

Status expect_lengths(const char* op, const TensorView& v, const char* name, int64_t batch) {
  if (!core::is_length_dtype(v.dtype))
    return invalid(op, std::string(name) + " dtype must be " + core::kLengthDtypes + ", got " +
                           dtype_name(v.dtype));
  if (v.rank != 1 || v.shape[0] != batch)
    return invalid(op, std::string(name) + " must be 1-D with B (" + str(batch) +
                           ") entries, got " + v.describe());
  return Status::kSuccess;
}

Status layouts(const char* op, const std::string& lq, const std::string& lk, const char* key_arg,
               Layouts* out) {
  if (lq != "BSND" && lq != "TND")
    return invalid(op, "layout_query (\"" + lq + "\") must be \"BSND\" or \"TND\"");
  const std::string k = key_arg;
  if (lk != "BSND" && lk != "TND" && lk != "PA_BSND")
    return invalid(op, k + " (\"" + lk + "\") must be \"BSND\", \"TND\" or \"PA_BSND\"");
  if (lk != "PA_BSND" && lk != lq)
    return invalid(op, k + " (\"" + lk + "\") must equal layout_query (\"" + lq +
                           "\") unless it is \"PA_BSND\"");
  out->q_tnd = lq == "TND";
  out->k_tnd = lk == "TND";
  out->paged = lk == "PA_BSND";
  return Status::kSuccess;
}

Status query_rows(const char* op, const TensorView& q, const std::optional<TensorView>& asq,
                  bool q_tnd, const char* t_name, QueryRows* out) {
  *out = QueryRows{};
  if (q_tnd) {
    out->rows = q.shape[0];
    if (out->rows <= 0)
      return invalid(op, std::string("query ") + t_name + " (" + str(out->rows) + ") must be > 0");
    if (!asq) return invalid(op, "actual_seq_lengths_query is required with layout_query TND");
    out->batch = asq->rank == 1 ? asq->shape[0] : 0;
    if (out->batch <= 0)
      return invalid(op, "actual_seq_lengths_query must be 1-D and non-empty with TND, got " +
                             asq->describe());
    return Status::kSuccess;
  }
  out->batch = q.shape[0];
  out->s1 = q.shape[1];
  if (out->batch <= 0) return invalid(op, "query batch B (" + str(out->batch) + ") must be > 0");
  if (out->s1 <= 0) return invalid(op, "query S1 (" + str(out->s1) + ") must be > 0");
  out->rows = out->batch * out->s1;
  return Status::kSuccess;
}

Status paged_key(const char* op, const TensorView& key, const std::optional<TensorView>& block_table,
                 bool lengths_given, const char* key_arg, const char* lengths_arg, int64_t batch) {
  if (!block_table)
    return invalid(op, std::string("block_table is required with ") + key_arg + " PA_BSND");
  if (!lengths_given)
    return invalid(op, std::string(lengths_arg) + " is required with " + key_arg + " PA_BSND");
  const TensorView& bt = *block_table;
  if (bt.rank != 2 || bt.shape[0] != batch || bt.shape[1] <= 0)
    return invalid(op, "block_table must be (B = " + str(batch) + ", M > 0), got " + bt.describe());
  if (key.shape[0] <= 0)
    return invalid(op, "key block_num (dim 0 = " + str(key.shape[0]) + ") must be > 0");
  constexpr int64_t kMaxBlockSize = 1024, kBlockSizeAlign = 16;
  const int64_t bs = key.shape[1];
  if (bs <= 0 || bs > kMaxBlockSize || bs % kBlockSizeAlign != 0)
    return invalid(op, "key block_size (dim 1 = " + str(bs) +
                           ") must be a multiple of 16 in [16, 1024]");
  return Status::kSuccess;
}

Status attributes(const char* op, int64_t sparse_mode, int64_t pre_tokens, int64_t next_tokens) {
  if (sparse_mode != 0 && sparse_mode != 3)
    return invalid(op, "sparse_mode (" + str(sparse_mode) + ") must be 0 or 3");
  constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
  if (pre_tokens != kInt64Max)
    return invalid(op, "pre_tokens (" + str(pre_tokens) + ") must be 9223372036854775807");
  if (next_tokens != kInt64Max)
    return invalid(op, "next_tokens (" + str(next_tokens) + ") must be 9223372036854775807");
  return Status::kSuccess;
}

}  // namespace kvflash::sparse
