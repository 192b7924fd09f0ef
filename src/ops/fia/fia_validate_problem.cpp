// FIA / PFA validation, the end: the size bound of what the workspace derives from, and the
// normalised problem (core::FiaProblem: the prefill description, per-batch rows and offsets, the
// band) filled from a validated call. Called by fia::validate (fia_validate.cpp).
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/checked_math.hpp"
#include "core/error.hpp"
#include "core/view_check.hpp"
#include "ops/fia/fia_validate_parts.hpp"

namespace kvflash::fia {

using core::str;

// Sizes the workspace derives from (tasks, split slots, per-row state) are bounded before
// anything is sized: sum_b rows_b * N * (key tiles_b + 1) * (Dv + 64) floats must fit 2^62 bytes.
// The prefill kernel's packed key tiles add at most cpu::kFiaPackedKvMaxBytes and one small
// record per batch and KV head (fewer bytes than that sum's), so the total stays far below 2^64.
Status check_size(const FiaShape& s) {
  int64_t total = 0;
  for (int64_t b = 0; b < s.B; ++b) {
    const int64_t tiles = (s.P + s.kv_len[b]) / kSizeTile + 2;
    auto x = core::checked_mul(std::max<int64_t>(s.q_len[b], 1), s.N);
    if (x) x = core::checked_mul(*x, tiles);
    if (x) x = core::checked_mul(*x, (s.Dv + 64) * 4);
    if (x) x = core::checked_add(total, *x);
    if (!x || *x > (int64_t{1} << 62))
      return invalid("the problem is too large: batch " + str(b) + "'s " + str(s.q_len[b]) +
                     " query rows over " + str(s.P + s.kv_len[b]) +
                     " positions (actual_seq_lengths, actual_seq_lengths_kv, key sizes) overflow "
                     "the workspace's size");
    total = *x;
  }
  return Status::kSuccess;
}

void fill_problem(const FiaArgs& a, const FiaShape& s, int64_t mask_batch, int64_t pse_batch,
                  core::FiaProblem* pr) {
  core::FiaParams& p = pr->params;
  pr->device = a.query.device;
  pr->tnd = s.tnd, pr->decode = s.decode, pr->list = s.list;
  pr->rows = s.tnd ? s.T : s.B * s.S1;
  pr->s1 = s.S1;
  pr->sparse_mode = a.sparse_mode;
  const int64_t lim = core::kFiaUnbounded;
  pr->pre = std::clamp(a.pre_tokens, -lim, lim), pr->next = std::clamp(a.next_tokens, -lim, lim);
  pr->band_mask = a.sparse_mode == 0 && a.atten_mask.has_value();
  p.batch = s.B, p.num_heads = s.N, p.num_kv_heads = s.KVN;
  p.head_dim = s.D, p.rope_dim = s.Dr, p.value_dim = s.Dv;
  p.dtype = a.query.dtype, p.out_dtype = a.attention_out.dtype;
  p.scale = static_cast<float>(a.scale);
  const FiaStrides qs = layout_strides(a.query, s.in, s.D);
  const FiaStrides os = layout_strides(a.attention_out, s.out, s.Dv);
  FiaStrides rs, ls, ks, vs, krs;
  if (s.rope) rs = layout_strides(*a.query_rope, s.in, s.Dr);
  p.q_row = qs.row, p.q_head = qs.head, p.o_row = os.row, p.o_head = os.head;
  p.qr_row = rs.row, p.qr_head = rs.head;
  pr->o_batch = os.batch;
  if (a.softmax_lse_flag) {
    const TensorView& l = *a.softmax_lse;
    ls = s.tnd ? FiaStrides{0, l.strides[0], l.strides[1]}
               : FiaStrides{l.strides[0], l.strides[2], l.strides[1]};
    p.has_lse = true, p.lse_row = ls.row, p.lse_head = ls.head;
    pr->lse_batch = ls.batch;
  } else if (a.softmax_max) {
    // The LSE offsets address the max / sum rows (times their width): those of a contiguous LSE.
    ls = s.tnd ? FiaStrides{0, s.N, 1} : FiaStrides{s.N * s.S1, 1, s.S1};
    p.lse_row = ls.row, p.lse_head = ls.head;
    pr->lse_batch = ls.batch;
  }
  p.has_max_sum = a.softmax_max.has_value();
  const TensorView& k = a.key[0];
  const TensorView& v = a.value[0];
  p.paged = s.paged;
  if (s.paged) {
    auto paged = [](const TensorView& t, int64_t Dd, int64_t* pos, int64_t* head, int64_t* blk) {
      *blk = t.strides[0];
      if (t.rank == 3) {
        *pos = t.strides[1], *head = Dd * t.strides[2];
      } else {
        *pos = t.strides[2], *head = t.strides[1];
      }
    };
    paged(k, s.D, &p.k_pos, &p.k_head, &p.k_block);
    paged(v, s.Dv, &p.v_pos, &p.v_head, &p.v_block);
    if (s.rope) paged(*a.key_rope, s.Dr, &p.kr_pos, &p.kr_head, &p.kr_block);
    p.block_size = a.block_size;
    pr->num_blocks = k.shape[0];
  } else {
    ks = layout_strides(k, s.in, s.D);
    vs = layout_strides(v, s.in, s.Dv);
    if (s.rope) krs = layout_strides(*a.key_rope, s.in, s.Dr);
    p.k_pos = ks.row, p.k_head = ks.head, p.v_pos = vs.row, p.v_head = vs.head;
    p.kr_pos = krs.row, p.kr_head = krs.head;
    if (s.list) ks.batch = vs.batch = 0;  // batch b is tensor b
  }
  if (a.key_shared_prefix) {
    const FiaStrides kps = layout_strides(*a.key_shared_prefix, s.in, s.D);
    const FiaStrides vps = layout_strides(*a.value_shared_prefix, s.in, s.Dv);
    p.prefix_len = s.P, p.kp_pos = kps.row, p.kp_head = kps.head;
    p.vp_pos = vps.row, p.vp_head = vps.head;
  }
  if (a.learnable_sink) p.has_sink = true, p.sink_dtype = a.learnable_sink->dtype;
  // Left padding applies only with the matching lengths (IFA's rule; docs/fia-semantics.md).
  pr->q_padding = a.query_padding_size && !s.tnd && !s.decode && a.actual_seq_lengths &&
                  !a.actual_seq_lengths->empty();
  pr->kv_padding = a.kv_padding_size && !s.tnd && !s.paged && !s.list && a.actual_seq_lengths_kv &&
                   !a.actual_seq_lengths_kv->empty();
  pr->q_capacity = s.S1, pr->kv_capacity = s.S2;
  pr->tnd_rows_used = s.tnd && s.B > 0 ? s.q_first[s.B - 1] + s.q_len[s.B - 1] : 0;
  pr->batches.assign(s.B, core::FiaBatch{});
  for (int64_t b = 0; b < s.B; ++b) {
    core::FiaBatch& bt = pr->batches[b];
    bt.q_rows = s.q_len[b];
    bt.kv_len = s.P + s.kv_len[b];
    const int64_t qf = s.q_first[b], kf = s.kv_first[b];
    bt.q_offset = b * qs.batch + qf * qs.row;
    bt.qr_offset = b * rs.batch + qf * rs.row;
    bt.out_offset = b * os.batch + qf * os.row;
    bt.lse_offset = b * ls.batch + qf * ls.row;
    if (s.paged) {
      bt.k_offset = b * a.block_table->strides[0];
    } else {
      bt.k_offset = b * ks.batch + kf * ks.row;
      bt.v_offset = b * vs.batch + kf * vs.row;
      bt.kr_offset = b * krs.batch + kf * krs.row;
    }
    core::fia_band(*pr, bt.q_rows, bt.kv_len, &bt.band_lo, &bt.band_hi);
    bt.mask_offset = b * mask_batch;
    bt.pse_offset = b * pse_batch;
    bt.tok_first = s.paged ? 0 : kf;
  }
}

}  // namespace kvflash::fia
