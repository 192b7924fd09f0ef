#include "merge_reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "element_access.hpp"
#include "ifa_reference.hpp"  // ifa_round_to_dtype: one rounding rule for every oracle

namespace kvflash::reference {
namespace {

double read(const TensorView& v, const std::vector<int64_t>& idx) {
  int64_t elem = v.offset;
  for (size_t i = 0; i < idx.size(); ++i) elem += idx[i] * v.strides[i];
  return load_element(v, elem);
}

double nan_max(double a, double b) { return (a > b || std::isnan(a)) ? a : b; }

}  // namespace

MergeReference merge_reference(const MergeArgs& a) {
  // The list form: part k is entry k of the lists, indexed without the leading K.
  const bool lists = !a.partial_out_list.empty();
  const TensorView& po = lists ? a.partial_out_list[0] : *a.partial_out;
  const int lead = lists ? 0 : 1;
  const int row_rank = po.rank - 1 - lead;
  const int64_t parts = lists ? static_cast<int64_t>(a.partial_out_list.size()) : po.shape[0];
  const int64_t dim = po.shape[po.rank - 1];
  int64_t rows = 1;
  for (int i = 0; i < row_rank; ++i) rows *= po.shape[lead + i];
  const bool lse_form = lists || a.partial_lse.has_value();
  const double inf = std::numeric_limits<double>::infinity();

  MergeReference ref;
  ref.num_rows = rows;
  ref.head_dim = dim;
  ref.out.assign(rows * dim, 0.0);
  ref.lse.assign(rows, -inf);
  ref.max.assign(rows, 0.0);
  ref.sum.assign(rows, 0.0);
  ref.out_absmax.assign(rows, 0.0);
  ref.nonempty.assign(rows, false);

  std::vector<int64_t> row(row_rank);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t rest = r;
    for (int i = row_rank - 1; i >= 0; --i) {
      row[i] = rest % po.shape[lead + i];
      rest /= po.shape[lead + i];
    }
    auto at_k = [&](int64_t k) {
      std::vector<int64_t> idx;
      if (!lists) idx.push_back(k);
      idx.insert(idx.end(), row.begin(), row.end());
      return idx;
    };
    const auto part_out = [&](int64_t k) -> const TensorView& {
      return lists ? a.partial_out_list[k] : *a.partial_out;
    };
    // The parts: (m_k, s_k) with lse_k = m_k + log(s_k); lse form: (lse_k, 1).
    std::vector<int64_t> live;
    std::vector<double> m(parts), s(parts, 1.0);
    for (int64_t k = 0; k < parts; ++k) {
      if (lse_form) {
        m[k] = read(lists ? a.partial_lse_list[k] : *a.partial_lse, at_k(k));
        if (m[k] == -inf) continue;  // empty
      } else {
        m[k] = read(*a.partial_max, at_k(k));
        s[k] = read(*a.partial_sum, at_k(k));
        if (s[k] == 0.0) continue;  // empty
      }
      live.push_back(k);
    }
    const bool sink = a.sink.has_value();
    if (live.empty() && !sink) continue;  // zeros, lse -inf, max = sum = 0
    ref.nonempty[r] = true;
    double big_m = -inf;
    for (int64_t k : live) big_m = nan_max(big_m, m[k]);
    const double sigma = sink ? read(*a.sink, row) : 0.0;
    if (sink) big_m = nan_max(big_m, sigma);
    double l = 0.0;
    std::vector<double> w(parts, 0.0);
    for (int64_t k : live) {
      w[k] = s[k] * std::exp(m[k] - big_m);
      l += w[k];
    }
    if (sink) l += std::exp(sigma - big_m);
    for (int64_t d = 0; d < dim; ++d) {
      double acc = 0.0;
      for (int64_t k : live) {
        std::vector<int64_t> idx = at_k(k);
        idx.push_back(d);
        const double x = read(part_out(k), idx);
        acc += w[k] * x;
        if (std::isfinite(x)) ref.out_absmax[r] = std::max(ref.out_absmax[r], std::fabs(x));
      }
      ref.out[r * dim + d] = acc / l;
    }
    ref.lse[r] = big_m + std::log(l);
    ref.max[r] = big_m;
    ref.sum[r] = l;
  }
  ref.rounded.resize(ref.out.size());
  for (size_t i = 0; i < ref.out.size(); ++i) ref.rounded[i] = ifa_round_to_dtype(ref.out[i], a.out.dtype);
  return ref;
}

}  // namespace kvflash::reference
