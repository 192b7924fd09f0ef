#include "ops/fia/fia_bind.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdio>

#include "core/plan_fields.hpp"
#include "core/view_check.hpp"
#include "ops/fia/fia_fields.hpp"
#include "ops/fia/fia_validate.hpp"
#include "ops/ifa/ifa_bind.hpp"
#include "ops/ifa/ifa_problem.hpp"

namespace kvflash::fia {
namespace {

const TensorView* opt(const std::optional<TensorView>& t) { return t ? &*t : nullptr; }

// The decode requests' tensors (fia_validate_decode.cpp) through the decode description's binder:
// FIA's int8 parameters (split win) at their first element.
void bind_decode_requests(const core::FiaProblem& p, const FiaArgs& a, core::IfaData* d) {
  const core::FiaParams& pp = p.params;
  ifa::DecodeTensors t;
  t.query = &a.query, t.out = &a.attention_out, t.lse = opt(a.softmax_lse);
  t.key = &a.key, t.value = &a.value;
  t.block_table = opt(a.block_table), t.mask = opt(a.atten_mask), t.pse = opt(a.pse_shift);
  const bool split = a.key_antiquant_scale.has_value();
  t.antiquant_scale = {opt(split ? a.key_antiquant_scale : a.antiquant_scale), pp.k_dq.scale_at};
  t.antiquant_offset = {opt(split ? a.key_antiquant_offset : a.antiquant_offset),
                        pp.k_dq.offset_at};
  t.antiquant_scale_v = {opt(split ? a.value_antiquant_scale : a.antiquant_scale),
                         pp.v_dq.scale_at};
  t.antiquant_offset_v = {opt(split ? a.value_antiquant_offset : a.antiquant_offset),
                          pp.v_dq.offset_at};
  t.quant_scale2 = opt(a.quant_scale2), t.quant_offset2 = opt(a.quant_offset2);
  t.sink = opt(a.learnable_sink);
  t.kv_padding_size = opt(a.kv_padding_size);
  ifa::bind_decode(p.ifa, t, d);
}

}  // namespace

FiaArgs strip_data(const FiaArgs& args, const core::FiaProblem& /*problem*/) {
  FiaArgs m = core::strip_fields(kFields, args);
  if (!m.softmax_lse_flag) m.softmax_lse.reset();  // never looked at: runs ignore it too
  return m;
}

Status check_matches_plan(const FiaArgs& p, const FiaArgs& a) {
  return core::match_fields(kOpName, kFields, p, a);
}

void bind_data(const core::FiaProblem& p, const FiaArgs& a, core::FiaData* out) {
  *out = core::FiaData{};
  const core::FiaParams& pp = p.params;
  core::FiaPointers& d = out->ptrs;
  auto at = [](const std::optional<TensorView>& v) -> const void* {
    return v ? core::element0(*v) : nullptr;
  };
  d.q = core::element0(a.query);
  d.q_rope = at(a.query_rope);
  d.k = core::element0(a.key[0]);
  d.v = core::element0(a.value[0]);
  d.k_rope = at(a.key_rope);
  if (p.list) out->key_list = a.key.data(), out->value_list = a.value.data();
  if (pp.prefix_len > 0)
    d.k_prefix = at(a.key_shared_prefix), d.v_prefix = at(a.value_shared_prefix);
  if (pp.kv_int8) {
    if (a.key_antiquant_scale) {  // split parameters win (fia_validate_extras.cpp)
      d.k_scale = at(a.key_antiquant_scale), d.v_scale = at(a.value_antiquant_scale);
      d.k_offset = at(a.key_antiquant_offset), d.v_offset = at(a.value_antiquant_offset);
    } else {
      d.k_scale = d.v_scale = at(a.antiquant_scale);
      d.k_offset = d.v_offset = at(a.antiquant_offset);
    }
  }
  if (pp.has_pse) d.pse = at(a.pse_shift);
  d.quant_scale2 = at(a.quant_scale2);
  d.quant_offset2 = at(a.quant_offset2);
  if (pp.paged) d.block_table = static_cast<const int32_t*>(at(a.block_table));
  if (pp.has_mask) d.mask = static_cast<const uint8_t*>(at(a.atten_mask));
  d.sink = at(a.learnable_sink);
  d.out = core::element0(a.attention_out);
  if (pp.has_lse) d.lse = static_cast<float*>(core::element0(*a.softmax_lse));
  if (pp.has_max_sum) {
    d.softmax_max = static_cast<float*>(core::element0(*a.softmax_max));
    d.softmax_sum = static_cast<float*>(core::element0(*a.softmax_sum));
  }
  if (p.q_padding) out->q_padding = static_cast<const int64_t*>(at(a.query_padding_size));
  if (p.kv_padding) out->kv_padding = static_cast<const int64_t*>(at(a.kv_padding_size));
  if (p.use_ifa) bind_decode_requests(p, a, &out->ifa);
}

FiaResolved resolve_batches(const core::FiaProblem& p, const core::FiaData& d,
                            core::FiaBatch* batches, core::FiaPadRow* pad_rows, uint8_t* faulted) {
  const core::FiaParams& pp = p.params;
  FiaResolved r;
  const int64_t qpad = d.q_padding != nullptr ? std::max<int64_t>(*d.q_padding, 0) : -1;
  const int64_t kvpad = d.kv_padding != nullptr ? std::max<int64_t>(*d.kv_padding, 0) : -1;
  for (int64_t b = 0; b < pp.batch; ++b) {
    core::FiaBatch bt = p.batches[b];
    int64_t qf = 0;
    if (qpad >= 0) {
      const int64_t room = p.q_capacity - bt.q_rows;
      if (qpad > room) {
        bt.q_rows = 0;  // the window leaves the tensor: every row of the batch is padding
      } else {
        qf = room - qpad;
        bt.q_offset += qf * pp.q_row, bt.qr_offset += qf * pp.qr_row;
        bt.out_offset += qf * pp.o_row, bt.lse_offset += qf * pp.lse_row;
        bt.mask_offset += qf * pp.mask_row, bt.pse_offset += qf * pp.pse_row;
      }
    }
    const int64_t own = bt.kv_len - pp.prefix_len;
    if (kvpad >= 0) {
      const int64_t room = p.kv_capacity - own;
      if (kvpad > room) {
        bt.kv_len = pp.prefix_len;  // the window leaves the tensor: nothing of the batch's own
      } else {
        const int64_t kf = room - kvpad;
        bt.k_offset += kf * pp.k_pos, bt.v_offset += kf * pp.v_pos, bt.kr_offset += kf * pp.kr_pos;
        bt.col_shift = kf, bt.tok_first += kf;
      }
    }
    core::fia_band(p, bt.q_rows, bt.kv_len, &bt.band_lo, &bt.band_hi);
    faulted[b] = 0;
    if (pp.paged && bt.q_rows > 0) {
      const int64_t used = (bt.kv_len - pp.prefix_len + pp.block_size - 1) / pp.block_size;
      for (int64_t k = 0; k < used; ++k) {
        const int64_t id = d.ptrs.block_table[bt.k_offset + k];
        if (id >= 0 && id < p.num_blocks) continue;
        if (r.num_faults++ == 0) {
          r.first = core::fault_of(core::kFaultOpIfa, core::kFaultBlockId, b);
          r.first.len = bt.kv_len - pp.prefix_len, r.first.slot = k;
          r.first.value = id, r.first.limit = p.num_blocks;
        }
        faulted[b] = 1;
        break;
      }
    }
    // Rows of the S dim outside [qf, qf + q_rows) are padding (D5).
    if (!p.tnd) {
      for (int64_t s = 0; s < p.s1; ++s) {
        if (s >= qf && s < qf + bt.q_rows) continue;
        pad_rows[r.num_pad_rows++] = {b * p.o_batch + s * pp.o_row,
                                      b * p.lse_batch + s * pp.lse_row};
      }
    }
    batches[b] = bt;
  }
  if (p.tnd) {
    for (int64_t t = p.tnd_rows_used; t < p.rows; ++t)
      pad_rows[r.num_pad_rows++] = {t * pp.o_row, t * pp.lse_row};
  }
  return r;
}

void describe(const core::FiaProblem& p, char* buf, size_t size) {
  const core::FiaParams& pp = p.params;
  std::snprintf(buf, size, "B=%lld N=%lld KV_N=%lld D=%lld rows=%lld %s%s%s%s",
                static_cast<long long>(pp.batch), static_cast<long long>(pp.num_heads),
                static_cast<long long>(pp.num_kv_heads), static_cast<long long>(pp.head_dim),
                static_cast<long long>(p.rows), dtype_name(pp.dtype), pp.paged ? " paged" : "",
                p.decode ? " decode" : "",
                p.mixed()   ? " (decode requests on IFA kernels)"
                : p.use_ifa ? " (IFA kernels)"
                            : "");
}

}  // namespace kvflash::fia
