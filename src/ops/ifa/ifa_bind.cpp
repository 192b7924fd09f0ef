#include "ops/ifa/ifa_bind.hpp"

#include "core/plan_fields.hpp"
#include "core/view_check.hpp"
#include "ops/ifa/ifa_error.hpp"
#include "ops/ifa/ifa_fields.hpp"

namespace kvflash::ifa {
namespace {

const void* base(const TensorView& t) { return core::element0(t); }
const void* base(const std::optional<TensorView>& t, bool present) {
  return present ? base(*t) : nullptr;
}

// Batch b's base inside t: `offset` elements past element 0 (offset b * batch stride, bounded by
// the view check of a non-empty t).
const void* batch_base(const TensorView& t, int64_t offset) {
  const void* b0 = base(t);
  if (b0 == nullptr) return nullptr;
  return static_cast<const char*>(b0) + offset * static_cast<int64_t>(dtype_size(t.dtype));
}

}  // namespace

IfaArgs strip_data(const IfaArgs& args, const core::IfaProblem& problem) {
  IfaArgs m = core::strip_fields(kFields, args);
  // An inactive kv_padding_size (no lengths, a list or a paged cache; docs/semantics.md §2.7) is ignored by
  // create, unvalidated: runs ignore it too, whatever they pass.
  if (!problem.left_padding) m.kv_padding_size.reset();
  return m;
}

Status check_matches_plan(const IfaArgs& p, const IfaArgs& a) {
  return core::match_fields(kIfaOp, kFields, p, a);
}

void bind_data(const core::IfaProblem& p, const IfaArgs& a, const void** k_seq, const void** v_seq,
               core::IfaData* d) {
  *d = core::IfaData{};
  d->q = base(a.query);
  d->out = core::element0(a.attention_out);
  d->lse = p.has_lse ? static_cast<float*>(core::element0(*a.softmax_lse)) : nullptr;
  if (p.k.paged) {
    d->k_cache = base(a.key[0]);
    d->v_cache = base(a.value[0]);
    d->block_table = static_cast<const int32_t*>(base(a.block_table, true));
  } else {
    for (int64_t b = 0; b < p.batch; ++b) {
      const size_t i = p.k.list ? static_cast<size_t>(b) : 0;
      k_seq[b] = batch_base(a.key[i], p.k.list ? 0 : b * p.k.seqs[b].s_batch);
      v_seq[b] = batch_base(a.value[i], p.v.list ? 0 : b * p.v.seqs[b].s_batch);
    }
    d->k_seq = k_seq;
    d->v_seq = v_seq;
  }
  d->mask = base(a.atten_mask, p.mask.present);
  d->pse = base(a.pse_shift, p.pse.present);
  d->antiquant_scale = base(a.antiquant_scale, p.antiquant_scale.present);
  d->antiquant_offset = base(a.antiquant_offset, p.antiquant_offset.present);
  d->quant_scale2 = base(a.quant_scale2, p.quant_scale2.present);
  d->quant_offset2 = base(a.quant_offset2, p.quant_offset2.present);
  d->kv_padding_size = static_cast<const int64_t*>(base(a.kv_padding_size, p.left_padding));
}

}  // namespace kvflash::ifa
