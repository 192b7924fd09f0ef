// FIA / PFA validation, the host lengths (D6): per batch (B/S layouts: absent -> the capacity, one
// entry broadcast) or cumulative (TND / NTD), the left-padding tensors. Called by fia::validate
// (fia_validate.cpp).
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/checked_math.hpp"
#include "core/error.hpp"
#include "core/view_check.hpp"
#include "ops/fia/fia_validate_parts.hpp"

namespace kvflash::fia {
namespace {

using core::str;

// Per-batch lengths (D6) of a non-cumulative list: absent -> cap, length 1 broadcasts, >= B the
// first B; every value in [0, cap(b)].
template <class Cap>
Status per_batch(const std::optional<std::vector<int64_t>>& l, const char* name, int64_t B, Cap cap,
                 std::vector<int64_t>* out) {
  out->assign(B, 0);
  const bool given = l && !l->empty();
  if (given && l->size() != 1 && static_cast<int64_t>(l->size()) < B)
    return invalid(std::string(name) + " must have 1 or at least B (" + str(B) + ") entries, got " +
                   str(static_cast<int64_t>(l->size())));
  for (int64_t b = 0; b < B; ++b) {
    const int64_t x = given ? (*l)[l->size() == 1 ? 0 : b] : cap(b);
    if (x < 0 || x > cap(b))
      return invalid(std::string(name) + "[" + str(b) + "] (" + str(x) + ") must be in [0, " +
                     str(cap(b)) + "]");
    (*out)[b] = x;
  }
  return Status::kSuccess;
}

// Cumulative lengths (TND, D6): B entries, non-decreasing from >= 0, the last <= limit.
Status cumulative(const std::optional<std::vector<int64_t>>& l, const char* name, int64_t limit,
                  const char* limit_name, std::vector<int64_t>* len, std::vector<int64_t>* first) {
  if (!l || l->empty())
    return invalid(std::string(name) + " is required with a TND / NTD layout (cumulative lengths)");
  int64_t prev = 0;
  len->clear(), first->clear();
  for (size_t b = 0; b < l->size(); ++b) {
    const int64_t x = (*l)[b];
    if (x < prev)
      return invalid(std::string(name) +
                     " must be non-decreasing cumulative lengths from >= 0; "
                     "entry " +
                     str(static_cast<int64_t>(b)) + " (" + str(x) + ") < " + str(prev));
    if (x > limit)
      return invalid(std::string(name) + "[" + str(static_cast<int64_t>(b)) + "] (" + str(x) +
                     ") exceeds " + limit_name + " (" + str(limit) + ")");
    first->push_back(prev), len->push_back(x - prev);
    prev = x;
  }
  return Status::kSuccess;
}

}  // namespace

Status check_lengths(const FiaArgs& a, FiaShape* s) {
  if (s->tnd) {
    KVFLASH_RETURN_IF_ERROR(cumulative(a.actual_seq_lengths, "actual_seq_lengths", s->T, "query T",
                                       &s->q_len, &s->q_first));
    s->B = static_cast<int64_t>(s->q_len.size());
    if (s->paged) {
      s->kv_first.assign(s->B, 0);
      KVFLASH_RETURN_IF_ERROR(per_batch(
          a.actual_seq_lengths_kv, "actual_seq_lengths_kv", s->B,
          [&](int64_t) { return s->capacity; }, &s->kv_len));
    } else {
      KVFLASH_RETURN_IF_ERROR(cumulative(a.actual_seq_lengths_kv, "actual_seq_lengths_kv", s->S2,
                                         "key T", &s->kv_len, &s->kv_first));
      if (static_cast<int64_t>(s->kv_len.size()) != s->B)
        return invalid("actual_seq_lengths_kv must have as many entries as actual_seq_lengths (" +
                       str(s->B) + "), got " + str(s->kv_len.size()));
    }
  } else {
    s->q_first.assign(s->B, 0), s->kv_first.assign(s->B, 0);
    if (s->decode) {
      s->q_len.assign(s->B, 1);  // D4: the query lengths are ignored
    } else {
      KVFLASH_RETURN_IF_ERROR(per_batch(
          a.actual_seq_lengths, "actual_seq_lengths", s->B, [&](int64_t) { return s->S1; },
          &s->q_len));
    }
    KVFLASH_RETURN_IF_ERROR(per_batch(
        a.actual_seq_lengths_kv, "actual_seq_lengths_kv", s->B,
        [&](int64_t b) {
          return s->paged ? s->capacity : s->list ? seq_dim(a.key[b], s->in) : s->S2;
        },
        &s->kv_len));
  }
  // A batch's blocks are its row of the table (more rows than B: the first B are read).
  if (s->paged && a.block_table->shape[0] < s->B)
    return invalid("block_table must have a row per batch (B = " + str(s->B) + "), got " +
                   a.block_table->describe());
  for (int64_t b = 0; b < s->B; ++b) {
    s->max_q = std::max(s->max_q, s->q_len[b]);
    s->max_kv = std::max(s->max_kv, s->kv_len[b]);
  }
  for (const auto* pad : {&a.query_padding_size, &a.kv_padding_size}) {
    if (!*pad) continue;
    const char* name = pad == &a.query_padding_size ? "query_padding_size" : "kv_padding_size";
    if ((*pad)->dtype != DType::kInt64 || (*pad)->numel() != 1)
      return invalid(std::string(name) + " must be int64 with one element, got " +
                     (*pad)->describe());
  }
  return Status::kSuccess;
}

}  // namespace kvflash::fia
