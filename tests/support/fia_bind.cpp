// See fia_bind.hpp.
#include "support/fia_bind.hpp"

#include <algorithm>
#include <string>

namespace kvflash::testing {
namespace {

using cpu::FiaBatch;
using cpu::FiaPointers;
using cpu::FiaPadRow;
using cpu::FiaParams;

// The element offset of flat (row-major) index `flat` of t.
int64_t flat_elem(const TensorView& t, int64_t flat) {
  int64_t e = 0;
  for (int64_t i = t.rank - 1; i >= 0; --i) {
    e += flat % t.shape[i] * t.strides[i];
    flat /= t.shape[i];
  }
  return e;
}

struct Strides {
  int64_t batch = 0, row = 0, head = 0;
};

// (batch, row, head) element strides of a tensor in layout `l` ("BSH" rows of N*D with D the head
// dim, "BSND", "BNSD", "NBSD", "TND", "NTD").
Strides layout_strides(const TensorView& t, const std::string& l, int64_t D) {
  if (l == "BSH") return {t.strides[0], t.strides[1], D * t.strides[2]};
  if (l == "BSND") return {t.strides[0], t.strides[1], t.strides[2]};
  if (l == "BNSD") return {t.strides[0], t.strides[2], t.strides[1]};
  if (l == "NBSD") return {t.strides[1], t.strides[2], t.strides[0]};
  if (l == "TND") return {0, t.strides[0], t.strides[1]};
  return {0, t.strides[1], t.strides[0]};  // NTD
}


}  // namespace

FiaBound bind(const FiaCase& c, const reference::FiaCall& a) {
  FiaBound out;
  FiaParams& p = out.p;
  const reference::FiaLayouts lay = reference::fia_layouts(a.input_layout);
  const int64_t B = c.batch(), N = c.num_heads, KVN = c.num_kv_heads, D = c.head_dim;
  const int64_t Dr = c.rope_dim, Dv = c.dv();
  const bool tnd = c.tnd();
  const bool decode = !c.prompt && !Dr && !tnd && a.query.shape[lay.in == "BNSD" ? 2 : 1] == 1;
  p.batch = B, p.num_heads = N, p.num_kv_heads = KVN;
  p.head_dim = D, p.rope_dim = Dr, p.value_dim = Dv;
  p.dtype = c.q_dtype, p.out_dtype = c.out_dtype;
  p.scale = static_cast<float>(a.scale);
  const Strides qs = layout_strides(a.query, lay.in, D);
  const Strides os = layout_strides(a.attention_out, lay.out, Dv);
  Strides rs;
  if (Dr) rs = layout_strides(*a.query_rope, lay.in, Dr);
  p.q_row = qs.row, p.q_head = qs.head, p.o_row = os.row, p.o_head = os.head;
  p.qr_row = rs.row, p.qr_head = rs.head;
  Strides ls;
  if (a.softmax_lse) {
    const TensorView& l = *a.softmax_lse;
    ls = tnd ? Strides{0, l.strides[0], l.strides[1]} : Strides{l.strides[0], l.strides[2], l.strides[1]};
    p.has_lse = true, p.lse_row = ls.row, p.lse_head = ls.head;
  }
  // K / V: the query layout, or a paged cache.
  const TensorView& k = a.key[0];
  const TensorView& v = a.value[0];
  const bool list = !c.paged && a.key.size() > 1;
  Strides ks, vs, krs;
  p.paged = c.paged;
  if (c.paged) {
    auto paged = [&](const TensorView& t, int64_t Dd, int64_t* pos, int64_t* head, int64_t* blk) {
      *blk = t.strides[0];
      if (t.rank == 3) {
        *pos = t.strides[1], *head = Dd * t.strides[2];
      } else {
        *pos = t.strides[2], *head = t.strides[1];
      }
    };
    paged(k, D, &p.k_pos, &p.k_head, &p.k_block);
    paged(v, Dv, &p.v_pos, &p.v_head, &p.v_block);
    if (Dr) paged(*a.key_rope, Dr, &p.kr_pos, &p.kr_head, &p.kr_block);
    p.block_size = a.block_size;
  } else {
    ks = layout_strides(k, lay.in, D);
    vs = layout_strides(v, lay.in, Dv);
    if (Dr) krs = layout_strides(*a.key_rope, lay.in, Dr);
    p.k_pos = ks.row, p.k_head = ks.head, p.v_pos = vs.row, p.v_head = vs.head;
    p.kr_pos = krs.row, p.kr_head = krs.head;
    if (list) ks.batch = vs.batch = 0;  // batch b is tensor b
  }
  int64_t P = 0;
  if (a.key_shared_prefix) {
    const TensorView& kp = *a.key_shared_prefix;
    P = a.actual_shared_prefix_len ? (*a.actual_shared_prefix_len)[0]
                                   : kp.shape[lay.in == "BNSD" ? 2 : 1];
    const Strides kps = layout_strides(kp, lay.in, D), vps = layout_strides(*a.value_shared_prefix, lay.in, Dv);
    p.prefix_len = P, p.kp_pos = kps.row, p.kp_head = kps.head, p.vp_pos = vps.row, p.vp_head = vps.head;
  }
  // int8 K/V: the parameters the reference's dequant reads (split ones win).
  p.kv_int8 = c.kv_dtype == DType::kInt8;
  const bool split_aq = a.key_antiquant_scale.has_value();
  auto dequant = [&](int which, const TensorView* sc, const TensorView* of, int64_t mode,
                     int64_t Dd, cpu::FiaDequant* q) {
    q->dtype = sc->dtype;
    q->has_offset = of != nullptr;
    if (of) {
      EXPECT_EQ(of->dtype, sc->dtype);
    }
    const int64_t per = split_aq ? 1 : 2;
    if (mode == 1) {
      q->mode = cpu::FiaDequant::Mode::kToken;
      const int64_t r = sc->rank;
      q->tok_batch = sc->strides[r - 2], q->tok_pos = sc->strides[r - 1];
      q->scale_at = split_aq ? 0 : which * sc->strides[0];
      q->offset_at = of ? (split_aq ? 0 : which * of->strides[0]) : 0;
    } else if (sc->numel() == per) {
      q->mode = cpu::FiaDequant::Mode::kTensor;
      q->scale_at = flat_elem(*sc, split_aq ? 0 : which);
      q->offset_at = of ? flat_elem(*of, split_aq ? 0 : which) : 0;
    } else {
      q->mode = cpu::FiaDequant::Mode::kChannel;
      q->chan_head = Dd;  // the builder's parameter tensors are contiguous
      q->scale_at = split_aq ? 0 : which * KVN * Dd;
      q->offset_at = of ? q->scale_at : 0;
    }
  };
  if (p.kv_int8) {
    if (split_aq) {
      dequant(0, &*a.key_antiquant_scale, a.key_antiquant_offset ? &*a.key_antiquant_offset : nullptr,
              a.key_antiquant_mode, D, &p.k_dq);
      dequant(1, &*a.value_antiquant_scale,
              a.value_antiquant_offset ? &*a.value_antiquant_offset : nullptr,
              a.value_antiquant_mode, Dv, &p.v_dq);
    } else {
      const TensorView* of = a.antiquant_offset ? &*a.antiquant_offset : nullptr;
      dequant(0, &*a.antiquant_scale, of, a.antiquant_mode, D, &p.k_dq);
      dequant(1, &*a.antiquant_scale, of, a.antiquant_mode, Dv, &p.v_dq);
    }
  }
  if (c.out_dtype == DType::kInt8) {
    p.q2_channel = a.quant_scale2->numel() != 1;
    p.q2_dtype = a.quant_scale2->dtype;
    p.has_q2_offset = a.quant_offset2.has_value();
    if (a.quant_offset2) {
      EXPECT_EQ(a.quant_offset2->dtype, p.q2_dtype);
    }
  }
  int64_t pse_batch = 0;
  if (a.pse_shift) {
    const TensorView& ps = *a.pse_shift;
    p.has_pse = true, p.pse_dtype = ps.dtype;
    pse_batch = ps.shape[0] == 1 ? 0 : ps.strides[0];
    p.pse_head = ps.strides[1], p.pse_row = ps.shape[2] == 1 ? 0 : ps.strides[2];
    p.pse_col = ps.strides[3];
  }
  // Full masks (modes 0/1; the decode branch's (B, S)); the compressed one is never read.
  const bool full_mask = c.mask != FiaMask::kNone && c.mask != FiaMask::kCompressed &&
                         (c.sparse_mode == 0 || c.sparse_mode == 1);
  int64_t mask_batch = 0;
  if (full_mask) {
    const TensorView& m = *a.atten_mask;
    p.has_mask = true;
    if (c.mask == FiaMask::kIfaBS) {
      mask_batch = m.strides[0], p.mask_row = 0, p.mask_col = m.strides[1];
    } else {
      mask_batch = m.rank == 3 ? m.strides[0] : 0;
      p.mask_row = m.strides[m.rank - 2], p.mask_col = m.strides[m.rank - 1];
    }
  }

  // Per batch: rows and positions as the reference derives them (D6, left padding).
  const int64_t S1 = tnd ? 0 : a.query.shape[lay.in == "BNSD" ? 2 : 1];
  const int64_t S2 = c.paged || tnd ? 0 : k.shape[lay.in == "BNSD" ? 2 : 1];
  std::vector<uint8_t> covered(tnd ? a.query.shape[lay.in == "NTD" ? 1 : 0] : B * S1, 0);
  int64_t qcum = 0, kcum = 0;
  const int64_t lim = cpu::kFiaUnbounded;
  const int64_t pre = std::clamp(c.pre_tokens, -lim, lim), next = std::clamp(c.next_tokens, -lim, lim);
  for (int64_t b = 0; b < B; ++b) {
    FiaBatch bt;
    bt.q_rows = decode ? 1 : c.q_lens[b];
    bt.kv_len = P + c.kv_lens[b];
    int64_t q_first = 0, kv_first = 0;
    if (tnd) {
      q_first = qcum, qcum += c.q_lens[b];
      if (!c.paged) kv_first = kcum, kcum += c.kv_lens[b];
    } else {
      if (c.q_padding >= 0 && !decode) q_first = S1 - c.q_padding - bt.q_rows;
      if (c.kv_padding >= 0 && !c.paged && !list) kv_first = S2 - c.kv_padding - c.kv_lens[b];
    }
    bt.q_offset = b * qs.batch + q_first * qs.row;
    bt.qr_offset = b * rs.batch + q_first * rs.row;
    bt.out_offset = b * os.batch + q_first * os.row;
    bt.lse_offset = b * ls.batch + q_first * ls.row;
    if (c.paged) {
      bt.k_offset = b * a.block_table->strides[0];
    } else {
      bt.k_offset = b * ks.batch + kv_first * ks.row;
      bt.v_offset = b * vs.batch + kv_first * vs.row;
      bt.kr_offset = b * krs.batch + kv_first * krs.row;
    }
    const int64_t dlt = bt.kv_len - bt.q_rows;
    if (!decode) {
      switch (c.sparse_mode) {
        case 0:
          if (c.mask != FiaMask::kNone) bt.band_lo = -pre, bt.band_hi = next;
          break;
        case 2:
          bt.band_hi = 0;
          break;
        case 3:
          bt.band_hi = dlt;
          break;
        case 4:
          bt.band_lo = dlt - pre, bt.band_hi = dlt + next;
          break;
        default:
          break;
      }
    }
    bt.mask_offset = b * mask_batch + (tnd ? 0 : q_first) * p.mask_row;
    bt.pse_offset = b * pse_batch + (tnd ? 0 : q_first) * p.pse_row;
    bt.col_shift = c.paged || tnd ? 0 : kv_first;
    bt.tok_first = c.paged ? 0 : kv_first;
    for (int64_t i = 0; i < bt.q_rows; ++i) covered[tnd ? q_first + i : b * S1 + q_first + i] = 1;
    out.batches.push_back(bt);
  }
  for (int64_t r = 0; r < static_cast<int64_t>(covered.size()); ++r) {
    if (covered[r]) continue;
    const int64_t b = tnd ? 0 : r / S1, s = tnd ? r : r % S1;
    out.pad.push_back({b * os.batch + s * os.row, b * ls.batch + s * ls.row});
  }
  p.batches = out.batches.data();
  p.pad_rows = out.pad.data();
  p.num_pad_rows = static_cast<int64_t>(out.pad.size());
  if (a.learnable_sink) p.has_sink = true, p.sink_dtype = a.learnable_sink->dtype;

  FiaPointers& d = out.d;
  d.q = a.query.base();
  d.q_rope = Dr ? a.query_rope->base() : nullptr;
  d.k = k.base();
  d.v = v.base();
  if (list) {
    for (int64_t b = 0; b < B; ++b) out.k_list.push_back(a.key[b].base()), out.v_list.push_back(a.value[b].base());
    d.k_list = out.k_list.data(), d.v_list = out.v_list.data();
  }
  if (P) d.k_prefix = a.key_shared_prefix->base(), d.v_prefix = a.value_shared_prefix->base();
  if (p.kv_int8) {
    if (split_aq) {
      d.k_scale = a.key_antiquant_scale->base(), d.v_scale = a.value_antiquant_scale->base();
      d.k_offset = a.key_antiquant_offset ? a.key_antiquant_offset->base() : nullptr;
      d.v_offset = a.value_antiquant_offset ? a.value_antiquant_offset->base() : nullptr;
    } else {
      d.k_scale = d.v_scale = a.antiquant_scale->base();
      d.k_offset = d.v_offset = a.antiquant_offset ? a.antiquant_offset->base() : nullptr;
    }
  }
  if (a.pse_shift) d.pse = a.pse_shift->base();
  if (c.out_dtype == DType::kInt8) {
    d.quant_scale2 = a.quant_scale2->base();
    d.quant_offset2 = a.quant_offset2 ? a.quant_offset2->base() : nullptr;
  }
  d.k_rope = Dr ? a.key_rope->base() : nullptr;
  d.block_table = c.paged ? static_cast<const int32_t*>(a.block_table->base()) : nullptr;
  d.mask = full_mask ? static_cast<const uint8_t*>(a.atten_mask->base()) : nullptr;
  d.sink = a.learnable_sink ? a.learnable_sink->base() : nullptr;
  d.out = a.attention_out.base();
  d.lse = a.softmax_lse ? static_cast<float*>(a.softmax_lse->base()) : nullptr;
  return out;
}

}  // namespace kvflash::testing
