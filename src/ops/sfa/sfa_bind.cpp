#include "ops/sfa/sfa_bind.hpp"

#include <string>

#include "core/error.hpp"
#include "core/view_check.hpp"
#include "ops/sfa/sfa_validate.hpp"

namespace kvflash::sfa {
namespace {

using core::str;

Status invalid(const std::string& msg) { return core::fail(Status::kInvalid, kOpName, msg); }

void clear(std::optional<TensorView>& v) {
  if (v) v->data = nullptr;
}

template <typename View>
Status match(const View& plan, const View& run, const char* name) {
  return core::match_view(kOpName, plan, run, name);
}

Status match_attr(bool same, const char* name) { return core::match_attr(kOpName, same, name); }

// One actual-length tensor: per-batch counts in [0, limit] (BSND, PA_BSND), or prefix sums (TND),
// non-decreasing from >= 0 up to at most limit. count(b) receives batch b's count, first(b) its
// first row (prefix sums only).
template <typename Count, typename First>
Status read_lengths(const int32_t* data, int64_t s0, bool prefix, const char* name, int64_t batch,
                    int64_t limit, const char* limit_name, Count count, First first) {
  int64_t prev = 0;
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t x = data[b * s0];
    if (!prefix) {
      if (x < 0 || x > limit) {
        return invalid(std::string(name) + "[" + str(b) + "] (" + str(x) + ") must be in [0, " +
                       limit_name + " = " + str(limit) + "]");
      }
      count(b) = x;
      continue;
    }
    if (x < prev) {
      return invalid(std::string(name) + " must be non-decreasing prefix sums starting at >= 0; " +
                     "entry " + str(b) + " (" + str(x) + ") < " + str(prev));
    }
    if (x > limit) {
      return invalid(std::string(name) + "[" + str(b) + "] (" + str(x) + ") exceeds " + limit_name +
                     " (" + str(limit) + ")");
    }
    first(b) = prev;
    count(b) = x - prev;
    prev = x;
  }
  return Status::kSuccess;
}

}  // namespace

SfaArgs strip_data(const SfaArgs& args, const core::SfaProblem& /*problem*/) {
  SfaArgs m = args;
  for (TensorView* t :
       {&m.query, &m.key, &m.sparse_indices, &m.query_rope, &m.key_rope, &m.attention_out}) {
    t->data = nullptr;
  }
  for (auto* v : {&m.value, &m.block_table, &m.actual_seq_lengths_query, &m.actual_seq_lengths_kv,
                  &m.sinks, &m.softmax_max, &m.softmax_sum}) {
    clear(*v);
  }
  return m;
}

Status check_matches_plan(const SfaArgs& p, const SfaArgs& a) {
  KVFLASH_RETURN_IF_ERROR(match(p.query, a.query, "query"));
  KVFLASH_RETURN_IF_ERROR(match(p.key, a.key, "key"));
  KVFLASH_RETURN_IF_ERROR(match(p.value, a.value, "value"));
  KVFLASH_RETURN_IF_ERROR(match(p.sparse_indices, a.sparse_indices, "sparse_indices"));
  KVFLASH_RETURN_IF_ERROR(match(p.block_table, a.block_table, "block_table"));
  KVFLASH_RETURN_IF_ERROR(
      match(p.actual_seq_lengths_query, a.actual_seq_lengths_query, "actual_seq_lengths_query"));
  KVFLASH_RETURN_IF_ERROR(
      match(p.actual_seq_lengths_kv, a.actual_seq_lengths_kv, "actual_seq_lengths_kv"));
  KVFLASH_RETURN_IF_ERROR(match(p.query_rope, a.query_rope, "query_rope"));
  KVFLASH_RETURN_IF_ERROR(match(p.key_rope, a.key_rope, "key_rope"));
  KVFLASH_RETURN_IF_ERROR(match(p.sinks, a.sinks, "sinks"));
  KVFLASH_RETURN_IF_ERROR(match(p.attention_out, a.attention_out, "attention_out"));
  KVFLASH_RETURN_IF_ERROR(
      match_attr(p.return_softmax_lse == a.return_softmax_lse, "return_softmax_lse"));
  if (p.return_softmax_lse) {
    KVFLASH_RETURN_IF_ERROR(match(p.softmax_max, a.softmax_max, "softmax_max"));
    KVFLASH_RETURN_IF_ERROR(match(p.softmax_sum, a.softmax_sum, "softmax_sum"));
  }
  KVFLASH_RETURN_IF_ERROR(
      match_attr(core::same_scale(p.scale_value, a.scale_value), "scale_value"));
  KVFLASH_RETURN_IF_ERROR(
      match_attr(p.sparse_block_size == a.sparse_block_size, "sparse_block_size"));
  KVFLASH_RETURN_IF_ERROR(match_attr(p.layout_query == a.layout_query, "layout_query"));
  KVFLASH_RETURN_IF_ERROR(match_attr(p.layout_kv == a.layout_kv, "layout_kv"));
  KVFLASH_RETURN_IF_ERROR(match_attr(p.sparse_mode == a.sparse_mode, "sparse_mode"));
  KVFLASH_RETURN_IF_ERROR(match_attr(p.pre_tokens == a.pre_tokens, "pre_tokens"));
  KVFLASH_RETURN_IF_ERROR(match_attr(p.next_tokens == a.next_tokens, "next_tokens"));
  KVFLASH_RETURN_IF_ERROR(match_attr(p.attention_mode == a.attention_mode, "attention_mode"));
  if (a.num_threads < 0) {
    return invalid("num_threads (" + str(a.num_threads) + ") must be >= 0 (0 = library default)");
  }
  return Status::kSuccess;
}

void bind_data(const core::SfaProblem& p, const SfaArgs& a, core::SfaData* d) {
  *d = core::SfaData{};
  const TensorView& value = a.value ? *a.value : a.key;
  d->q = core::element0(a.query);
  d->q_rope = core::element0(a.query_rope);
  d->indices = static_cast<const int32_t*>(core::element0(a.sparse_indices));
  d->out = core::element0(a.attention_out);
  if (p.softmax_max.present) {
    d->softmax_max = static_cast<float*>(core::element0(*a.softmax_max));
    d->softmax_sum = static_cast<float*>(core::element0(*a.softmax_sum));
  }
  d->k = core::element0(a.key);
  d->k_rope = core::element0(a.key_rope);
  d->v = core::element0(value);
  // Same memory, same layout (value has key's shape): gather each row once.
  d->v_is_k = value.data == a.key.data && core::same_layout(value, a.key);
  if (p.paged) d->block_table = static_cast<const int32_t*>(core::element0(*a.block_table));
  if (p.has_sinks) d->sinks = static_cast<const float*>(core::element0(*a.sinks));
  if (p.has_lengths_query) {
    d->lengths_query = static_cast<const int32_t*>(core::element0(*a.actual_seq_lengths_query));
  }
  if (p.has_lengths_kv) {
    d->lengths_kv = static_cast<const int32_t*>(core::element0(*a.actual_seq_lengths_kv));
  }
}

Status resolve_lengths(const core::SfaProblem& p, const core::SfaData& d, core::SfaBatch* batches,
                       core::SfaRow* rows) {
  const int64_t n = p.batch;
  for (int64_t b = 0; b < n; ++b) batches[b] = {p.s1, p.kv_rows, 0};
  // BSND query rows of batch b start at b * S1; TND rows at the prefix sum before b.
  int64_t unused = 0;
  if (p.has_lengths_query) {
    KVFLASH_RETURN_IF_ERROR(read_lengths(
        d.lengths_query, p.lengths_query_s0, p.query_tnd, "actual_seq_lengths_query", n,
        p.query_tnd ? p.num_rows : p.s1, p.query_tnd ? "query T1" : "query S1",
        [&](int64_t b) -> int64_t& { return batches[b].lq; },
        [&](int64_t) -> int64_t& { return unused; }));
  }
  if (p.has_lengths_kv) {
    const char* limit_name = p.kv_tnd  ? "key T2"
                             : p.paged ? "block_table columns * block_size"
                                       : "key S2";
    KVFLASH_RETURN_IF_ERROR(read_lengths(
        d.lengths_kv, p.lengths_kv_s0, p.kv_tnd, "actual_seq_lengths_kv", n,
        p.paged ? p.kv_capacity : p.kv_rows, limit_name,
        [&](int64_t b) -> int64_t& { return batches[b].lkv; },
        [&](int64_t b) -> int64_t& { return batches[b].kv_row0; }));
  }
  for (int64_t r = 0; r < p.num_rows; ++r) rows[r] = core::SfaRow{};
  int64_t first = 0;
  for (int64_t b = 0; b < n; ++b) {
    if (!p.query_tnd) first = b * p.s1;
    for (int64_t i = 0; i < batches[b].lq; ++i) rows[first + i] = {static_cast<int32_t>(b), i};
    if (p.query_tnd) first += batches[b].lq;
  }
  return Status::kSuccess;
}

}  // namespace kvflash::sfa
