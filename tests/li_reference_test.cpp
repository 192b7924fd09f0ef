// The LightningIndexer oracle (reference/li_reference.*) against a direct brute force written
// here from the case descriptions (lengths from the LiCase, not from the tensors; selection by
// repeated arg-max, not a sort), and against small hand-computed cases: ties, NaN, negative
// weights, causal thresholds, padding rows, value rounding, faults.
#include "li_reference.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>

#include "ifa_reference.hpp"  // ifa_round_to_dtype
#include "support/elements.hpp"
#include "support/li_cases.hpp"

namespace kvflash::testing {
namespace {

using reference::LiCall;
using reference::LiReference;
using reference::LiRowKind;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int64_t kD = reference::kLiHeadDim;

// ---- brute force over the case list ----------------------------------------------------------

bool better(double a, double b) {  // NaN first, then larger; equal is not better
  if (std::isnan(a)) return !std::isnan(b);
  return !std::isnan(b) && a > b;
}

TEST(LiReference, EqualsBruteForceOnTheCaseList) {
  int64_t checked = 0;
  for (const LiCase& c : li_cases(Tier::kCi)) {
    if (c.fault != LiFault::kNone || c.work() > (int64_t{1} << 20)) continue;
    SCOPED_TRACE(c.name());
    LiCaseData data(c);
    const LiCall& call = data.call();
    const LiReference ref = reference::li_reference(call);
    const bool q_tnd = c.q_layout == LiQLayout::kTnd;
    const int64_t s1 = q_tnd ? 0 : call.query.shape[1];
    const int64_t kk = c.sparse_count;
    ASSERT_TRUE(ref.fault.empty());
    std::vector<char> row_seen(ref.num_rows, 0);
    int64_t q_first = 0, kv_first = 0;
    for (int64_t b = 0; b < c.batch(); ++b) {
      const int64_t lq = c.q_lens[b], lkv = c.kv_lens[b];
      for (int64_t i = 0; i < lq; ++i) {
        const int64_t r = q_tnd ? q_first + i : b * s1 + i;
        row_seen[r] = 1;
        const int64_t thr = c.sparse_mode == 3 ? lkv - lq + i + 1 : lkv;
        const int64_t n = std::max<int64_t>(std::min(thr, lkv), 0);
        ASSERT_EQ(ref.row_kind[r], n > 0 ? LiRowKind::kNormal : LiRowKind::kEmpty) << "row " << r;
        if (n == 0) continue;
        ASSERT_EQ(ref.valid[r], n);
        std::vector<double> s(n), qx(c.num_heads * kD), kx(kD);
        for (int64_t h = 0; h < c.num_heads; ++h)
          for (int64_t d = 0; d < kD; ++d)
            qx[h * kD + d] = q_tnd ? load_element(call.query, {r, h, d})
                                   : load_element(call.query, {b, i, h, d});
        for (int64_t j = 0; j < n; ++j) {
          for (int64_t d = 0; d < kD; ++d) {
            if (c.k_layout == LiKLayout::kPaBsnd) {
              const double blk = load_element(*call.block_table, {b, j / c.block_size});
              kx[d] = load_element(call.key, {static_cast<int64_t>(blk), j % c.block_size, 0, d});
            } else if (c.k_layout == LiKLayout::kTnd) {
              kx[d] = load_element(call.key, {kv_first + j, 0, d});
            } else {
              kx[d] = load_element(call.key, {b, j, 0, d});
            }
          }
          double acc = 0.0;
          for (int64_t h = 0; h < c.num_heads; ++h) {
            double dot = 0.0;
            for (int64_t d = 0; d < kD; ++d) dot += qx[h * kD + d] * kx[d];
            const double w =
                q_tnd ? load_element(call.weights, {r, h}) : load_element(call.weights, {b, i, h});
            acc += w * (dot > 0 || std::isnan(dot) ? dot : 0.0);
          }
          s[j] = acc;
          ASSERT_TRUE(s[j] == ref.key_score(r, j) ||
                      (std::isnan(s[j]) && std::isnan(ref.key_score(r, j))))
              << "row " << r << " key " << j;
        }
        std::vector<char> taken(n, 0);
        for (int64_t k = 0; k < kk; ++k) {
          int64_t best = -1;
          for (int64_t j = 0; j < n; ++j)
            if (!taken[j] && (best < 0 || better(s[j], s[best]))) best = j;
          ASSERT_EQ(ref.indices[ref.slot(r, k)], best) << "row " << r << " slot " << k;
          if (best < 0) {
            ASSERT_EQ(ref.values[ref.slot(r, k)], -kInf);
            continue;
          }
          taken[best] = 1;
          const double want = reference::ifa_round_to_dtype(s[best], c.dtype);
          const double got = ref.values[ref.slot(r, k)];
          ASSERT_TRUE(got == want || (std::isnan(got) && std::isnan(want)));
        }
        ++checked;
      }
      q_first += lq;
      kv_first += lkv;
    }
    for (int64_t r = 0; r < ref.num_rows; ++r) {
      if (row_seen[r]) continue;
      ASSERT_EQ(ref.row_kind[r], LiRowKind::kPadding) << "row " << r;
      for (int64_t k = 0; k < kk; ++k) ASSERT_EQ(ref.indices[ref.slot(r, k)], -1);
    }
  }
  EXPECT_GT(checked, 300);
}

// ---- hand cases ------------------------------------------------------------------------------

// Owns small contiguous tensors filled from doubles.
class Hand {
 public:
  TensorView make(DType dt, std::vector<int64_t> shape, const std::vector<double>& v) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    bufs_.emplace_back(static_cast<size_t>(n) * dtype_size(dt) + 8);
    TensorView t = TensorView::contiguous(bufs_.back().data(), dt,
                                          std::span<const int64_t>(shape.data(), shape.size()));
    for (int64_t i = 0; i < n; ++i)
      store_element(t, i, i < static_cast<int64_t>(v.size()) ? v[i] : 0);
    return t;
  }

 private:
  std::vector<std::vector<char>> bufs_;
};

// One BSND batch, N1 heads, key rows given by their first two elements (the rest 0); query
// head h = (q0[h], q1[h], 0, ...).
struct Tiny {
  Hand hand;
  LiCall call;
  Tiny(int64_t s1, const std::vector<std::vector<double>>& q01, const std::vector<double>& w,
       const std::vector<std::vector<double>>& k01, int64_t sparse_count, int64_t mode,
       std::vector<double> qlen = {}, DType dt = DType::kBFloat16) {
    const int64_t n1 = static_cast<int64_t>(w.size()) / s1;
    const int64_t s2 = static_cast<int64_t>(k01.size());
    std::vector<double> q(s1 * n1 * kD, 0.0), k(s2 * kD, 0.0);
    for (int64_t r = 0; r < s1 * n1; ++r) {
      q[r * kD] = q01[r][0];
      q[r * kD + 1] = q01[r][1];
    }
    for (int64_t j = 0; j < s2; ++j) {
      k[j * kD] = k01[j][0];
      k[j * kD + 1] = k01[j][1];
    }
    call.query = hand.make(dt, {1, s1, n1, kD}, q);
    call.key = hand.make(dt, {1, s2, 1, kD}, k);
    call.weights = hand.make(DType::kFloat32, {1, s1, n1}, w);
    if (!qlen.empty()) call.actual_seq_lengths_query = hand.make(DType::kInt32, {1}, qlen);
    call.sparse_count = sparse_count;
    call.sparse_mode = mode;
    call.return_value = true;
    call.sparse_indices = hand.make(DType::kInt32, {1, s1, 1, sparse_count}, {});
  }
};

std::vector<int32_t> row_indices(const LiReference& r, int64_t row) {
  return std::vector<int32_t>(r.indices.begin() + r.slot(row, 0),
                              r.indices.begin() + r.slot(row, r.sparse_count));
}
std::vector<double> row_values(const LiReference& r, int64_t row) {
  return std::vector<double>(r.values.begin() + r.slot(row, 0),
                             r.values.begin() + r.slot(row, r.sparse_count));
}

TEST(LiReference, TiesGoToTheLowerIndexAndShortRowsPadWithMinusOne) {
  // One head, w = 2: scores 2 * relu(k0) = {6, 0, 10, 10, 0}.
  Tiny t(1, {{1, 0}}, {2}, {{3, 0}, {-1, 0}, {5, 0}, {5, 0}, {0, 0}}, 4, 0);
  LiReference r = reference::li_reference(t.call);
  EXPECT_EQ(row_indices(r, 0), (std::vector<int32_t>{2, 3, 0, 1}));
  EXPECT_EQ(row_values(r, 0), (std::vector<double>{10, 10, 6, 0}));
  Tiny u(1, {{1, 0}}, {2}, {{3, 0}, {-1, 0}, {5, 0}, {5, 0}, {0, 0}}, 8, 0);
  r = reference::li_reference(u.call);
  EXPECT_EQ(row_indices(r, 0), (std::vector<int32_t>{2, 3, 0, 1, 4, -1, -1, -1}));
  EXPECT_EQ(row_values(r, 0)[5], -kInf);
}

TEST(LiReference, NaNScoresRankFirstInIndexOrder) {
  Tiny t(1, {{1, 0}}, {1}, {{3, 0}, {kNaN, 0}, {5, 0}, {kNaN, 1}, {-2, 0}}, 5, 0);
  const LiReference r = reference::li_reference(t.call);
  EXPECT_EQ(row_indices(r, 0), (std::vector<int32_t>{1, 3, 2, 0, 4}));
  EXPECT_TRUE(std::isnan(row_values(r, 0)[0]) && std::isnan(row_values(r, 0)[1]));
  // A NaN weight makes every score NaN: the first K keys in index order.
  Tiny w(1, {{1, 0}}, {kNaN}, {{3, 0}, {4, 0}, {5, 0}}, 2, 0);
  EXPECT_EQ(row_indices(reference::li_reference(w.call), 0), (std::vector<int32_t>{0, 1}));
}

TEST(LiReference, WeightedHeadSumAndNegativeWeights) {
  // Two heads: q0 = (1, 0), q1 = (0, 1); w = (1, -1). score = relu(k0) - relu(k1).
  Tiny t(1, {{1, 0}, {0, 1}}, {1, -1}, {{2, 3}, {1, -5}, {-1, 0.5}, {0, 0}}, 4, 0);
  const LiReference r = reference::li_reference(t.call);
  // scores: {-1, 1, -0.5, 0}
  EXPECT_EQ(row_indices(r, 0), (std::vector<int32_t>{1, 3, 2, 0}));
  EXPECT_EQ(row_values(r, 0), (std::vector<double>{1, 0, -0.5, -1}));
  EXPECT_DOUBLE_EQ(r.key_magnitude(0, 0), 2 + 3);  // |w| * sum |q k| per head
}

TEST(LiReference, CausalThresholdIsRightAligned) {
  // S1 = 3, S2 = 4, mode 3: row i sees j < 4 - 3 + i + 1 = i + 2. Scores = k0.
  const std::vector<std::vector<double>> k = {{1, 0}, {2, 0}, {3, 0}, {4, 0}};
  Tiny t(3, {{1, 0}, {1, 0}, {1, 0}}, {1, 1, 1}, k, 3, 3);
  LiReference r = reference::li_reference(t.call);
  EXPECT_EQ(row_indices(r, 0), (std::vector<int32_t>{1, 0, -1}));
  EXPECT_EQ(row_indices(r, 1), (std::vector<int32_t>{2, 1, 0}));
  EXPECT_EQ(row_indices(r, 2), (std::vector<int32_t>{3, 2, 1}));
  // S1 = 3 > S2 = 1: thresholds -1, 0, 1: two empty rows, then key 0.
  Tiny u(3, {{1, 0}, {1, 0}, {1, 0}}, {1, 1, 1}, {{1, 0}}, 2, 3);
  r = reference::li_reference(u.call);
  EXPECT_EQ(r.row_kind[0], LiRowKind::kEmpty);
  EXPECT_EQ(r.row_kind[1], LiRowKind::kEmpty);
  EXPECT_EQ(row_indices(r, 1), (std::vector<int32_t>{-1, -1}));
  EXPECT_EQ(row_indices(r, 2), (std::vector<int32_t>{0, -1}));
  // Mode 0: every row sees all keys.
  Tiny m(3, {{1, 0}, {1, 0}, {1, 0}}, {1, 1, 1}, k, 2, 0);
  r = reference::li_reference(m.call);
  for (int64_t row = 0; row < 3; ++row)
    EXPECT_EQ(row_indices(r, row), (std::vector<int32_t>{3, 2}));
}

TEST(LiReference, BsndPaddingRowsAreMinusOne) {
  // S1 = 3 with actual_seq_lengths_query = [1]: rows 1 and 2 are padding (mode 3 thresholds use
  // S1_b = 1, so row 0 sees every key).
  Tiny t(3, {{1, 0}, {kNaN, kNaN}, {kNaN, kNaN}}, {1, kNaN, kNaN}, {{1, 0}, {2, 0}}, 2, 3, {1});
  const LiReference r = reference::li_reference(t.call);
  EXPECT_EQ(row_indices(r, 0), (std::vector<int32_t>{1, 0}));
  EXPECT_EQ(r.row_kind[1], LiRowKind::kPadding);
  EXPECT_EQ(row_indices(r, 2), (std::vector<int32_t>{-1, -1}));
  EXPECT_EQ(row_values(r, 2), (std::vector<double>{-kInf, -kInf}));
}

TEST(LiReference, ValuesAreRoundedOnceToNearestEven) {
  // score = 1 + 2^-8 exactly (q = (1, 1), k = (1, 2^-8)): halfway between bf16 1 and 1 + 2^-7,
  // so RNE gives 1 (an fp32 intermediate would not change that: 1 + 2^-8 is an fp32).
  Tiny t(1, {{1, 1}}, {1}, {{1, 0x1p-8}, {1, 3 * 0x1p-8}}, 2, 0);
  const LiReference r = reference::li_reference(t.call);
  EXPECT_EQ(row_indices(r, 0), (std::vector<int32_t>{1, 0}));
  // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: even is 1 + 2^-6.
  EXPECT_EQ(row_values(r, 0), (std::vector<double>{1 + 0x1p-6, 1.0}));
}

TEST(LiReference, BadDeviceDataFaultsTheBatch) {
  LiCase c;
  c.k_layout = LiKLayout::kPaBsnd;
  c.q_lens = {1, 2};
  c.kv_lens = {20, 40};
  c.return_value = true;
  c.fault = LiFault::kBlockId;
  LiCaseData data(c);
  const LiReference r = reference::li_reference(data.call());
  EXPECT_NE(r.fault.find("block_table[1][2]"), std::string::npos) << r.fault;
  EXPECT_EQ(r.row_kind[0], LiRowKind::kNormal);  // batch 0 is computed
  EXPECT_EQ(r.row_kind[2], LiRowKind::kFault);
  EXPECT_EQ(r.row_kind[3], LiRowKind::kFault);
  EXPECT_EQ(row_indices(r, 3)[0], -1);
  EXPECT_TRUE(std::isnan(row_values(r, 3)[0]));
}

TEST(LiReference, ScoreOrderPutsNaNFirstAndZerosEqual) {
  EXPECT_TRUE(reference::li_score_above(kNaN, kInf));
  EXPECT_FALSE(reference::li_score_above(kNaN, kNaN));
  EXPECT_TRUE(reference::li_score_above(kInf, 1e300));
  EXPECT_TRUE(reference::li_score_above(-1e300, -kInf));
  EXPECT_FALSE(reference::li_score_above(0.0, -0.0));
  EXPECT_FALSE(reference::li_score_above(-0.0, 0.0));
}

}  // namespace
}  // namespace kvflash::testing
