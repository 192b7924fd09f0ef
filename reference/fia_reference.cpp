#include "fia_reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <limits>

#include "element_access.hpp"
#include "ifa_reference.hpp"

namespace kvflash::reference {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// A max that keeps NaN (docs/semantics.md §0.2 item 6; std::max drops a NaN unless it comes first).
double nan_max(double a, double b) { return (a > b || std::isnan(a)) ? a : b; }

double at(const TensorView& v, std::initializer_list<int64_t> idx) { return load_element(v, idx); }

// Element 0 of an int64 (1,) tensor, read as the integer it is (a double cannot hold every int64).
int64_t read_int64(const TensorView& t) {
  int64_t raw = 0;
  std::memcpy(&raw, static_cast<const char*>(t.data) + t.offset * 8, 8);
  return raw;
}

bool tnd_type(const std::string& l) { return l == "TND" || l == "NTD"; }

// pre/next are int64 attributes; every length is far below 2^40, so clamping there keeps the
// band rule exact while no sum of them can overflow.
int64_t clamp_tokens(int64_t t) {
  constexpr int64_t kLim = int64_t{1} << 40;
  return std::clamp(t, -kLim, kLim);
}

}  // namespace

FiaLayouts fia_layouts(const std::string& l) {
  const size_t u = l.find('_');
  if (u == std::string::npos) return {l, l};
  return {l.substr(0, u), l.substr(u + 1)};
}

namespace {

// The query's (B, S1) for B/S layouts; TND/NTD give B from the length list and S1 = 0.
struct QueryDims {
  int64_t B = 0, S1 = 0, T = 0, D = 0;
};

QueryDims query_dims(const FiaCall& a, const std::string& in) {
  const TensorView& q = a.query;
  QueryDims d;
  if (in == "BSH") d = {q.shape[0], q.shape[1], 0, q.shape[2] / a.num_heads};
  if (in == "BSND") d = {q.shape[0], q.shape[1], 0, q.shape[3]};
  if (in == "BNSD") d = {q.shape[0], q.shape[2], 0, q.shape[3]};
  if (in == "TND") d = {0, 0, q.shape[0], q.shape[2]};
  if (in == "NTD") d = {0, 0, q.shape[1], q.shape[2]};
  if (tnd_type(in)) d.B = a.actual_seq_lengths ? static_cast<int64_t>(a.actual_seq_lengths->size()) : 1;
  return d;
}

// (b, s) of row r for B/S layouts; (-, t) for TND-type layouts.
int64_t row_of(const QueryDims& qd, const std::string& in, int64_t b, int64_t s) {
  return tnd_type(in) ? s : b * qd.S1 + s;
}

}  // namespace

int64_t fia_out_element(const FiaCall& a, int64_t r, int64_t h, int64_t d) {
  const FiaLayouts l = fia_layouts(a.input_layout);
  const QueryDims qd = query_dims(a, l.in);
  const TensorView& o = a.attention_out;
  const int64_t b = tnd_type(l.in) ? 0 : r / qd.S1, s = tnd_type(l.in) ? r : r % qd.S1;
  const int64_t dv = l.out == "BSH" ? o.shape[2] / a.num_heads : 0;
  if (l.out == "BSH") return element_at(o, {b, s, h * dv + d});
  if (l.out == "BSND") return element_at(o, {b, s, h, d});
  if (l.out == "BNSD") return element_at(o, {b, h, s, d});
  if (l.out == "NBSD") return element_at(o, {h, b, s, d});
  if (l.out == "TND") return element_at(o, {s, h, d});
  return element_at(o, {h, s, d});  // NTD
}

int64_t fia_lse_element(const FiaCall& a, int64_t r, int64_t h) {
  const FiaLayouts l = fia_layouts(a.input_layout);
  const TensorView& t = *a.softmax_lse;
  if (tnd_type(l.in)) return element_at(t, {r, h, 0});
  const QueryDims qd = query_dims(a, l.in);
  return element_at(t, {r / qd.S1, h, r % qd.S1, 0});
}

FiaReference fia_reference(const FiaCall& a) {
  const FiaLayouts lay = fia_layouts(a.input_layout);
  const std::string& in = lay.in;
  const bool tnd = tnd_type(in);
  const int64_t N = a.num_heads;
  const int64_t KVN = a.num_key_value_heads == 0 ? N : a.num_key_value_heads;
  const int64_t G = N / KVN;
  const QueryDims qd = query_dims(a, in);
  const int64_t B = qd.B, S1 = qd.S1, Dq = qd.D;
  const int64_t R = tnd ? qd.T : B * S1;
  const bool paged = a.block_table.has_value();
  const bool list = !paged && a.key.size() > 1;
  const bool rope = a.query_rope.has_value();
  const bool prefix = a.key_shared_prefix.has_value();

  // D4: the decode branch (IFA's semantics: sparse_mode / pre / next ignored, IFA's mask shapes).
  const bool decode = !a.prompt && !rope && !tnd && S1 == 1;

  // Head dims of K and V (MLA: K's D may differ from V's).
  auto kv_head_dim = [&](const TensorView& t) -> int64_t {
    if (paged) return t.rank == 3 ? t.shape[2] / KVN : t.shape[3];
    if (in == "BSH") return t.shape[2] / KVN;
    if (tnd) return t.shape[2];
    return t.shape[3];
  };
  const int64_t Dk = kv_head_dim(a.key[0]), Dv = kv_head_dim(a.value[0]);
  const int64_t Dr = !rope ? 0 : (in == "BSH" ? a.query_rope->shape[2] / N
                                  : tnd      ? a.query_rope->shape[2]
                                             : a.query_rope->shape[3]);
  (void)Dq;

  FiaReference r;
  r.rows = R;
  r.batch = B;
  r.num_heads = N;
  r.value_dim = Dv;
  r.out_dtype = a.attention_out.dtype;
  r.decode_branch = decode;
  r.attention.assign(R * N * Dv, 0.0);
  r.expected.assign(R * N * Dv, 0.0);
  r.rounded.assign(R * N * Dv, 0.0);
  r.lse.assign(R * N, kInf);
  r.softmax_max.assign(R * N, 0.0);
  r.softmax_sum.assign(R * N, 0.0);
  r.v_absmax.assign(R * N, 0.0);
  r.row_kind.assign(R * N, FiaRowKind::kPadding);
  r.row_batch.assign(R, -1);
  r.row_index.assign(R, -1);

  // ---- per-batch query rows: [q_first, q_first + q_len) of the S dim (TND: of T) ----
  std::vector<int64_t> q_first(B, 0), q_len(B, 0);
  for (int64_t b = 0; b < B; ++b) {
    if (tnd) {
      const auto& c = *a.actual_seq_lengths;
      q_first[b] = b == 0 ? 0 : c[b - 1];
      q_len[b] = c[b] - q_first[b];
    } else if (decode) {
      q_len[b] = 1;  // docs/fia-pfa-indexer.md §2.3: the query lengths are ignored when Q_S = 1
    } else {
      const bool given = a.actual_seq_lengths && !a.actual_seq_lengths->empty();
      const auto& l = *a.actual_seq_lengths;
      q_len[b] = given ? (l.size() == 1 ? l[0] : l[b]) : S1;
      if (given && a.query_padding_size && a.query_padding_size->numel() > 0) {
        const int64_t pad = std::max<int64_t>(read_int64(*a.query_padding_size), 0);
        const int64_t room = S1 - q_len[b];
        if (pad > room) {
          q_len[b] = 0;  // the window leaves the tensor: every row of the batch is padding
        } else {
          q_first[b] = room - pad;
        }
      }
    }
  }

  // ---- per-batch KV: prefix of length P, then [kv_first, kv_first + kv_len) of the batch's S ----
  const int64_t P =
      !prefix ? 0
              : (a.actual_shared_prefix_len && !a.actual_shared_prefix_len->empty()
                     ? (*a.actual_shared_prefix_len)[0]
                     : (in == "BNSD" ? a.key_shared_prefix->shape[2] : a.key_shared_prefix->shape[1]));
  std::vector<int64_t> kv_first(B, 0), kv_len(B, 0);
  for (int64_t b = 0; b < B; ++b) {
    int64_t cap = 0;
    if (paged) {
      cap = a.block_table->shape[1] * a.block_size;
    } else {
      const TensorView& t = list ? a.key[b] : a.key[0];
      cap = in == "BNSD" ? t.shape[2] : in == "NTD" ? t.shape[1] : t.shape[tnd ? 0 : 1];
    }
    const bool given = a.actual_seq_lengths_kv && !a.actual_seq_lengths_kv->empty();
    if (tnd && !paged) {
      const auto& c = *a.actual_seq_lengths_kv;  // cumulative (D6)
      kv_first[b] = b == 0 ? 0 : c[b - 1];
      kv_len[b] = c[b] - kv_first[b];
      continue;
    }
    const auto& l = *a.actual_seq_lengths_kv;
    kv_len[b] = given ? (l.size() == 1 ? l[0] : l[b]) : cap;
    if (given && !paged && !list && a.kv_padding_size && a.kv_padding_size->numel() > 0) {
      const int64_t pad = std::max<int64_t>(read_int64(*a.kv_padding_size), 0);
      const int64_t room = cap - kv_len[b];
      if (pad > room) {
        kv_len[b] = 0;  // IFA's rule (docs/semantics.md §2.7): the window leaves the tensor
      } else {
        kv_first[b] = room - pad;
      }
    }
  }

  // ---- K/V rows. `pos` is the physical position in the batch's tensor (TND: the T2 row) ----
  auto raw_kv = [&](const std::vector<TensorView>& lst, const TensorView* pre, int64_t b,
                    int64_t n2, int64_t j, int64_t d, int64_t D) -> double {
    if (j < P) {
      const TensorView& t = *pre;
      if (in == "BSH") return at(t, {0, j, n2 * D + d});
      if (in == "BSND") return at(t, {0, j, n2, d});
      return at(t, {0, n2, j, d});
    }
    const int64_t lj = j - P;
    if (paged) {
      const TensorView& bt = *a.block_table;
      const int64_t blk = static_cast<int64_t>(at(bt, {b, lj / a.block_size}));
      const int64_t o = lj % a.block_size;
      const TensorView& c = lst[0];
      if (c.rank == 3) return at(c, {blk, o, n2 * D + d});
      return at(c, {blk, n2, o, d});
    }
    const int64_t pos = kv_first[b] + lj;
    const TensorView& t = list ? lst[b] : lst[0];
    const int64_t bi = list ? 0 : b;
    if (in == "BSH") return at(t, {bi, pos, n2 * D + d});
    if (in == "BSND") return at(t, {bi, pos, n2, d});
    if (in == "BNSD") return at(t, {bi, n2, pos, d});
    if (in == "TND") return at(t, {pos, n2, d});
    return at(t, {n2, pos, d});  // NTD
  };

  // Dequantisation (docs/fia-pfa-indexer.md §2.10): K = (K_int + offset) * scale. which: 0 key, 1 value.
  auto dequant = [&](double x, int which, int64_t b, int64_t n2, int64_t j, int64_t d,
                     int64_t D) -> double {
    const TensorView* sc = nullptr;
    const TensorView* off = nullptr;
    int64_t mode = 0;
    bool combined = false;
    if (a.key_antiquant_scale) {
      sc = which == 0 ? &*a.key_antiquant_scale : &*a.value_antiquant_scale;
      const auto& o = which == 0 ? a.key_antiquant_offset : a.value_antiquant_offset;
      off = o ? &*o : nullptr;
      mode = which == 0 ? a.key_antiquant_mode : a.value_antiquant_mode;
    } else if (a.antiquant_scale) {
      sc = &*a.antiquant_scale;
      off = a.antiquant_offset ? &*a.antiquant_offset : nullptr;
      mode = a.antiquant_mode;
      combined = true;
    } else {
      return x;
    }
    auto param = [&](const TensorView& t) -> double {
      if (mode == 1) {  // per-token: (2, B, S) combined, (1, B, S) or (B, S) split
        const int64_t pos = paged ? j - P : kv_first[b] + (j - P);
        if (combined) return at(t, {which, b, pos});
        return t.rank == 3 ? at(t, {0, b, pos}) : at(t, {b, pos});
      }
      const int64_t per = combined ? 2 : 1;
      if (t.numel() == per) return load_element_flat(t, combined ? which : 0);  // per-tensor
      return load_element_flat(t, (combined ? which * KVN * D : 0) + n2 * D + d);
    };
    return (x + (off ? param(*off) : 0.0)) * param(*sc);
  };

  const bool has_mask = a.atten_mask.has_value() && a.atten_mask->numel() > 0;
  // The mask / pse are read only where the mode says a full mask is given (D3).
  // Modes 2-4 carry the compressed 2048x2048 mask, which is never read, in either branch.
  const bool read_mask = has_mask && (a.sparse_mode == 0 || a.sparse_mode == 1);
  // Mask / pse coordinates: row = the query row's position in the S dim (TND: within the batch),
  // col = the KV position counted from the start of the batch's tensor, the prefix first.
  auto mask_col = [&](int64_t b, int64_t j) {
    return j < P ? j : P + (paged || tnd ? 0 : kv_first[b]) + (j - P);
  };
  auto masked = [&](int64_t b, int64_t h, int64_t row, int64_t col) {
    const TensorView& m = *a.atten_mask;
    double v = 0;
    if (decode) {  // IFA's shapes: (B,S), (B,1,S), (B|1, N|1, 1, S)
      const int64_t bm = m.shape[0] == 1 ? 0 : b;
      if (m.rank == 2) v = at(m, {bm, col});
      if (m.rank == 3) v = at(m, {bm, 0, col});
      if (m.rank == 4) v = at(m, {bm, m.shape[1] == N ? h : 0, 0, col});
    } else {  // (S1, S2), (B|1, S1, S2), (B|1, 1, S1, S2)
      if (m.rank == 2) v = at(m, {row, col});
      if (m.rank == 3) v = at(m, {m.shape[0] == 1 ? 0 : b, row, col});
      if (m.rank == 4) v = at(m, {m.shape[0] == 1 ? 0 : b, 0, row, col});
    }
    return v != 0.0;
  };
  auto pse_at = [&](int64_t b, int64_t h, int64_t row, int64_t col) {
    const TensorView& p = *a.pse_shift;
    return at(p, {p.shape[0] == 1 ? 0 : b, h, p.shape[2] == 1 ? 0 : row, col});
  };

  auto q_at = [&](const TensorView& t, int64_t b, int64_t srow, int64_t h, int64_t d, int64_t D) {
    if (in == "BSH") return at(t, {b, srow, h * D + d});
    if (in == "BSND") return at(t, {b, srow, h, d});
    if (in == "BNSD") return at(t, {b, h, srow, d});
    if (in == "TND") return at(t, {srow, h, d});
    return at(t, {h, srow, d});
  };

  const bool int8_out = r.out_dtype == DType::kInt8;
  auto quant = [&](double o, int64_t h, int64_t d) {
    const TensorView& s = *a.quant_scale2;
    const int64_t flat = s.numel() == 1 ? 0 : h * Dv + d;
    const double off = a.quant_offset2 ? load_element_flat(*a.quant_offset2, flat) : 0.0;
    return o * load_element_flat(s, flat) + off;
  };

  const double scale = static_cast<double>(static_cast<float>(a.scale));  // §0.2 item 5
  const int64_t pre = clamp_tokens(a.pre_tokens), next = clamp_tokens(a.next_tokens);

  const std::vector<TensorView> key_rope =
      rope ? std::vector<TensorView>{*a.key_rope} : std::vector<TensorView>{};
  std::vector<double> kd, vd, krd, s, qv(Dk), qr(Dr);
  std::vector<uint8_t> vis, inr;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t S1b = q_len[b], S2b = P + kv_len[b];
    const int64_t dlt = S2b - S1b;
    for (int64_t i = 0; i < S1b; ++i) {
      const int64_t rr = row_of(qd, in, b, q_first[b] + i);
      r.row_batch[rr] = b;
      r.row_index[rr] = i;
    }
    for (int64_t n2 = 0; n2 < KVN; ++n2) {
      kd.assign(S2b * Dk, 0.0);
      vd.assign(S2b * Dv, 0.0);
      krd.assign(S2b * Dr, 0.0);
      const TensorView* kp = prefix ? &*a.key_shared_prefix : nullptr;
      const TensorView* vp = prefix ? &*a.value_shared_prefix : nullptr;
      for (int64_t j = 0; j < S2b; ++j) {
        for (int64_t d = 0; d < Dk; ++d)
          kd[j * Dk + d] = dequant(raw_kv(a.key, kp, b, n2, j, d, Dk), 0, b, n2, j, d, Dk);
        for (int64_t d = 0; d < Dv; ++d)
          vd[j * Dv + d] = dequant(raw_kv(a.value, vp, b, n2, j, d, Dv), 1, b, n2, j, d, Dv);
        for (int64_t d = 0; d < Dr; ++d)
          krd[j * Dr + d] = raw_kv(key_rope, nullptr, b, n2, j, d, Dr);
      }
      for (int64_t h = n2 * G; h < (n2 + 1) * G; ++h) {
        for (int64_t i = 0; i < S1b; ++i) {
          const int64_t srow = q_first[b] + i;          // the row in the query's S (or T) dim
          const int64_t mrow = tnd ? i : srow;          // its mask / pse row
          const int64_t rr = row_of(qd, in, b, srow);
          const int64_t row = r.row(rr, h);
          for (int64_t d = 0; d < Dk; ++d) qv[d] = q_at(a.query, b, srow, h, d, Dk);
          for (int64_t d = 0; d < Dr; ++d) qr[d] = q_at(*a.query_rope, b, srow, h, d, Dr);
          // in_range: the positions the row attends (their V reaches the output, with weight 0
          // where a full mask masks them, as IFA's masked positions do); vis: the visible ones.
          inr.assign(S2b, 0);
          vis.assign(S2b, 0);
          s.assign(S2b, 0.0);
          int64_t nvis = 0;
          for (int64_t j = 0; j < S2b; ++j) {
            bool band = true;
            if (!decode) {
              switch (a.sparse_mode) {
                case 0:
                  band = !has_mask || (j >= i - pre && j <= i + next);
                  break;
                case 2:
                  band = j <= i;
                  break;
                case 3:
                  band = j <= i + dlt;
                  break;
                case 4:
                  band = j >= i + dlt - pre && j <= i + dlt + next;
                  break;
                default:
                  break;  // 1: the mask alone
              }
            }
            if (!band) continue;
            inr[j] = 1;
            const int64_t col = mask_col(b, j);
            if (read_mask && masked(b, h, mrow, col)) continue;
            vis[j] = 1;
            ++nvis;
            double dot = 0.0;
            for (int64_t d = 0; d < Dk; ++d) dot += qv[d] * kd[j * Dk + d];
            for (int64_t d = 0; d < Dr; ++d) dot += qr[d] * krd[j * Dr + d];
            double st = dot * scale;
            if (a.pse_shift) st += pse_at(b, h, mrow, col);
            s[j] = st;
          }
          double* o = &r.attention[r.index(rr, h, 0)];
          if (nvis == 0) {
            r.row_kind[row] = FiaRowKind::kEmpty;  // D5: 0 and +inf (already so)
          } else {
            r.row_kind[row] = FiaRowKind::kNormal;
            double m = -kInf;
            for (int64_t j = 0; j < S2b; ++j)
              if (vis[j]) m = nan_max(m, s[j]);
            double l = 0.0;
            for (int64_t j = 0; j < S2b; ++j) {
              s[j] = vis[j] ? std::exp(s[j] - m) : 0.0;
              l += s[j];
            }
            if (a.learnable_sink) l += std::exp(load_element_flat(*a.learnable_sink, h) - m);  // D8
            double vmax = 0.0;
            for (int64_t j = 0; j < S2b; ++j) {
              if (!inr[j]) continue;
              for (int64_t d = 0; d < Dv; ++d) {
                const double v = vd[j * Dv + d];
                o[d] += s[j] * v;
                if (vis[j] && std::isfinite(v)) vmax = std::max(vmax, std::fabs(v));
              }
            }
            for (int64_t d = 0; d < Dv; ++d) o[d] /= l;
            r.lse[row] = m + std::log(l);
            r.softmax_max[row] = m;
            r.softmax_sum[row] = l;
            r.v_absmax[row] = vmax;
          }
        }
      }
    }
  }
  for (int64_t rr = 0; rr < R; ++rr) {
    for (int64_t h = 0; h < N; ++h) {
      for (int64_t d = 0; d < Dv; ++d) {
        const int64_t i = r.index(rr, h, d);
        r.expected[i] = int8_out ? quant(r.attention[i], h, d) : r.attention[i];
        r.rounded[i] = ifa_round_to_dtype(r.expected[i], r.out_dtype);
      }
    }
  }
  return r;
}

}  // namespace kvflash::reference
