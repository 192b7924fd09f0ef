#include "ops/fa/fa_convert.hpp"

#include <cctype>
#include <cmath>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/strings.hpp"
#include "core/view_check.hpp"

namespace kvflash::fa {
namespace {

using core::str;

Status invalid(const std::string& msg) { return core::fail(Status::kInvalid, kOpName, msg); }
Status refused(const std::string& feature) {
  return invalid(feature + " is not supported by kvflash (docs/api.md, \"FlashAttentionScore\")");
}

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// What kvflash does not implement, by name, before anything else about it.
Status check_refused(const FlashAttentionScoreArgs& a, const std::string& layout) {
  if (std::isnan(a.keep_prob) || a.keep_prob <= 0.0 || a.keep_prob > 1.0)
    return invalid("keep_prob must be in (0, 1], got " + std::to_string(a.keep_prob));
  if (a.keep_prob < 1.0)
    return refused("keep_prob " + std::to_string(a.keep_prob) + " < 1 (dropout)");
  if (a.drop_mask) return refused("dropout_mask (dropout)");
  if (a.real_shift)
    return refused(
        "pse (FlashAttentionScore adds it before the scale, kvflash's prefill kernel "
        "after it)");
  if (a.prefix) return refused("prefix (the prefix sparse modes 5 and 6)");
  if (a.sparse_mode == 5 || a.sparse_mode == 6)
    return refused("sparse_mode " + str(a.sparse_mode) + " (prefix)");
  if (a.sparse_mode == 7 || a.sparse_mode == 8)
    return refused("sparse_mode " + str(a.sparse_mode) + " (varlen outer split)");
  if (layout == "SBH") return refused("input_layout SBH");
  return Status::kSuccess;
}

// KV_N from key's shape in the layout (the query's D from head_num in BSH).
Status kv_heads(const FlashAttentionScoreArgs& a, const std::string& l, int64_t* kvn) {
  const TensorView& q = a.query;
  const TensorView& k = a.key;
  const int want = l == "BSH" || l == "TND" ? 3 : 4;
  if (q.rank != want)
    return invalid("query must be " + l + " (rank " + str(want) + "), got " + q.describe());
  if (k.rank != want)
    return invalid("key must be " + l + " (rank " + str(want) + "), got " + k.describe());
  if (a.head_num < 1) return invalid("head_num must be >= 1, got " + str(a.head_num));
  if (l == "BSH") {
    if (q.shape[2] % a.head_num != 0)
      return invalid("query's H (" + str(q.shape[2]) + ") must be a multiple of head_num (" +
                     str(a.head_num) + ")");
    const int64_t D = q.shape[2] / a.head_num;
    if (D < 1 || k.shape[2] % D != 0)
      return invalid("key's H (" + str(k.shape[2]) +
                     ") must be a multiple of the query's head dim (" + str(D) + ")");
    *kvn = k.shape[2] / D;
  } else {
    *kvn = l == "BNSD" ? k.shape[1] : k.shape[2 - (l == "TND")];
  }
  return Status::kSuccess;
}

// The mask: (S1, S2), (B|1, 1, S1, S2); a per-head (B, N, S1, S2) mask is refused.
Status check_mask(const FlashAttentionScoreArgs& a) {
  if (!a.atten_mask) return Status::kSuccess;
  const TensorView& m = *a.atten_mask;
  if (m.rank == 4 && m.shape[1] > 1)
    return refused("a per-head atten_mask (dim 1 = " + str(m.shape[1]) + " > 1)");
  return Status::kSuccess;
}

// TND's lengths: both given, equally long; the trailing entries that are 0 in both are left out
// (upstream: "支持尾部部分Batch不参与计算"), keeping at least one.
Status tnd_lengths(const FlashAttentionScoreArgs& a, bool tnd, FiaArgs* f) {
  const bool given = a.actual_seq_qlen.has_value() || a.actual_seq_kvlen.has_value();
  if (!tnd) {
    if (given)
      return invalid(
          "actual_seq_qlen and actual_seq_kvlen are for input_layout TND (varlen), "
          "got " +
          a.input_layout);
    return Status::kSuccess;
  }
  if (!a.actual_seq_qlen || !a.actual_seq_kvlen || a.actual_seq_qlen->empty() ||
      a.actual_seq_kvlen->empty())
    return invalid(
        "input_layout TND needs actual_seq_qlen and actual_seq_kvlen (cumulative "
        "lengths per batch)");
  const std::vector<int64_t>& q = *a.actual_seq_qlen;
  const std::vector<int64_t>& kv = *a.actual_seq_kvlen;
  if (q.size() != kv.size())
    return invalid("actual_seq_qlen (" + str(static_cast<int64_t>(q.size())) +
                   " entries) and actual_seq_kvlen (" + str(static_cast<int64_t>(kv.size())) +
                   ") must be equally long");
  size_t b = q.size();
  while (b > 1 && q[b - 1] == 0 && kv[b - 1] == 0) --b;
  f->actual_seq_lengths.emplace(q.begin(), q.begin() + static_cast<std::ptrdiff_t>(b));
  f->actual_seq_lengths_kv.emplace(kv.begin(), kv.begin() + static_cast<std::ptrdiff_t>(b));
  return Status::kSuccess;
}

}  // namespace

Status to_fia(const FlashAttentionScoreArgs& a, FiaArgs* f) {
  if (core::is_null_view(a.query)) return core::fail(Status::kNullPtr, kOpName, "query is null");
  if (core::is_null_view(a.key)) return core::fail(Status::kNullPtr, kOpName, "key is null");
  if (core::is_null_view(a.value)) return core::fail(Status::kNullPtr, kOpName, "value is null");
  if (core::is_null_view(a.attention_out))
    return core::fail(Status::kNullPtr, kOpName, "attention_out is null");
  if (core::is_null_view(a.softmax_max))
    return core::fail(Status::kNullPtr, kOpName, "softmax_max is null");
  if (core::is_null_view(a.softmax_sum))
    return core::fail(Status::kNullPtr, kOpName, "softmax_sum is null");
  const std::string layout = upper(a.input_layout);
  KVFLASH_RETURN_IF_ERROR(check_refused(a, layout));
  if (layout != "BSH" && layout != "BSND" && layout != "BNSD" && layout != "TND")
    return invalid("input_layout must be BSH, SBH, BSND, BNSD or TND, got \"" + a.input_layout +
                   "\"");
  if (a.sparse_mode < 0 || a.sparse_mode > 8)
    return invalid("sparse_mode must be in [0, 8], got " + str(a.sparse_mode));
  if (a.num_threads < 0)
    return invalid("num_threads (" + str(a.num_threads) + ") must be >= 0 (0 = library default)");
  KVFLASH_RETURN_IF_ERROR(check_mask(a));
  FiaArgs out;
  KVFLASH_RETURN_IF_ERROR(kv_heads(a, layout, &out.num_key_value_heads));
  KVFLASH_RETURN_IF_ERROR(tnd_lengths(a, layout == "TND", &out));
  out.prompt = true;  // FlashAttentionScore has no decode branch
  out.fp32_inputs = true;
  out.input_layout = layout;
  out.num_heads = a.head_num;
  out.scale = a.scale;
  out.inner_precise = a.inner_precise;
  // Without a mask upstream ignores sparse_mode and the band: every position is attended.
  if (a.atten_mask) {
    out.sparse_mode = a.sparse_mode;
    out.pre_tokens = a.pre_tokens, out.next_tokens = a.next_tokens;
  }
  out.key.resize(1);
  out.value.resize(1);
  if (a.atten_mask) out.atten_mask.emplace();
  out.softmax_max.emplace();
  out.softmax_sum.emplace();
  rebind_views(a, &out);
  *f = std::move(out);
  return Status::kSuccess;
}

void rebind_views(const FlashAttentionScoreArgs& a, FiaArgs* f) {
  f->query = a.query;
  f->key[0] = a.key;
  f->value[0] = a.value;
  if (a.atten_mask) *f->atten_mask = *a.atten_mask;
  f->attention_out = a.attention_out;
  *f->softmax_max = a.softmax_max;
  *f->softmax_sum = a.softmax_sum;
  f->num_threads = a.num_threads;
}

}  // namespace kvflash::fa
