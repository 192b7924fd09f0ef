#include "support/li_compare.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <sstream>
#include <utility>
#include <vector>

#include "ifa_reference.hpp"  // ifa_round_to_dtype
#include "support/elements.hpp"

namespace kvflash::testing {
namespace {

using reference::LiRowKind;

// (class, value): NaN 3 > +inf 2 > finite 1 > -inf 0; the value only orders finite scores.
using Rank = std::pair<int, double>;

int score_class(double s) {
  if (std::isnan(s)) return 3;
  if (std::isinf(s)) return s > 0 ? 2 : 0;
  return 1;
}

struct Failure {
  int64_t count = 0;
  double worst = -1.0;  // how badly (in tolerances) the worst one failed; inf for exact rules
  std::string first, worst_msg;
  void add(double how_bad, const std::string& msg) {
    if (count++ == 0) first = msg;
    if (how_bad > worst) {
      worst = how_bad;
      worst_msg = msg;
    }
  }
};

}  // namespace

double li_score_tolerance(double magnitude, int64_t num_heads) {
  return static_cast<double>(reference::kLiHeadDim + num_heads + 2) * 0x1p-24 * 1.01 * magnitude +
         0x1p-100;
}

::testing::AssertionResult compare_li_output(const std::string& name, const reference::LiCall& call,
                                             const reference::LiReference& ref,
                                             bool expect_mostly_empty, LiCompareStats* stats) {
  const bool q_tnd = call.layout_query == "TND";
  const int64_t s1 = q_tnd ? 0 : call.query.shape[1];
  const int64_t n1 = call.query.shape[q_tnd ? 1 : 2];
  const int64_t kk = ref.sparse_count;
  const bool values = call.return_value && call.sparse_values;
  // The values' dtype: the query's, or fp32 (the C++ API's unrounded scores: within the score
  // tolerance alone).
  const DType vt = values ? call.sparse_values->dtype : call.query.dtype;
  const double u2 = vt == DType::kFloat32 ? 0.0 : vt == DType::kFloat16 ? 0x1p-10 : 0x1p-7;
  const double sub = vt == DType::kFloat32 ? 0x1p-149 : vt == DType::kFloat16 ? 0x1p-24 : 0x1p-133;
  LiCompareStats st;
  Failure fail;

  const auto at = [&](const TensorView& v, int64_t r, int64_t k) {
    return q_tnd ? load_element(v, {r, 0, k}) : load_element(v, {r / s1, r % s1, 0, k});
  };
  const auto where = [&](int64_t r, int64_t k) {
    std::ostringstream o;
    o << "row " << r << " (" << ref.valid[r] << " valid keys) slot " << k << ": ";
    return o.str();
  };

  std::vector<double> idx(kk), val(kk);
  for (int64_t r = 0; r < ref.num_rows; ++r) {
    for (int64_t k = 0; k < kk; ++k) {
      idx[k] = at(call.sparse_indices, r, k);
      val[k] = values ? at(*call.sparse_values, r, k) : 0.0;
    }
    st.slots += kk;
    const LiRowKind kind = ref.row_kind[r];
    const int64_t n = kind == LiRowKind::kNormal ? ref.valid[r] : 0;
    const int64_t c = std::min(n, kk);
    // Slots past the selection.
    for (int64_t k = c; k < kk; ++k) {
      if (idx[k] != -1) {
        fail.add(INFINITY, where(r, k) + "index " + std::to_string(idx[k]) + ", expected -1");
      }
      if (values) {
        const bool ok =
            kind == LiRowKind::kFault ? std::isnan(val[k]) : (std::isinf(val[k]) && val[k] < 0);
        if (!ok) {
          fail.add(INFINITY, where(r, k) + "value " + std::to_string(val[k]) + ", expected " +
                                 (kind == LiRowKind::kFault ? "NaN" : "-inf"));
        }
      }
    }
    if (kind != LiRowKind::kNormal) {
      ++st.other_rows;
      continue;
    }
    ++st.normal_rows;

    // Per key: rank bounds and the exact-tie group (a stable sort of the row's keys).
    std::vector<Rank> lo(n), hi(n);
    for (int64_t j = 0; j < n; ++j) {
      const double s = ref.key_score(r, j);
      const int cl = score_class(s);
      const double t = li_score_tolerance(ref.key_magnitude(r, j), n1);
      lo[j] = {cl, cl == 1 ? s - t : 0.0};
      hi[j] = {cl, cl == 1 ? s + t : 0.0};
    }
    std::vector<int64_t> order(n);
    std::iota(order.begin(), order.end(), int64_t{0});
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return reference::li_score_above(ref.key_score(r, a), ref.key_score(r, b));
    });
    std::vector<int64_t> group(n), rank_in_group(n), group_taken;
    for (int64_t p = 0; p < n; ++p) {
      const int64_t j = order[p];
      const bool same =
          p > 0 && !reference::li_score_above(ref.key_score(r, order[p - 1]), ref.key_score(r, j));
      if (!same) group_taken.push_back(0);
      group[j] = static_cast<int64_t>(group_taken.size()) - 1;
      rank_in_group[j] = same ? rank_in_group[order[p - 1]] + 1 : 0;
    }

    // Indices: valid and distinct.
    std::vector<char> chosen(n, 0);
    bool indices_ok = true;
    for (int64_t k = 0; k < c; ++k) {
      const double x = idx[k];
      if (!(x >= 0 && x < static_cast<double>(n)) || chosen[static_cast<int64_t>(x)]) {
        fail.add(INFINITY, where(r, k) + "index " + std::to_string(x) +
                               (x >= 0 && x < n ? " repeated" : " is not a valid key"));
        indices_ok = false;
        continue;
      }
      chosen[static_cast<int64_t>(x)] = 1;
    }
    if (!indices_ok) continue;

    // The set: no unselected key clearly above a selected one; exact ties take the lowest index.
    int64_t best_out = -1, worst_in = -1;
    for (int64_t j = 0; j < n; ++j) {
      if (chosen[j]) {
        ++group_taken[group[j]];
        if (worst_in < 0 || hi[j] < hi[worst_in]) worst_in = j;
      } else if (best_out < 0 || lo[j] > lo[best_out]) {
        best_out = j;
      }
    }
    if (best_out >= 0 && worst_in >= 0 && lo[best_out] > hi[worst_in]) {
      const double how = lo[best_out].first != hi[worst_in].first
                             ? INFINITY
                             : (lo[best_out].second - hi[worst_in].second) /
                                   (hi[worst_in].second - lo[worst_in].second);
      fail.add(how, where(r, -1) + "key " + std::to_string(best_out) + " (score " +
                        std::to_string(ref.key_score(r, best_out)) + ") not selected, key " +
                        std::to_string(worst_in) + " (score " +
                        std::to_string(ref.key_score(r, worst_in)) + ") selected");
    }
    for (int64_t j = 0; j < n; ++j) {
      if (chosen[j] && rank_in_group[j] >= group_taken[group[j]]) {
        fail.add(INFINITY, where(r, -1) + "key " + std::to_string(j) +
                               " selected over a lower-indexed key of exactly equal score");
      }
    }

    // The order, and the values.
    Rank min_hi{4, 0.0};
    std::vector<int64_t> last_in_group(group_taken.size(), -1);
    for (int64_t k = 0; k < c; ++k) {
      const int64_t j = static_cast<int64_t>(idx[k]);
      if (lo[j] > min_hi) {
        fail.add(lo[j].first != min_hi.first ? INFINITY : 1.0,
                 where(r, k) + "key " + std::to_string(j) + " (score " +
                     std::to_string(ref.key_score(r, j)) +
                     ") comes after a key it clearly ranks above");
      }
      min_hi = std::min(min_hi, hi[j]);
      if (last_in_group[group[j]] > j) {
        fail.add(INFINITY, where(r, k) + "key " + std::to_string(j) + " after key " +
                               std::to_string(last_in_group[group[j]]) + " of exactly equal score");
      }
      last_in_group[group[j]] = j;
      if (k > 0 && reference::li_score_above(ref.key_score(r, j),
                                             ref.key_score(r, static_cast<int64_t>(idx[k - 1])))) {
        ++st.near_tie_swaps;
      }
      if (values) {
        const double s = ref.key_score(r, j);
        const double want = reference::ifa_round_to_dtype(s, vt);
        const double got = val[k];
        if ((std::isnan(want) && std::isnan(got)) || got == want) continue;
        const double allow =
            u2 * std::fabs(s) + (1 + u2) * li_score_tolerance(ref.key_magnitude(r, j), n1) + sub;
        const double ratio = std::fabs(got - s) / allow;  // NaN when got is NaN: fails below
        if (!(ratio <= 1.0)) {
          fail.add(std::isnan(ratio) ? INFINITY : ratio,
                   where(r, k) + "value " + std::to_string(got) + " for key " + std::to_string(j) +
                       ", reference " + std::to_string(s));
        } else {
          st.worst_value_ratio = std::max(st.worst_value_ratio, ratio);
        }
      }
    }
  }
  if (stats != nullptr) *stats = st;
  if (fail.count > 0) {
    return ::testing::AssertionFailure()
           << name << ": " << fail.count << " violation(s); first: " << fail.first
           << "; worst: " << fail.worst_msg;
  }
  if (st.normal_rows == 0 && !expect_mostly_empty) {
    return ::testing::AssertionFailure()
           << name << ": the reference selects nothing in any row (the case proves nothing)";
  }
  return ::testing::AssertionSuccess();
}

}  // namespace kvflash::testing
