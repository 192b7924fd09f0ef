// FIA / PFA validation: the order of the checks (views and devices, what decision D1 refuses,
// the attributes, query, key / value, the outputs, the host lengths (D6), rope and shared prefix,
// the optional parts, the size bound), each argument group in a file of its own
// (fia_validate_attrs.cpp, fia_validate_tensors.cpp, fia_validate_lengths.cpp,
// fia_validate_extras.cpp), then the problem (fia_validate_problem.cpp) and the decode front end
// (fia_validate_decode.cpp). The rules and the messages are listed in docs/conventions.md
// ("FusedInferAttentionScore").
#include "ops/fia/fia_validate.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/view_check.hpp"
#include "ops/fia/fia_fields.hpp"
#include "ops/fia/fia_validate_parts.hpp"

namespace kvflash::fia {

using core::str;

Status invalid(const std::string& msg) { return core::fail(Status::kInvalid, kOpName, msg); }
Status refused(const std::string& feature) {
  return invalid(feature + " is not supported by kvflash (docs/fia-pfa-indexer.md, D1)");
}

FiaStrides layout_strides(const TensorView& t, const std::string& l, int64_t D) {
  if (l == "BSH") return {t.strides[0], t.strides[1], D * t.strides[2]};
  if (l == "BSND") return {t.strides[0], t.strides[1], t.strides[2]};
  if (l == "BNSD") return {t.strides[0], t.strides[2], t.strides[1]};
  if (l == "NBSD") return {t.strides[1], t.strides[2], t.strides[0]};
  if (l == "TND") return {0, t.strides[0], t.strides[1]};
  return {0, t.strides[1], t.strides[0]};  // NTD
}

// d (the last dim) must be contiguous: the kernel reads rows of D elements.
Status check_rows(const TensorView& v, const char* name) {
  if (v.rank > 0 && v.shape[v.rank - 1] > 1 && v.strides[v.rank - 1] != 1)
    return invalid(std::string(name) + "'s last dim must have stride 1, got " +
                   str(v.strides[v.rank - 1]));
  return Status::kSuccess;
}

// Dims of a tensor in the query layout `l` with `n` heads of `d` (batch b, sequence s).
Status expect_layout(const TensorView& v, const char* name, const std::string& l, int64_t b,
                     int64_t s, int64_t n, int64_t d) {
  std::vector<int64_t> want;
  if (l == "BSH") want = {b, s, n * d};
  if (l == "BSND") want = {b, s, n, d};
  if (l == "BNSD") want = {b, n, s, d};
  if (l == "TND") want = {s, n, d};
  if (l == "NTD") want = {n, s, d};
  bool ok = v.rank == static_cast<int>(want.size());
  for (size_t i = 0; ok && i < want.size(); ++i) ok = want[i] < 0 || v.shape[i] == want[i];
  if (ok) return check_rows(v, name);
  std::string w = "[";
  for (size_t i = 0; i < want.size(); ++i)
    w += (i ? "," : "") + (want[i] < 0 ? std::string("*") : str(want[i]));
  return invalid(std::string(name) + " must be " + l + " " + w + "], got " + v.describe());
}

// S of a tensor in layout l (T for TND / NTD).
int64_t seq_dim(const TensorView& v, const std::string& l) {
  if (l == "BNSD" || l == "NTD") return v.shape[l == "NTD" ? 1 : 2];
  if (l == "TND") return v.shape[0];
  return v.shape[1];
}

Status validate(const FiaArgs& user_args, core::FiaProblem* pr) {
  const FiaArgs a = core::with_canonical_strides(kFields, user_args);
  if (a.query.data == nullptr && a.query.numel() != 0)
    return core::fail(Status::kNullPtr, kOpName, "query is null");
  if (a.attention_out.data == nullptr && a.attention_out.numel() != 0)
    return core::fail(Status::kNullPtr, kOpName, "attention_out is null");
  KVFLASH_RETURN_IF_ERROR(core::for_each_view(kFields, a, [&](const TensorView& v, const char* n) {
    if (std::string_view(n) == "softmax_lse" && !a.softmax_lse_flag) return Status::kSuccess;
    int64_t numel = 0;
    if (const Status st = core::check_view(kOpName, v, n, &numel); st != Status::kSuccess)
      return st;
    if (v.device != a.query.device)
      return invalid(std::string(n) + " is on " + device_name(v.device) + " but query is on " +
                     device_name(a.query.device) +
                     ": every tensor of a call must be on one device");
    return Status::kSuccess;
  }));
  KVFLASH_RETURN_IF_ERROR(check_refused(a));
  FiaShape s;
  KVFLASH_RETURN_IF_ERROR(check_attributes(a, &s));
  KVFLASH_RETURN_IF_ERROR(check_query(a, &s));
  if (s.decode && a.inner_precise > 1)
    return invalid("inner_precise must be 0 or 1 with a query length of 1, got " +
                   str(a.inner_precise));
  KVFLASH_RETURN_IF_ERROR(check_kv(a, &s));
  // The outputs first: being contiguous, they bound B x S1 (or T) before anything per batch or
  // per row is sized.
  KVFLASH_RETURN_IF_ERROR(check_outputs(a, s));
  KVFLASH_RETURN_IF_ERROR(check_lengths(a, &s));
  KVFLASH_RETURN_IF_ERROR(check_rope_prefix(a, &s));
  s.columns = s.P + (s.paged ? s.capacity : s.tnd ? s.max_kv : s.S2);
  if (s.list)
    for (const TensorView& t : a.key) s.columns = std::max(s.columns, s.P + seq_dim(t, s.in));
  *pr = core::FiaProblem{};
  int64_t mask_batch = 0, pse_batch = 0;
  KVFLASH_RETURN_IF_ERROR(check_mask(a, s, pr, &mask_batch));
  KVFLASH_RETURN_IF_ERROR(check_pse(a, s, pr, &pse_batch));
  KVFLASH_RETURN_IF_ERROR(check_antiquant(a, s, pr));
  KVFLASH_RETURN_IF_ERROR(check_post_quant(a, s, pr));
  KVFLASH_RETURN_IF_ERROR(check_sink(a, s, pr));
  KVFLASH_RETURN_IF_ERROR(check_size(s));
  fill_problem(a, s, mask_batch, pse_batch, pr);
  // D4's decode branch, and TND decode steps (one row per request), on the decode kernels.
  return plan_decode(a, s, pr);
}

}  // namespace kvflash::fia
