#include "ops/ifa/ifa_bind.hpp"

#include <cstddef>
#include <cstdio>

#include "core/plan_fields.hpp"
#include "core/view_check.hpp"
#include "ops/ifa/ifa_error.hpp"
#include "ops/ifa/ifa_fields.hpp"

namespace kvflash::ifa {
namespace {

const void* base(const TensorView& t) { return core::element0(t); }
const void* base(const TensorView* t, bool used) {
  return used && t != nullptr ? base(*t) : nullptr;
}
const void* base(const DecodeTensors::Param& q, bool used) {
  const void* b = base(q.t, used);
  if (b == nullptr) return nullptr;
  return static_cast<const std::byte*>(b) + q.at * static_cast<int64_t>(dtype_size(q.t->dtype));
}
const TensorView* opt(const std::optional<TensorView>& t) { return t ? &*t : nullptr; }

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

void bind_decode(const core::IfaProblem& p, const DecodeTensors& t, core::IfaData* d) {
  *d = core::IfaData{};
  d->q = base(*t.query);
  d->out = core::element0(*t.out);
  d->lse = p.has_lse ? static_cast<float*>(core::element0(*t.lse)) : nullptr;
  d->k_cache = base((*t.key)[0]);
  d->v_cache = base((*t.value)[0]);
  if (p.k.list) d->k_list = t.key->data();
  if (p.v.list) d->v_list = t.value->data();
  d->block_table = static_cast<const int32_t*>(base(t.block_table, p.k.paged));
  d->mask = base(t.mask, p.mask.present);
  d->pse = base(t.pse, p.pse.present);
  d->antiquant_scale = base(t.antiquant_scale, p.antiquant_scale.present);
  d->antiquant_offset = base(t.antiquant_offset, p.antiquant_offset.present);
  d->antiquant_scale_v = base(t.antiquant_scale_v, p.split_antiquant);
  d->antiquant_offset_v = base(t.antiquant_offset_v, p.antiquant_offset_v.present);
  d->quant_scale2 = base(t.quant_scale2, p.quant_scale2.present);
  d->quant_offset2 = base(t.quant_offset2, p.quant_offset2.present);
  d->sink = base(t.sink, p.has_sink);
  d->kv_padding_size = static_cast<const int64_t*>(base(t.kv_padding_size, p.left_padding));
}

void bind_data(const core::IfaProblem& p, const IfaArgs& a, core::IfaData* d) {
  DecodeTensors t;
  t.query = &a.query, t.out = &a.attention_out, t.lse = opt(a.softmax_lse);
  t.key = &a.key, t.value = &a.value;
  t.block_table = opt(a.block_table), t.mask = opt(a.atten_mask), t.pse = opt(a.pse_shift);
  t.antiquant_scale.t = opt(a.antiquant_scale), t.antiquant_offset.t = opt(a.antiquant_offset);
  t.quant_scale2 = opt(a.quant_scale2), t.quant_offset2 = opt(a.quant_offset2);
  t.kv_padding_size = opt(a.kv_padding_size);
  bind_decode(p, t, d);
}

const void* kv_batch_base(const core::KvCacheView& kv, const core::KvCacheView::Seq& seq,
                          const void* base0, const TensorView* list, int64_t b) {
  if (kv.list) return base(list[b]);
  if (base0 == nullptr) return nullptr;
  return static_cast<const char*>(base0) +
         b * seq.s_batch * static_cast<int64_t>(dtype_size(kv.dtype));
}

void bind_batch_bases(const core::IfaProblem& p, const void** k_seq, const void** v_seq,
                      core::IfaData* d) {
  for (int64_t b = 0; b < p.batch; ++b) {
    k_seq[b] = kv_batch_base(p.k, p.k_seqs[b], d->k_cache, d->k_list, b);
    v_seq[b] = kv_batch_base(p.v, p.v_seqs[b], d->v_cache, d->v_list, b);
  }
  d->k_seq = k_seq;
  d->v_seq = v_seq;
}

void describe(const core::IfaProblem& p, char* buf, size_t size) {
  std::snprintf(buf, size, "B=%lld N=%lld KV_N=%lld D=%lld q=%s kv=%s out=%s%s%s",
                static_cast<long long>(p.batch), static_cast<long long>(p.num_heads),
                static_cast<long long>(p.num_kv_heads), static_cast<long long>(p.head_dim),
                dtype_name(p.q_dtype), dtype_name(p.k.dtype), dtype_name(p.out_dtype),
                p.k.paged ? " paged" : "", p.k.list ? " list" : "");
}

}  // namespace kvflash::ifa
