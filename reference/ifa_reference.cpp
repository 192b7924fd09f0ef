#include "ifa_reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <limits>

#include "core/half.hpp"
#include "element_access.hpp"

namespace kvflash::reference {
namespace {

// docs/semantics.md §2.5 step 5: a masked score is *replaced* by -1e12f (the fp32 constant, widened
// exactly).
const double kMaskedScoreD = static_cast<double>(-1.0e12f);

// Non-finite inputs (docs/semantics.md §0.2 item 6) go through the plain IEEE arithmetic of the
// formulas below; the only helper is a max that keeps NaN (std::max and std::max_element drop a NaN
// unless it comes first, which would make the row's max depend on where the NaN sits).
double nan_max(double a, double b) { return (a > b || std::isnan(a)) ? a : b; }

// ---- reading a view --------------------------------------------------------------------------

// Element at a multi-index (one index per dim of the view).
double at(const TensorView& v, std::initializer_list<int64_t> idx) { return load_element(v, idx); }
double at_flat(const TensorView& v, int64_t flat) { return load_element_flat(v, flat); }

double round_format(double x, int mant_bits, int min_exp, double overflow) {
  if (!std::isfinite(x) || x == 0.0) return x;
  const double ax = std::fabs(x);
  if (ax >= overflow) return std::copysign(std::numeric_limits<double>::infinity(), x);
  int e = 0;
  std::frexp(ax, &e);  // ax = f * 2^e with f in [0.5, 1): the leading bit has weight 2^(e-1)
  const int lead = std::max(e - 1, min_exp);
  const double quantum = std::ldexp(1.0, lead - mant_bits);
  return std::copysign(std::nearbyint(ax / quantum) * quantum, x);  // nearbyint: ties to even
}

// ---- the problem as the reference sees it -----------------------------------------------------

struct Geometry {
  int64_t B = 0, N = 0, KVN = 0, G = 0, D = 0;
  bool bsh = false, bsnd = false, bnsd = false;
  bool paged = false, list = false;
};

// Sequence dim of a (batch-contiguous or list) KV tensor in the given layout.
int64_t kv_seq_len(const Geometry& g, const TensorView& t) {
  return g.bnsd ? t.shape[2] : t.shape[1];
}

}  // namespace

double ifa_round_to_dtype(double x, DType dtype) {
  switch (dtype) {
    case DType::kFloat16:
      return round_format(x, 10, -14, 65520.0);
    case DType::kBFloat16:
      // Halfway between the largest bf16 (0x1.fep127) and 2^128 rounds (to even) to 2^128 = inf.
      return round_format(x, 7, -126, std::ldexp(2.0 - std::ldexp(1.0, -8), 127));
    case DType::kFloat32:
      return static_cast<double>(static_cast<float>(x));
    case DType::kInt8: {
      // int8 cannot hold NaN: a NaN element is 0 (docs/conventions.md, "Non-finite inputs").
      if (std::isnan(x)) return 0.0;
      return std::clamp(std::nearbyint(x), -128.0, 127.0);
    }
    default:
      return x;
  }
}

IfaReference ifa_reference(const IfaArgs& a) {
  Geometry g;
  g.bsh = a.input_layout == "BSH";
  g.bsnd = a.input_layout == "BSND";
  g.bnsd = a.input_layout == "BNSD";
  g.N = a.num_heads;
  g.KVN = a.num_key_value_heads == 0 ? a.num_heads : a.num_key_value_heads;
  g.G = g.N / g.KVN;
  const TensorView& q = a.query;
  g.B = q.shape[0];
  g.D = g.bsh ? q.shape[2] / g.N : q.shape[3];
  g.paged = a.block_table.has_value();
  g.list = !g.paged && a.key.size() > 1;
  const int64_t B = g.B, N = g.N, D = g.D, G = g.G;

  IfaReference r;
  r.batch = B;
  r.num_heads = N;
  r.head_dim = D;
  r.out_dtype = a.attention_out.dtype;
  r.attention.assign(B * N * D, 0.0);
  r.expected.assign(B * N * D, 0.0);
  r.rounded.assign(B * N * D, 0.0);
  r.lse.assign(B * N, -std::numeric_limits<double>::infinity());
  r.v_absmax.assign(B * N, 0.0);
  r.row_kind.assign(B * N, IfaRowKind::kEmpty);

  auto q_at = [&](int64_t b, int64_t h, int64_t d) {
    if (g.bsh) return at(q, {b, 0, h * D + d});
    if (g.bsnd) return at(q, {b, 0, h, d});
    return at(q, {b, h, 0, d});
  };

  // ---- per-batch candidate positions J_b = [begin_b, begin_b + len_b) (docs/semantics.md §2.4,
  // §2.7) ----
  std::vector<int64_t> seq_cap(B), len(B), begin(B, 0);
  for (int64_t b = 0; b < B; ++b) {
    if (g.paged) {
      seq_cap[b] = a.block_table->shape[1] * a.block_size;
    } else {
      seq_cap[b] = kv_seq_len(g, g.list ? a.key[b] : a.key[0]);
    }
  }
  const bool have_lengths = a.actual_seq_lengths.has_value() && !a.actual_seq_lengths->empty();
  for (int64_t b = 0; b < B; ++b) {
    if (have_lengths) {
      const auto& l = *a.actual_seq_lengths;
      len[b] = l.size() == 1 ? l[0] : l[b];
    } else {
      len[b] = seq_cap[b];
    }
  }
  const bool left_pad = a.kv_padding_size.has_value() && a.kv_padding_size->numel() > 0 &&
                        have_lengths && !g.list && !g.paged;
  if (left_pad) {
    // Element 0 read as the int64 it is (a double cannot hold every int64), then max(pad, 0).
    const TensorView& t = *a.kv_padding_size;
    int64_t raw = 0;
    std::memcpy(&raw, static_cast<const char*>(t.data) + t.offset * 8, 8);
    const int64_t pad = std::max<int64_t>(raw, 0);
    for (int64_t b = 0; b < B; ++b) {
      // start = S - pad - len, compared without overflow (pad may be up to INT64_MAX).
      const int64_t room = seq_cap[b] - len[b];
      if (pad > room) {
        begin[b] = 0;
        len[b] = 0;  // docs/semantics.md §2.7: start < 0 -> the whole row block is empty
      } else {
        begin[b] = room - pad;
      }
    }
  }

  // ---- K/V addressing and dequantisation (docs/semantics.md §2.8, §2.9) ----
  auto kv_at = [&](const std::vector<TensorView>& list, int64_t b, int64_t n2, int64_t j,
                   int64_t d) {
    if (g.paged) {
      const TensorView& bt = *a.block_table;
      const int64_t blk = static_cast<int64_t>(at(bt, {b, j / a.block_size}));
      const int64_t o = j % a.block_size;
      const TensorView& cache = list[0];
      if (cache.rank == 3) return at(cache, {blk, o, n2 * D + d});
      return at(cache, {blk, n2, o, d});
    }
    const TensorView& t = g.list ? list[b] : list[0];
    const int64_t bi = g.list ? 0 : b;
    if (g.bsh) return at(t, {bi, j, n2 * D + d});
    if (g.bsnd) return at(t, {bi, j, n2, d});
    return at(t, {bi, n2, j, d});
  };
  const bool antiquant = a.antiquant_scale.has_value();
  const bool aq_per_tensor = antiquant && a.antiquant_scale->rank == 1;
  // which: 0 = key, 1 = value.
  auto dequant = [&](double x, int which, int64_t n2, int64_t d) {
    if (!antiquant) return x;
    const int64_t flat = aq_per_tensor ? which : (which * g.KVN + n2) * D + d;
    const double sc = at_flat(*a.antiquant_scale, flat);
    const double off = a.antiquant_offset ? at_flat(*a.antiquant_offset, flat) : 0.0;
    return (x + off) * sc;
  };

  // ---- mask / pse element for (b, h, absolute position j) (docs/semantics.md §2.5, §2.6) ----
  const bool has_mask = a.atten_mask.has_value() && a.atten_mask->numel() > 0;
  auto masked = [&](int64_t b, int64_t h, int64_t j) {
    const TensorView& m = *a.atten_mask;
    const int64_t bm = m.shape[0] == 1 ? 0 : b;
    const int64_t hm = (m.rank >= 3 && m.shape[1] == N) ? h : 0;
    double v = 0;
    if (m.rank == 2) v = at(m, {bm, j});
    if (m.rank == 3) v = at(m, {bm, hm, j});
    if (m.rank == 4) v = at(m, {bm, hm, 0, j});
    return v != 0.0;
  };
  const bool has_pse = a.pse_shift.has_value();
  auto pse_at = [&](int64_t b, int64_t h, int64_t j) {
    const TensorView& p = *a.pse_shift;
    return at(p, {p.shape[0] == 1 ? 0 : b, h, 0, j});
  };

  // ---- post-quantisation (docs/semantics.md §2.10): h is the query head ----
  const bool int8_out = r.out_dtype == DType::kInt8;
  auto quant = [&](double o, int64_t h, int64_t d) {
    const TensorView& s = *a.quant_scale2;
    const int64_t flat = s.numel() == 1 ? 0 : h * D + d;
    const double sc = at_flat(s, flat);
    const double off = a.quant_offset2 ? at_flat(*a.quant_offset2, flat) : 0.0;
    return o * sc + off;
  };

  const double scale =
      static_cast<double>(static_cast<float>(a.scale_value));  // docs/semantics.md §0.2 item 5

  std::vector<double> kd, vd, s, qv(D);
  for (int64_t b = 0; b < B; ++b) {
    const int64_t L = len[b], j0 = begin[b];
    for (int64_t n2 = 0; n2 < g.KVN; ++n2) {
      // All G query heads of the group read the same dequantised K and V rows.
      kd.assign(L * D, 0.0);
      vd.assign(L * D, 0.0);
      for (int64_t t = 0; t < L; ++t) {
        for (int64_t d = 0; d < D; ++d) {
          kd[t * D + d] = dequant(kv_at(a.key, b, n2, j0 + t, d), 0, n2, d);
          vd[t * D + d] = dequant(kv_at(a.value, b, n2, j0 + t, d), 1, n2, d);
        }
      }
      for (int64_t h = n2 * G; h < (n2 + 1) * G; ++h) {
        const int64_t row = r.row(b, h);
        double* o = &r.attention[r.index(b, h, 0)];
        bool zero_row = L == 0;
        if (L > 0) {
          for (int64_t d = 0; d < D; ++d) qv[d] = q_at(b, h, d);
          s.assign(L, 0.0);
          int64_t unmasked = 0;
          for (int64_t t = 0; t < L; ++t) {
            const int64_t j = j0 + t;
            double dot = 0.0;
            for (int64_t d = 0; d < D; ++d) dot += qv[d] * kd[t * D + d];
            double st = dot * scale;
            if (has_pse) st += pse_at(b, h, j);
            if (has_mask && masked(b, h, j)) {
              st = kMaskedScoreD;
            } else {
              ++unmasked;
            }
            s[t] = st;
          }
          const bool fully_masked = unmasked == 0;
          r.row_kind[row] = fully_masked ? IfaRowKind::kFullyMasked : IfaRowKind::kNormal;
          if (fully_masked && a.zero_fully_masked_rows) {
            zero_row = true;
          } else {
            // Plain IEEE arithmetic (docs/semantics.md §0.2 item 6): a NaN score makes m, l, the
            // LSE and every output NaN; a +inf score gives m = +inf and exp(inf - inf) = NaN; a row
            // whose scores are all -inf gives exp(-inf - -inf) = NaN too (no softmax exists: 0/0).
            double m = -std::numeric_limits<double>::infinity();
            for (int64_t t = 0; t < L; ++t) m = nan_max(m, s[t]);
            double l = 0.0;
            for (int64_t t = 0; t < L; ++t) {
              s[t] = std::exp(s[t] - m);
              l += s[t];
            }
            double vmax = 0.0;
            for (int64_t t = 0; t < L; ++t) {
              // The positions the row attends: the unmasked ones, or all of them when the row is
              // fully masked (every weight is then 1/L).
              const bool attended = fully_masked || !(has_mask && masked(b, h, j0 + t));
              for (int64_t d = 0; d < D; ++d) {
                o[d] += s[t] * vd[t * D + d];
                // The tolerance scale: finite values only (a NaN/inf element is checked exactly).
                if (attended && std::isfinite(vd[t * D + d]))
                  vmax = std::max(vmax, std::fabs(vd[t * D + d]));
              }
            }
            for (int64_t d = 0; d < D; ++d) o[d] /= l;
            r.lse[row] = m + std::log(l);
            r.v_absmax[row] = vmax;
          }
        }
        for (int64_t d = 0; d < D; ++d) {
          if (zero_row) o[d] = 0.0;
          const int64_t i = r.index(b, h, d);
          r.expected[i] = int8_out ? quant(o[d], h, d) : o[d];
          r.rounded[i] = ifa_round_to_dtype(r.expected[i], r.out_dtype);
        }
      }
    }
  }
  return r;
}

}  // namespace kvflash::reference
