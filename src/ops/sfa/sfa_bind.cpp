#include "ops/sfa/sfa_bind.hpp"

#include <cstdio>
#include <string>

#include "core/error.hpp"
#include "core/plan_fields.hpp"
#include "core/view_check.hpp"
#include "ops/sfa/sfa_fields.hpp"
#include "ops/sfa/sfa_validate.hpp"

namespace kvflash::sfa {
namespace {

using core::str;

Status invalid(const std::string& msg) { return core::fail(Status::kInvalid, kOpName, msg); }

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
  SfaArgs m = core::strip_fields(kFields, args);
  // Without return_softmax_lse the softmax outputs are not even looked at: runs ignore them too.
  if (!m.return_softmax_lse) {
    m.softmax_max.reset();
    m.softmax_sum.reset();
  }
  return m;
}

Status check_matches_plan(const SfaArgs& p, const SfaArgs& a) {
  return core::match_fields(kOpName, kFields, p, a);
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
        core::sfa_query_length_limit(p), p.query_tnd ? "query T1" : "query S1",
        [&](int64_t b) -> int64_t& { return batches[b].lq; },
        [&](int64_t) -> int64_t& { return unused; }));
  }
  if (p.has_lengths_kv) {
    const char* limit_name = p.kv_tnd  ? "key T2"
                             : p.paged ? "block_table columns * block_size"
                                       : "key S2";
    KVFLASH_RETURN_IF_ERROR(read_lengths(
        d.lengths_kv, p.lengths_kv_s0, p.kv_tnd, "actual_seq_lengths_kv", n,
        core::sfa_kv_length_limit(p), limit_name,
        [&](int64_t b) -> int64_t& { return batches[b].lkv; },
        [&](int64_t b) -> int64_t& { return batches[b].kv_row0; }));
  }
  core::sfa_map_rows(p, batches, rows);
  return Status::kSuccess;
}

void describe(const core::SfaProblem& p, char* buf, size_t size) {
  std::snprintf(buf, size, "B=%lld N=%lld K=%lld rows=%lld %s%s", static_cast<long long>(p.batch),
                static_cast<long long>(p.num_heads), static_cast<long long>(p.sparse_size),
                static_cast<long long>(p.num_rows), dtype_name(p.dtype), p.paged ? " paged" : "");
}

}  // namespace kvflash::sfa
