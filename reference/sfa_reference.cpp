#include "sfa_reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <vector>

#include "element_access.hpp"
#include "ifa_reference.hpp"  // ifa_round_to_dtype: one rounding rule for every oracle

namespace kvflash::reference {
namespace {

constexpr int64_t kNope = 512;
constexpr int64_t kRope = 64;

// Exact widening of one element of any dtype the operator uses.
double read(const TensorView& v, std::initializer_list<int64_t> idx) { return load_element(v, idx); }

// Non-finite inputs (docs/semantics.md §0.2 item 6) go through the plain IEEE arithmetic of §3.4;
// the only helper is a max that keeps NaN (std::max drops a NaN second argument).
double nan_max(double a, double b) { return (a > b || std::isnan(a)) ? a : b; }

// Entry i of a 1-D int32 or int64 tensor (the length tensors take both).
int64_t read_int(const TensorView& v, int64_t i) {
  const int64_t at = v.offset + i * v.strides[0];
  return v.dtype == DType::kInt64 ? static_cast<const int64_t*>(v.data)[at]
                                  : static_cast<const int32_t*>(v.data)[at];
}

}  // namespace

std::vector<int64_t> sfa_reference_select(const std::vector<int32_t>& idx, int64_t thr,
                                          int64_t sbs) {
  std::vector<int64_t> sel;
  if (thr <= 0) return sel;
  const int64_t k = static_cast<int64_t>(idx.size());
  const int64_t valid_count = std::min<int64_t>(k, (thr + sbs - 1) / sbs);
  for (int64_t r = 0; r < valid_count; ++r) {
    const int64_t x = idx[r];
    if (x == -1) break;    // the first -1 ends the list
    if (x < -1) continue;  // other negatives are skipped (decision #15)
    const int64_t begin = x * sbs;
    if (begin >= thr) continue;  // out of range: skipped, not terminating
    const int64_t end = std::min(begin + sbs, thr);
    for (int64_t j = begin; j < end; ++j) sel.push_back(j);  // duplicates kept
  }
  return sel;
}

SfaReference sfa_reference(const SfaArgs& a) {
  const bool q_tnd = a.layout_query == "TND";
  const bool kv_tnd = a.layout_kv == "TND";
  const bool paged = a.layout_kv == "PA_BSND";
  const TensorView& q = a.query;
  const TensorView& value = a.value ? *a.value : a.key;
  const int64_t n1 = q.shape[q_tnd ? 1 : 2];
  const int64_t s1 = q_tnd ? 0 : q.shape[1];
  const int64_t t1 = q_tnd ? q.shape[0] : 0;
  const int64_t batch = q_tnd ? a.actual_seq_lengths_query->shape[0] : q.shape[0];
  const int64_t k_size = a.sparse_indices.shape[a.sparse_indices.rank - 1];
  const int64_t sbs = a.sparse_block_size;
  const double scale = static_cast<float>(a.scale_value);
  const bool has_asq = a.actual_seq_lengths_query && a.actual_seq_lengths_query->data;
  const bool has_askv = a.actual_seq_lengths_kv && a.actual_seq_lengths_kv->data;
  const int64_t block_size = paged ? a.key.shape[1] : 0;

  SfaReference r;
  r.num_rows = q_tnd ? t1 : batch * s1;
  r.num_heads = n1;
  r.attention.assign(r.num_rows * n1 * kNope, 0.0);
  r.softmax_max.assign(r.num_rows * n1, 0.0);
  r.softmax_sum.assign(r.num_rows * n1, 0.0);
  r.v_absmax.assign(r.num_rows, 0.0);
  r.selected.assign(r.num_rows, 0);
  r.row_kind.assign(r.num_rows, SfaRowKind::kUncovered);

  for (int64_t b = 0; b < batch; ++b) {
    // §3.3 per-batch lengths.
    int64_t lq, q_first;
    if (q_tnd) {
      const int64_t prev = b == 0 ? 0 : read_int(*a.actual_seq_lengths_query, b - 1);
      lq = read_int(*a.actual_seq_lengths_query, b) - prev;
      q_first = prev;
    } else {
      lq = has_asq ? read_int(*a.actual_seq_lengths_query, b) : s1;
      q_first = b * s1;
    }
    int64_t lkv, kv_first = 0;
    if (kv_tnd) {
      kv_first = b == 0 ? 0 : read_int(*a.actual_seq_lengths_kv, b - 1);
      lkv = read_int(*a.actual_seq_lengths_kv, b) - kv_first;
    } else {
      lkv = has_askv ? read_int(*a.actual_seq_lengths_kv, b) : a.key.shape[1];
    }

    // Where KV token j of this batch lives: (tensor, indices prefix) for the three layouts.
    auto kv_read = [&](const TensorView& t, int64_t j, int64_t d) {
      if (paged) {
        const TensorView& bt = *a.block_table;
        const int64_t blk = static_cast<const int32_t*>(
            bt.data)[bt.offset + b * bt.strides[0] + (j / block_size) * bt.strides[1]];
        return read(t, {blk, j % block_size, 0, d});
      }
      if (kv_tnd) return read(t, {kv_first + j, 0, d});
      return read(t, {b, j, 0, d});
    };

    for (int64_t i = 0; i < lq; ++i) {
      const int64_t row = q_first + i;
      auto q_read = [&](const TensorView& t, int64_t h, int64_t d) {
        return q_tnd ? read(t, {row, h, d}) : read(t, {b, i, h, d});
      };
      // §3.4 step 1: threshold.
      const int64_t thr = a.sparse_mode == 3 ? lkv - lq + i + 1 : lkv;
      if (a.sparse_mode == 3 && thr <= 0) {
        r.row_kind[row] = SfaRowKind::kInvalid;
        continue;  // zeros and max = sum = 0, even with sinks (decision #17)
      }
      // Mode 0 with an empty KV sequence (thr = 0) is a valid row with an empty selection.
      // Step 2: selection.
      std::vector<int32_t> idx(k_size);
      for (int64_t k = 0; k < k_size; ++k)
        idx[k] = static_cast<int32_t>(q_tnd ? read(a.sparse_indices, {row, 0, k})
                                            : read(a.sparse_indices, {b, i, 0, k}));
      const std::vector<int64_t> sel = sfa_reference_select(idx, thr, sbs);
      r.selected[row] = static_cast<int64_t>(sel.size());
      r.row_kind[row] = sel.empty() ? SfaRowKind::kEmpty : SfaRowKind::kNormal;

      // Step 3: gather (value from `value`, decision #14).
      const int64_t n = static_cast<int64_t>(sel.size());
      std::vector<double> kn(n * (kNope + kRope)), vv(n * kNope);
      double vmax = 0.0;
      for (int64_t s = 0; s < n; ++s) {
        for (int64_t d = 0; d < kNope; ++d) {
          kn[s * (kNope + kRope) + d] = kv_read(a.key, sel[s], d);
          vv[s * kNope + d] = kv_read(value, sel[s], d);
          // The tolerance scale: finite values only (a NaN/inf element is checked exactly).
          if (std::isfinite(vv[s * kNope + d])) vmax = std::max(vmax, std::fabs(vv[s * kNope + d]));
        }
        for (int64_t d = 0; d < kRope; ++d)
          kn[s * (kNope + kRope) + kNope + d] = kv_read(a.key_rope, sel[s], d);
      }
      r.v_absmax[row] = vmax;

      for (int64_t h = 0; h < n1; ++h) {
        std::vector<double> qh(kNope + kRope);
        for (int64_t d = 0; d < kNope; ++d) qh[d] = q_read(a.query, h, d);
        for (int64_t d = 0; d < kRope; ++d) qh[kNope + d] = q_read(a.query_rope, h, d);
        // Step 4: scores.
        std::vector<double> sc(n);
        for (int64_t s = 0; s < n; ++s) {
          double dot = 0.0;
          for (int64_t d = 0; d < kNope + kRope; ++d) dot += qh[d] * kn[s * (kNope + kRope) + d];
          sc[s] = dot * scale;
        }
        // Step 5: softmax with the optional sink (max and denominator only). IEEE arithmetic
        // throughout: a NaN score or sink makes m, l and the row NaN; m = +inf gives
        // exp(inf - inf) = NaN in l; m = -inf (every score and the sink -inf) gives
        // exp(-inf - -inf) = NaN in l.
        const bool sink = a.sinks && a.sinks->data;
        const double sigma = sink ? read(*a.sinks, {h}) : 0.0;
        double m = -std::numeric_limits<double>::infinity();
        for (double x : sc) m = nan_max(m, x);
        if (sink) m = nan_max(m, sigma);
        if (n == 0 && !sink) continue;  // step 6: zeros, max = sum = 0
        double l = 0.0;
        std::vector<double> e(n);
        for (int64_t s = 0; s < n; ++s) l += e[s] = std::exp(sc[s] - m);
        if (sink) l += std::exp(sigma - m);
        for (int64_t d = 0; d < kNope; ++d) {
          double o = 0.0;
          for (int64_t s = 0; s < n; ++s) o += e[s] * vv[s * kNope + d];
          r.attention[r.index(row, h, d)] = o / l;
        }
        r.softmax_max[r.row(row, h)] = m;
        r.softmax_sum[r.row(row, h)] = l;
      }
    }
  }
  r.rounded.resize(r.attention.size());
  for (size_t i = 0; i < r.attention.size(); ++i)
    r.rounded[i] = ifa_round_to_dtype(r.attention[i], a.attention_out.dtype);
  return r;
}

}  // namespace kvflash::reference
