#include "ops/ifa/ifa_bind.hpp"

#include <string>

#include "core/view_check.hpp"
#include "ops/ifa/ifa_error.hpp"

namespace kvflash::ifa {
namespace {

using core::str;

void clear(std::optional<TensorView>& v) {
  if (v) v->data = nullptr;
}

Status match(const TensorView& plan, const TensorView& run, const char* name) {
  return core::match_view(kIfaOp, plan, run, name);
}
Status match(const std::optional<TensorView>& plan, const std::optional<TensorView>& run,
             const char* name) {
  return core::match_view(kIfaOp, plan, run, name);
}
Status match_attr(bool same, const char* name) { return core::match_attr(kIfaOp, same, name); }

Status match_list(const std::vector<TensorView>& plan, const std::vector<TensorView>& run,
                  const char* name) {
  if (plan.size() != run.size()) {
    return invalid(std::string("run: ") + name + " has " + str(static_cast<int64_t>(run.size())) +
                   " tensors but the plan has " + str(static_cast<int64_t>(plan.size())));
  }
  for (size_t i = 0; i < plan.size(); ++i) {
    KVFLASH_RETURN_IF_ERROR(
        core::match_view(kIfaOp, plan[i], run[i], name, static_cast<int64_t>(i)));
  }
  return Status::kSuccess;
}

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
  IfaArgs m = args;
  // An inactive kv_padding_size (no lengths, a list or a paged cache; docs/semantics.md §2.7) is
  // ignored by create, unvalidated: runs ignore it too, whatever they pass.
  if (!problem.left_padding) m.kv_padding_size.reset();
  m.query.data = nullptr;
  m.attention_out.data = nullptr;
  for (TensorView& t : m.key) t.data = nullptr;
  for (TensorView& t : m.value) t.data = nullptr;
  for (auto* v : {&m.pse_shift, &m.atten_mask, &m.dequant_scale1, &m.quant_scale1,
                  &m.dequant_scale2, &m.quant_scale2, &m.quant_offset2, &m.antiquant_scale,
                  &m.antiquant_offset, &m.block_table, &m.kv_padding_size, &m.softmax_lse}) {
    clear(*v);
  }
  return m;
}

Status check_matches_plan(const IfaArgs& p, const IfaArgs& a) {
  KVFLASH_RETURN_IF_ERROR(match(p.query, a.query, "query"));
  KVFLASH_RETURN_IF_ERROR(match_list(p.key, a.key, "key"));
  KVFLASH_RETURN_IF_ERROR(match_list(p.value, a.value, "value"));
  KVFLASH_RETURN_IF_ERROR(match(p.attention_out, a.attention_out, "attention_out"));
  KVFLASH_RETURN_IF_ERROR(match(p.pse_shift, a.pse_shift, "pse_shift"));
  KVFLASH_RETURN_IF_ERROR(match(p.atten_mask, a.atten_mask, "atten_mask"));
  KVFLASH_RETURN_IF_ERROR(match(p.dequant_scale1, a.dequant_scale1, "dequant_scale1"));
  KVFLASH_RETURN_IF_ERROR(match(p.quant_scale1, a.quant_scale1, "quant_scale1"));
  KVFLASH_RETURN_IF_ERROR(match(p.dequant_scale2, a.dequant_scale2, "dequant_scale2"));
  KVFLASH_RETURN_IF_ERROR(match(p.quant_scale2, a.quant_scale2, "quant_scale2"));
  KVFLASH_RETURN_IF_ERROR(match(p.quant_offset2, a.quant_offset2, "quant_offset2"));
  KVFLASH_RETURN_IF_ERROR(match(p.antiquant_scale, a.antiquant_scale, "antiquant_scale"));
  KVFLASH_RETURN_IF_ERROR(match(p.antiquant_offset, a.antiquant_offset, "antiquant_offset"));
  KVFLASH_RETURN_IF_ERROR(match(p.block_table, a.block_table, "block_table"));
  if (p.kv_padding_size) {  // absent from the plan's metadata when the plan ignores it
    KVFLASH_RETURN_IF_ERROR(match(p.kv_padding_size, a.kv_padding_size, "kv_padding_size"));
  }
  KVFLASH_RETURN_IF_ERROR(match(p.softmax_lse, a.softmax_lse, "softmax_lse"));
  KVFLASH_RETURN_IF_ERROR(
      match_attr(p.actual_seq_lengths == a.actual_seq_lengths, "actual_seq_lengths"));
  KVFLASH_RETURN_IF_ERROR(match_attr(p.num_heads == a.num_heads, "num_heads"));
  // Compared as the kernels use it: (float)scale_value.
  KVFLASH_RETURN_IF_ERROR(
      match_attr(core::same_scale(p.scale_value, a.scale_value), "scale_value"));
  KVFLASH_RETURN_IF_ERROR(match_attr(p.input_layout == a.input_layout, "input_layout"));
  KVFLASH_RETURN_IF_ERROR(
      match_attr(p.num_key_value_heads == a.num_key_value_heads, "num_key_value_heads"));
  KVFLASH_RETURN_IF_ERROR(match_attr(p.block_size == a.block_size, "block_size"));
  KVFLASH_RETURN_IF_ERROR(match_attr(p.inner_precise == a.inner_precise, "inner_precise"));
  KVFLASH_RETURN_IF_ERROR(
      match_attr(p.zero_fully_masked_rows == a.zero_fully_masked_rows, "zero_fully_masked_rows"));
  if (a.num_threads < 0) {
    return invalid("num_threads (" + str(a.num_threads) + ") must be >= 0 (0 = library default)");
  }
  return Status::kSuccess;
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
