#include "li_reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "element_access.hpp"
#include "ifa_reference.hpp"  // ifa_round_to_dtype: one rounding rule for every oracle

namespace kvflash::reference {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// An entry of an integer tensor, exact for int32 and int64 (the length tensors' dtypes and the
// block table's; a double would round int64 entries above 2^53).
int64_t read_int(const TensorView& v, std::initializer_list<int64_t> idx) {
  if (v.dtype != DType::kInt32 && v.dtype != DType::kInt64)
    return static_cast<int64_t>(load_element(v, idx));
  int64_t at = v.offset;
  int axis = 0;
  for (int64_t i : idx) at += i * v.strides[axis++];
  return v.dtype == DType::kInt64 ? static_cast<const int64_t*>(v.data)[at]
                                  : static_cast<const int32_t*>(v.data)[at];
}

std::string str(int64_t v) { return std::to_string(v); }

// ReLU that keeps NaN (std::max(0.0, NaN) would return 0).
double relu(double x) { return std::isnan(x) || x > 0.0 ? x : 0.0; }

}  // namespace

bool li_score_above(double a, double b) {
  if (std::isnan(a)) return !std::isnan(b);
  if (std::isnan(b)) return false;
  return a > b;
}

LiReference li_reference(const LiCall& c) {
  const bool q_tnd = c.layout_query == "TND";
  const bool k_tnd = c.layout_key == "TND";
  const bool paged = c.layout_key == "PA_BSND";
  const TensorView& q = c.query;
  const TensorView& w = c.weights;
  const int64_t n1 = q.shape[q_tnd ? 1 : 2];
  const int64_t s1 = q_tnd ? 0 : q.shape[1];
  const int64_t t1 = q_tnd ? q.shape[0] : 0;
  const int64_t batch = q_tnd ? c.actual_seq_lengths_query->shape[0] : q.shape[0];
  const int64_t kk = c.sparse_count;
  const bool has_asq = c.actual_seq_lengths_query && c.actual_seq_lengths_query->data;
  const bool has_ask = c.actual_seq_lengths_key && c.actual_seq_lengths_key->data;
  // Key capacity of one batch: what a per-batch length may be at most.
  const int64_t block_size = paged ? c.key.shape[1] : 0;
  const int64_t num_blocks = paged ? c.key.shape[0] : 0;
  const int64_t kv_cap = paged   ? c.block_table->shape[1] * block_size
                         : k_tnd ? c.key.shape[0]
                                 : c.key.shape[1];

  LiReference r;
  r.num_rows = q_tnd ? t1 : batch * s1;
  r.sparse_count = kk;
  r.row_kind.assign(r.num_rows, LiRowKind::kPadding);
  r.batch.assign(r.num_rows, -1);
  r.valid.assign(r.num_rows, 0);
  r.key_begin.assign(r.num_rows, 0);
  r.indices.assign(r.num_rows * kk, -1);
  r.values.assign(r.num_rows * kk, kNegInf);
  const auto note_fault = [&r](const std::string& what) {
    if (r.fault.empty()) r.fault = what;
  };

  // TND query prefix sums that are not a non-decreasing sequence in [0, T] leave no row with a
  // known batch: the whole call is faulted (D10).
  if (q_tnd) {
    int64_t prev = 0;
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t cur = read_int(*c.actual_seq_lengths_query, {b});
      if (cur < prev || cur > t1) {
        note_fault("actual_seq_lengths_query[" + str(b) + "] (" + str(cur) +
                   ") must be a prefix sum in [" + str(prev) + ", " + str(t1) + "]");
        r.row_kind.assign(r.num_rows, LiRowKind::kFault);
        r.values.assign(r.num_rows * kk, kNaN);
        return r;
      }
      prev = cur;
    }
  }

  for (int64_t b = 0; b < batch; ++b) {
    // docs/fia-pfa-indexer.md §3.3 per-batch lengths.
    int64_t lq, q_first;
    if (q_tnd) {
      q_first = b == 0 ? 0 : read_int(*c.actual_seq_lengths_query, {b - 1});
      lq = read_int(*c.actual_seq_lengths_query, {b}) - q_first;
    } else {
      q_first = b * s1;
      lq = has_asq ? read_int(*c.actual_seq_lengths_query, {b}) : s1;
    }
    int64_t lkv, kv_first = 0, kv_end = 0;
    if (k_tnd) {
      kv_first = b == 0 ? 0 : read_int(*c.actual_seq_lengths_key, {b - 1});
      kv_end = read_int(*c.actual_seq_lengths_key, {b});
      // Only an ordered, non-negative pair is subtracted (int64 entries could overflow).
      lkv = kv_first >= 0 && kv_end >= kv_first ? kv_end - kv_first : -1;
    } else {
      lkv = has_ask ? read_int(*c.actual_seq_lengths_key, {b}) : c.key.shape[1];
    }
    // Rows this batch owns: BSND all S1 of them (padding rows included), TND its prefix range.
    const int64_t own = q_tnd ? lq : s1;
    for (int64_t i = 0; i < own; ++i) r.batch[q_first + i] = b;

    // D10: device data checked before anything is read; a bad entry faults the batch's rows.
    bool fault = false;
    if (!q_tnd && (lq < 0 || lq > s1)) {
      note_fault("actual_seq_lengths_query[" + str(b) + "] (" + str(lq) + ") must be in [0, " +
                 str(s1) + "]");
      fault = true;
    }
    if (k_tnd ? (kv_first < 0 || lkv < 0 || kv_end > kv_cap) : (lkv < 0 || lkv > kv_cap)) {
      note_fault(k_tnd ? "actual_seq_lengths_key[" + str(b) + "] (" + str(kv_end) +
                             ") must be a prefix sum in [" + str(std::max<int64_t>(kv_first, 0)) +
                             ", " + str(kv_cap) + "]"
                       : "actual_seq_lengths_key[" + str(b) + "] (" + str(lkv) +
                             ") must be in [0, " + str(kv_cap) + "]");
      fault = true;
    }
    // Every block a row of the batch reads: rows exist only when lq > 0, and the last one's
    // valid range is the whole [0, lkv) in both modes.
    if (!fault && paged && lq > 0) {
      for (int64_t slot = 0; slot * block_size < lkv; ++slot) {
        const int64_t id = read_int(*c.block_table, {b, slot});
        if (id < 0 || id >= num_blocks) {
          note_fault("block_table[" + str(b) + "][" + str(slot) + "] (" + str(id) +
                     ") must be a block id in [0, " + str(num_blocks) + ")");
          fault = true;
          break;
        }
      }
    }
    if (fault) {
      for (int64_t i = 0; i < own; ++i) {
        r.row_kind[q_first + i] = LiRowKind::kFault;
        for (int64_t k = 0; k < kk; ++k) r.values[r.slot(q_first + i, k)] = kNaN;
      }
      continue;
    }

    auto k_read = [&](int64_t j, int64_t d) {
      if (paged) {
        const int64_t blk = read_int(*c.block_table, {b, j / block_size});
        return load_element(c.key, {blk, j % block_size, 0, d});
      }
      if (k_tnd) return load_element(c.key, {kv_first + j, 0, d});
      return load_element(c.key, {b, j, 0, d});
    };

    for (int64_t i = 0; i < lq; ++i) {
      const int64_t row = q_first + i;
      // D9: sparse_mode 3 admits j < S2_b - S1_b + i + 1 (nothing when that is <= 0).
      const int64_t n = std::clamp<int64_t>(c.sparse_mode == 3 ? lkv - lq + i + 1 : lkv, 0, lkv);
      if (n == 0) {
        r.row_kind[row] = LiRowKind::kEmpty;
        continue;
      }
      r.row_kind[row] = LiRowKind::kNormal;
      r.valid[row] = n;
      r.key_begin[row] = static_cast<int64_t>(r.score.size());

      std::vector<double> qv(n1 * kLiHeadDim), wv(n1);
      for (int64_t h = 0; h < n1; ++h) {
        wv[h] = q_tnd ? load_element(w, {row, h}) : load_element(w, {b, i, h});
        for (int64_t d = 0; d < kLiHeadDim; ++d)
          qv[h * kLiHeadDim + d] =
              q_tnd ? load_element(q, {row, h, d}) : load_element(q, {b, i, h, d});
      }
      std::vector<double> kv(kLiHeadDim);
      for (int64_t j = 0; j < n; ++j) {
        for (int64_t d = 0; d < kLiHeadDim; ++d) kv[d] = k_read(j, d);
        double s = 0.0, mag = 0.0;
        for (int64_t h = 0; h < n1; ++h) {
          double dot = 0.0, adot = 0.0;
          for (int64_t d = 0; d < kLiHeadDim; ++d) {
            dot += qv[h * kLiHeadDim + d] * kv[d];
            adot += std::fabs(qv[h * kLiHeadDim + d] * kv[d]);
          }
          s += wv[h] * relu(dot);
          mag += std::fabs(wv[h]) * adot;
        }
        r.score.push_back(s);
        r.magnitude.push_back(mag);
      }

      // Selection: the min(n, K) best of a stable sort (ties keep the lower index first).
      std::vector<int64_t> order(n);
      std::iota(order.begin(), order.end(), int64_t{0});
      const double* sc = r.score.data() + r.key_begin[row];
      std::stable_sort(order.begin(), order.end(),
                       [sc](int64_t x, int64_t y) { return li_score_above(sc[x], sc[y]); });
      const int64_t take = std::min(n, kk);
      for (int64_t k = 0; k < take; ++k) {
        r.indices[r.slot(row, k)] = static_cast<int32_t>(order[k]);
        r.values[r.slot(row, k)] = ifa_round_to_dtype(sc[order[k]], q.dtype);
      }
    }
  }
  return r;
}

}  // namespace kvflash::reference
