#include "ops/sfa/sfa_bind.hpp"

#include <cstdio>

#include "core/plan_fields.hpp"
#include "core/view_check.hpp"
#include "ops/sfa/sfa_fault.hpp"
#include "ops/sfa/sfa_fields.hpp"
#include "ops/sfa/sfa_validate.hpp"

namespace kvflash::sfa {

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
    d->lengths_query = core::element0(*a.actual_seq_lengths_query);
  }
  if (p.has_lengths_kv) {
    d->lengths_kv = core::element0(*a.actual_seq_lengths_kv);
  }
}

Status resolve_lengths(const core::SfaProblem& p, const core::SfaData& d, core::SfaBatch* batches,
                       core::SfaRow* rows) {
  core::FaultRecord fault;
  if (!core::sfa_resolve_lengths(p, d, batches, &fault)) return sfa_fault_status(p, fault);
  core::sfa_map_rows(p, batches, rows);
  return Status::kSuccess;
}

void describe(const core::SfaProblem& p, char* buf, size_t size) {
  std::snprintf(buf, size, "B=%lld N=%lld K=%lld rows=%lld %s%s", static_cast<long long>(p.batch),
                static_cast<long long>(p.num_heads), static_cast<long long>(p.sparse_size),
                static_cast<long long>(p.num_rows), dtype_name(p.dtype), p.paged ? " paged" : "");
}

}  // namespace kvflash::sfa
