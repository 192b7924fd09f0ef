// Non-finite inputs (docs/semantics.md §0.2 item 6, docs/conventions.md "Non-finite inputs"): NaN
// and inf in attended data (query, attended K/V rows, pse, antiquant scales and offsets, sinks,
// masked IFA positions) propagate exactly as the double-precision reference propagates them, on
// every ISA and through split-KV merges; data that is never attended never reaches an output.
//
// Each test takes a regular case of the shared lists, plants one or a few non-finite values, checks
// that the reference really is affected the way the test means (so no test passes vacuously), then
// runs the operator at every ISA (IFA also on the emulated matrix engine, support/ifa_run.hpp's
// ifa_paths; SFA on support/sfa_emu_tiles.hpp's) and compares every element (NaN must meet NaN, an
// infinity the same infinity, finite values the usual tolerance). Outputs are prefilled with a
// finite sentinel, so a NaN in the output was written by the kernel.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "core/half.hpp"
#include "ifa_reference.hpp"
#include "kvflash/sfa.hpp"
#include "sfa_reference.hpp"
#include "support/compare.hpp"
#include "support/elements.hpp"
#include "support/ifa_cases.hpp"
#include "support/ifa_run.hpp"
#include "support/sfa_cases.hpp"
#include "support/sfa_compare.hpp"
#include "support/sfa_emu_tiles.hpp"
#include "support/sfa_run.hpp"

namespace kvflash::testing {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// ---- element access through a view -------------------------------------------------------------

int64_t elem_flat(const TensorView& v, int64_t flat) {
  int64_t e = v.offset;
  for (int k = v.rank - 1; k >= 0; --k) {
    const int64_t n = v.shape[k] > 0 ? v.shape[k] : 1;
    e += (flat % n) * v.strides[k];
    flat /= n;
  }
  return e;
}

// Fills a whole output tensor with a finite value, so NaN found there afterwards was written.
void fill_finite(const TensorView& v) {
  std::memset(v.data, 0x11, static_cast<size_t>(v.numel()) * dtype_size(v.dtype));
}

// ---- IFA ---------------------------------------------------------------------------------------

// The base IFA case: two sequences, GQA (2 query heads per kv head), LSE requested.
IfaCase ifa_base(IfaLayout layout = IfaLayout::kBsh) {
  IfaCase c;
  c.layout = layout;
  c.batch = 2;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 64;
  c.kv_lens = {40, 70};
  c.lse = true;
  c.tag = "nonfinite";
  return c;
}

// Element (b, n2, j, d) of the key (which = 0) or value (1) cache, for contiguous or paged KV.
int64_t ifa_kv_elem(const IfaCaseData& data, int which, int64_t b, int64_t n2, int64_t j,
                    int64_t d) {
  const IfaArgs& a = data.args();
  const IfaCase& c = data.spec();
  const TensorView& t = which == 0 ? a.key[0] : a.value[0];
  const int64_t D = c.head_dim;
  if (a.block_table) {
    const int64_t blk = static_cast<int64_t>(load_element(*a.block_table, {b, j / a.block_size}));
    const int64_t o = j % a.block_size;
    if (t.rank == 4) return element_at(t, {blk, n2, o, d});
    return element_at(t, {blk, o, n2 * D + d});
  }
  if (c.layout == IfaLayout::kBsh) return element_at(t, {b, j, n2 * D + d});
  if (c.layout == IfaLayout::kBsnd) return element_at(t, {b, j, n2, d});
  return element_at(t, {b, n2, j, d});
}

void set_kv(IfaCaseData& data, int which, int64_t b, int64_t n2, int64_t j, int64_t d, double x) {
  const IfaArgs& a = data.args();
  store_element(which == 0 ? a.key[0] : a.value[0], ifa_kv_elem(data, which, b, n2, j, d), x);
}

int64_t ifa_q_elem(const IfaCaseData& data, int64_t b, int64_t h, int64_t d) {
  const TensorView& q = data.args().query;
  const int64_t D = data.spec().head_dim;
  switch (data.spec().layout) {
    case IfaLayout::kBsh:
      return element_at(q, {b, 0, h * D + d});
    case IfaLayout::kBsnd:
      return element_at(q, {b, 0, h, d});
    case IfaLayout::kBnsd:
      return element_at(q, {b, h, 0, d});
  }
  return 0;
}

bool ifa_masked(const IfaCaseData& data, int64_t b, int64_t j) {  // (B, S) masks only
  return load_element(*data.args().atten_mask, {b, j}) != 0.0;
}

// What the reference says about one row, for the tests' own preconditions.
struct RowStats {
  int64_t nan = 0, inf = 0, finite = 0;
};
RowStats ifa_row_stats(const reference::IfaReference& r, int64_t b, int64_t h) {
  RowStats s;
  for (int64_t d = 0; d < r.head_dim; ++d) {
    const double x = r.expected[r.index(b, h, d)];
    if (std::isnan(x))
      ++s.nan;
    else if (std::isinf(x))
      ++s.inf;
    else
      ++s.finite;
  }
  return s;
}

bool ifa_row_all_nan(const reference::IfaReference& r, int64_t b, int64_t h) {
  return ifa_row_stats(r, b, h).nan == r.head_dim && std::isnan(r.lse[r.row(b, h)]);
}
bool ifa_row_finite(const reference::IfaReference& r, int64_t b, int64_t h) {
  return ifa_row_stats(r, b, h).finite == r.head_dim && std::isfinite(r.lse[r.row(b, h)]);
}

// Runs the case at every ISA and on the emulated matrix engine (ifa_paths), at two thread counts
// (split-KV merges run on other threads), and compares every element with ref.
void check_ifa(IfaCaseData& data, const reference::IfaReference& ref) {
  const std::string name = data.spec().name();
  for (const IfaPath& path : ifa_paths()) {
    for (int threads : {1, 3}) {
      SCOPED_TRACE("path=" + path.name + " threads=" + std::to_string(threads));
      fill_finite(data.args().attention_out);
      if (data.args().softmax_lse) fill_finite(*data.args().softmax_lse);
      data.mutable_args().num_threads = threads;
      ASSERT_TRUE(path.run(data.args())) << name;
      ASSERT_TRUE(compare_ifa_output(name, data.args(), ref));
    }
  }
}

TEST(IfaNonFinite, NanInOneAttendedKeyElementMakesTheGroupRowsNan) {
  for (IfaLayout layout : {IfaLayout::kBsh, IfaLayout::kBsnd, IfaLayout::kBnsd}) {
    for (DType dt : {DType::kFloat16, DType::kBFloat16}) {
      IfaCase c = ifa_base(layout);
      c.q_dtype = c.kv_dtype = c.out_dtype = dt;
      IfaCaseData data(c);
      set_kv(data, 0, /*b=*/1, /*n2=*/0, /*j=*/33, /*d=*/5, kNaN);
      const reference::IfaReference ref = reference::ifa_reference(data.args());
      // Kv head 0 serves query heads 0 and 1: both rows of batch 1 are NaN, everything else is
      // finite.
      for (int64_t h = 0; h < 4; ++h) {
        EXPECT_EQ(ifa_row_all_nan(ref, 1, h), h < 2) << h;
        EXPECT_TRUE(ifa_row_finite(ref, 0, h)) << h;
      }
      check_ifa(data, ref);
    }
  }
}

TEST(IfaNonFinite, NanAsTheFirstAndLastAttendedScores) {
  // The vector max drops a NaN depending on its lane: NaN at the first and the last attended
  // position, and at every position of a tile remainder, must all give NaN rows.
  for (int64_t j : {0, 31, 32, 39, 69}) {
    IfaCase c = ifa_base();
    IfaCaseData data(c);
    set_kv(data, 0, j < 40 ? 0 : 1, 1, j, 0, kNaN);
    const reference::IfaReference ref = reference::ifa_reference(data.args());
    EXPECT_TRUE(ifa_row_all_nan(ref, j < 40 ? 0 : 1, 2)) << j;
    check_ifa(data, ref);
  }
}

TEST(IfaNonFinite, NanInOneAttendedValueElementMakesThatColumnNan) {
  IfaCase c = ifa_base(IfaLayout::kBsnd);
  IfaCaseData data(c);
  set_kv(data, 1, 0, 1, 17, 9, kNaN);
  const reference::IfaReference ref = reference::ifa_reference(data.args());
  for (int64_t h = 2; h < 4; ++h) {
    const RowStats s = ifa_row_stats(ref, 0, h);
    EXPECT_EQ(s.nan, 1);
    EXPECT_TRUE(std::isnan(ref.expected[ref.index(0, h, 9)]));
    EXPECT_TRUE(std::isfinite(ref.lse[ref.row(0, h)]));  // the scores are untouched
  }
  check_ifa(data, ref);
}

TEST(IfaNonFinite, NanInTheQueryMakesThatRowNan) {
  for (DType dt : {DType::kFloat16, DType::kBFloat16}) {  // bf16: the AVX512-BF16 dot path too
    IfaCase c = ifa_base(IfaLayout::kBnsd);
    c.q_dtype = c.kv_dtype = c.out_dtype = dt;
    c.head_dim = 128;
    IfaCaseData data(c);
    store_element(data.args().query, ifa_q_elem(data, 0, 3, 100), kNaN);
    const reference::IfaReference ref = reference::ifa_reference(data.args());
    EXPECT_TRUE(ifa_row_all_nan(ref, 0, 3));
    EXPECT_TRUE(ifa_row_finite(ref, 0, 2));
    check_ifa(data, ref);
  }
}

TEST(IfaNonFinite, NanInPseMakesThatRowNan) {
  IfaCase c = ifa_base();
  c.pse = PseShape::kBatch;
  IfaCaseData data(c);
  store_element(*data.args().pse_shift, {1, 2, 0, 50}, kNaN);
  const reference::IfaReference ref = reference::ifa_reference(data.args());
  EXPECT_TRUE(ifa_row_all_nan(ref, 1, 2));
  EXPECT_TRUE(ifa_row_finite(ref, 1, 3));
  check_ifa(data, ref);
}

TEST(IfaNonFinite, MinusInfPseExcludesPositionsAndAnAllMinusInfRowIsNan) {
  IfaCase c = ifa_base();
  c.pse = PseShape::kBatch;
  IfaCaseData data(c);
  const TensorView& pse = *data.args().pse_shift;
  // Row (0, 1): a few positions at -inf (weight exactly 0). Row (1, 3): every position at -inf,
  // no softmax exists (0/0): NaN output and LSE, as exp(-inf - -inf) gives in the reference.
  for (int64_t j : {0, 7, 39}) store_element(pse, {0, 1, 0, j}, -kInf);
  for (int64_t j = 0; j < 70; ++j) store_element(pse, {1, 3, 0, j}, -kInf);
  const reference::IfaReference ref = reference::ifa_reference(data.args());
  EXPECT_TRUE(ifa_row_finite(ref, 0, 1));
  EXPECT_TRUE(ifa_row_all_nan(ref, 1, 3));
  EXPECT_TRUE(ifa_row_finite(ref, 1, 2));
  check_ifa(data, ref);
}

TEST(IfaNonFinite, PlusInfKeyGivesNanRowsWhereItsScoreIsPlusInf) {
  IfaCase c = ifa_base(IfaLayout::kBsnd);
  IfaCaseData data(c);
  // A channel where query heads 0 and 1 (kv head 0, batch 0) have opposite signs: +inf in K makes
  // one score +inf (exp(inf - inf) = NaN: a NaN row) and the other -inf (weight 0: finite).
  int64_t d = 0;
  for (; d < c.head_dim; ++d) {
    const double q0 = load_element(data.args().query, ifa_q_elem(data, 0, 0, d));
    const double q1 = load_element(data.args().query, ifa_q_elem(data, 0, 1, d));
    if (q0 * q1 < 0) break;
  }
  ASSERT_LT(d, c.head_dim);
  const bool h0_positive = load_element(data.args().query, ifa_q_elem(data, 0, 0, d)) > 0;
  set_kv(data, 0, 0, 0, 21, d, kInf);
  const reference::IfaReference ref = reference::ifa_reference(data.args());
  EXPECT_TRUE(ifa_row_all_nan(ref, 0, h0_positive ? 0 : 1));
  EXPECT_TRUE(ifa_row_finite(ref, 0, h0_positive ? 1 : 0));
  check_ifa(data, ref);
}

TEST(IfaNonFinite, InfiniteValueGivesAnInfiniteColumn) {
  IfaCase c = ifa_base();
  IfaCaseData data(c);
  set_kv(data, 1, 1, 1, 3, 60, kInf);
  set_kv(data, 1, 1, 1, 4, 61, -kInf);
  set_kv(data, 1, 1, 1, 5, 62, kInf);
  set_kv(data, 1, 1, 1, 6, 62, -kInf);  // inf - inf in one column: NaN
  const reference::IfaReference ref = reference::ifa_reference(data.args());
  for (int64_t h = 2; h < 4; ++h) {
    EXPECT_EQ(ref.expected[ref.index(1, h, 60)], kInf);
    EXPECT_EQ(ref.expected[ref.index(1, h, 61)], -kInf);
    EXPECT_TRUE(std::isnan(ref.expected[ref.index(1, h, 62)]));
    EXPECT_TRUE(std::isfinite(ref.lse[ref.row(1, h)]));
  }
  check_ifa(data, ref);
}

// A zero query scores 0 everywhere, so every weight is exp(0) = 1 exactly: split into bf16 pieces
// (the matrix engine's P·V) its lower pieces are 0, and inf * 0 would be NaN. The infinite column
// must stay infinite (and the NaN one NaN) on every path.
TEST(IfaNonFinite, InfiniteValueUnderWeightsOfExactlyOne) {
  for (DType dt : {DType::kFloat16, DType::kBFloat16}) {
    IfaCase c = ifa_base();
    c.q_dtype = c.kv_dtype = c.out_dtype = dt;
    IfaCaseData data(c);
    for (int64_t d = 0; d < c.head_dim; ++d) {
      store_element(data.args().query, ifa_q_elem(data, 1, 2, d), 0.0);
    }
    set_kv(data, 1, 1, 1, 3, 60, kInf);
    set_kv(data, 1, 1, 1, 7, 61, -kInf);
    const reference::IfaReference ref = reference::ifa_reference(data.args());
    EXPECT_EQ(ref.expected[ref.index(1, 2, 60)], kInf);
    EXPECT_EQ(ref.expected[ref.index(1, 2, 61)], -kInf);
    EXPECT_TRUE(std::isfinite(ref.expected[ref.index(1, 2, 59)]));
    check_ifa(data, ref);
  }
}

TEST(IfaNonFinite, MaskedPositionsAreAttended) {
  IfaCase c = ifa_base();
  c.mask = MaskShape::kBS;
  IfaCaseData data(c);
  int64_t jm = -1, jm2 = -1;
  for (int64_t j = 0; j < 70; ++j) {
    if (!ifa_masked(data, 1, j)) continue;
    if (jm < 0) {
      jm = j;
    } else {
      jm2 = j;
      break;
    }
  }
  ASSERT_GE(jm2, 0);
  // NaN K at a masked position: the mask replaces the score, so the row stays finite. NaN V at a
  // masked position: its weight is exp(-1e12 - m) = 0 and 0 * NaN = NaN, so the column is NaN.
  set_kv(data, 0, 1, 0, jm, 2, kNaN);
  set_kv(data, 1, 1, 1, jm2, 8, kNaN);
  const reference::IfaReference ref = reference::ifa_reference(data.args());
  EXPECT_TRUE(ifa_row_finite(ref, 1, 0));
  EXPECT_TRUE(ifa_row_finite(ref, 1, 1));
  for (int64_t h = 2; h < 4; ++h) {
    EXPECT_EQ(ifa_row_stats(ref, 1, h).nan, 1);
    EXPECT_TRUE(std::isnan(ref.expected[ref.index(1, h, 8)]));
  }
  check_ifa(data, ref);
}

TEST(IfaNonFinite, FullyMaskedRowsWithNanValues) {
  // Batch 0 fully masked: its rows are the mean of V (NaN column included); with
  // zero_fully_masked_rows they are zeros whatever V holds.
  for (bool zero : {false, true}) {
    IfaCase c = ifa_base();
    c.mask = MaskShape::kBS;
    c.mask_full_rows = true;
    c.zero_fully_masked = zero;
    IfaCaseData data(c);
    set_kv(data, 1, 0, 0, 11, 4, kNaN);
    set_kv(data, 0, 0, 1, 12, 4, kNaN);  // masked key: replaced, no effect
    const reference::IfaReference ref = reference::ifa_reference(data.args());
    EXPECT_EQ(ifa_row_stats(ref, 0, 0).nan, zero ? 0 : 1);
    EXPECT_EQ(ifa_row_stats(ref, 0, 2).nan, 0);
    IfaCompareOptions options;
    for (const IfaPath& path : ifa_paths()) {
      fill_finite(data.args().attention_out);
      fill_finite(*data.args().softmax_lse);
      ASSERT_TRUE(path.run(data.args()));
      // With zeroed rows half the output is legitimately 0.
      options.allow_mostly_empty = zero;
      ASSERT_TRUE(compare_ifa_output(c.name(), data.args(), ref, options)) << path.name;
    }
  }
}

TEST(IfaNonFinite, NanInAntiquantScalesAndOffsets) {
  struct Plant {
    int which;   // 0 = key, 1 = value
    bool scale;  // scale or offset
  };
  for (QuantMode mode : {QuantMode::kPerChannel, QuantMode::kPerTensor}) {
    for (const Plant& pl : {Plant{0, true}, Plant{1, true}, Plant{0, false}, Plant{1, false}}) {
      IfaCase c = ifa_base(IfaLayout::kBsnd);
      c.kv_dtype = DType::kInt8;
      c.antiquant = mode;
      IfaCaseData data(c);
      const IfaArgs& a = data.args();
      const TensorView& t = pl.scale ? *a.antiquant_scale : *a.antiquant_offset;
      const int64_t n2 = 1, d = 13;
      const int64_t flat = mode == QuantMode::kPerTensor
                               ? pl.which
                               : (pl.which * c.num_kv_heads + n2) * c.head_dim + d;
      store_element(t, elem_flat(t, flat), kNaN);
      const reference::IfaReference ref = reference::ifa_reference(data.args());
      const bool per_tensor = mode == QuantMode::kPerTensor;
      for (int64_t b = 0; b < 2; ++b) {
        for (int64_t h = 0; h < 4; ++h) {
          const bool affected = per_tensor || h >= 2;
          const RowStats s = ifa_row_stats(ref, b, h);
          if (!affected) {
            EXPECT_TRUE(ifa_row_finite(ref, b, h));
          } else if (pl.which == 0) {  // a key parameter reaches every score
            EXPECT_TRUE(ifa_row_all_nan(ref, b, h));
          } else {  // a value parameter: one column, or all of them per tensor
            EXPECT_EQ(s.nan, per_tensor ? c.head_dim : 1);
          }
        }
      }
      check_ifa(data, ref);
    }
  }
}

TEST(IfaNonFinite, Int8OutputOfNanElementsIsZero) {
  IfaCase c = ifa_base();
  c.out_dtype = DType::kInt8;
  c.out_quant = QuantMode::kPerChannel;
  IfaCaseData data(c);
  set_kv(data, 0, 0, 1, 20, 20, kNaN);  // rows (0, 2), (0, 3) NaN
  set_kv(data, 1, 1, 0, 30, 7, kNaN);   // column 7 of rows (1, 0), (1, 1)
  // quant_scale2 of head 3, channel 40 (per-channel shape (N * D)): that element of both batches.
  const TensorView& qs = *data.args().quant_scale2;
  store_element(qs, elem_flat(qs, 3 * c.head_dim + 40), kNaN);
  const reference::IfaReference ref = reference::ifa_reference(data.args());
  EXPECT_TRUE(ifa_row_all_nan(ref, 0, 2));
  for (int64_t d = 0; d < c.head_dim; ++d) EXPECT_EQ(ref.rounded[ref.index(0, 2, d)], 0.0);
  EXPECT_EQ(ref.rounded[ref.index(1, 0, 7)], 0.0);
  EXPECT_TRUE(std::isnan(ref.expected[ref.index(1, 3, 40)]));
  EXPECT_EQ(ref.rounded[ref.index(1, 3, 40)], 0.0);
  check_ifa(data, ref);
}

TEST(IfaNonFinite, PagedCache) {
  IfaCase c = ifa_base(IfaLayout::kBnsd);
  c.paged = true;
  c.cache_bnsd = true;
  c.block_size = 16;
  c.q_dtype = c.kv_dtype = c.out_dtype = DType::kBFloat16;
  IfaCaseData data(c);
  set_kv(data, 0, 1, 1, 66, 0, kNaN);
  set_kv(data, 1, 0, 0, 35, 1, kNaN);
  const reference::IfaReference ref = reference::ifa_reference(data.args());
  EXPECT_TRUE(ifa_row_all_nan(ref, 1, 2));
  EXPECT_EQ(ifa_row_stats(ref, 0, 0).nan, 1);
  check_ifa(data, ref);
}

// Sequences of several 512-position chunks: the per-chunk partials are merged by log-sum-exp.
IfaCase ifa_long() {
  IfaCase c = ifa_base();
  c.kv_lens = {1300, 1100};
  c.pse = PseShape::kBatch;
  return c;
}

TEST(IfaNonFinite, SplitKvNanInALateChunk) {
  IfaCaseData data(ifa_long());
  set_kv(data, 0, 0, 0, 1290, 3, kNaN);  // the last chunk of batch 0: rows (0, 0), (0, 1)
  set_kv(data, 1, 1, 1, 1050, 6, kNaN);  // value in the last chunk of batch 1: column 6
  const reference::IfaReference ref = reference::ifa_reference(data.args());
  EXPECT_TRUE(ifa_row_all_nan(ref, 0, 0));
  EXPECT_TRUE(ifa_row_all_nan(ref, 0, 1));
  EXPECT_TRUE(ifa_row_finite(ref, 0, 2));
  EXPECT_EQ(ifa_row_stats(ref, 1, 3).nan, 1);
  check_ifa(data, ref);
}

TEST(IfaNonFinite, SplitKvNanValueInAChunkOfNegligibleWeight) {
  // Batch 0, head 0: chunk 1 (positions 512..1023) gets pse -200, so its merge weight is exp(-200)
  // (0 in fp32); a NaN value there still reaches the output (0 * NaN = NaN in the reference).
  IfaCaseData data(ifa_long());
  const TensorView& pse = *data.args().pse_shift;
  for (int64_t j = 512; j < 1024; ++j) store_element(pse, {0, 0, 0, j}, -200.0);
  set_kv(data, 1, 0, 0, 700, 10, kNaN);
  const reference::IfaReference ref = reference::ifa_reference(data.args());
  EXPECT_TRUE(std::isnan(ref.expected[ref.index(0, 0, 10)]));
  EXPECT_EQ(ifa_row_stats(ref, 0, 0).nan, 1);
  check_ifa(data, ref);
}

TEST(IfaNonFinite, SplitKvMinusInfChunksAndAllMinusInfRows) {
  IfaCaseData data(ifa_long());
  const TensorView& pse = *data.args().pse_shift;
  // Row (0, 1): chunk 0 entirely -inf (an empty partial: the merge identity), the rest finite.
  for (int64_t j = 0; j < 512; ++j) store_element(pse, {0, 1, 0, j}, -kInf);
  // Row (0, 2): only the last chunk is finite. Row (1, 3): every position -inf: NaN.
  for (int64_t j = 0; j < 1024; ++j) store_element(pse, {0, 2, 0, j}, -kInf);
  for (int64_t j = 0; j < 1100; ++j) store_element(pse, {1, 3, 0, j}, -kInf);
  const reference::IfaReference ref = reference::ifa_reference(data.args());
  EXPECT_TRUE(ifa_row_finite(ref, 0, 1));
  EXPECT_TRUE(ifa_row_finite(ref, 0, 2));
  EXPECT_TRUE(ifa_row_all_nan(ref, 1, 3));
  EXPECT_TRUE(ifa_row_finite(ref, 1, 2));
  check_ifa(data, ref);
}

TEST(IfaNonFinite, SplitKvNanQueryAndPlusInfPse) {
  IfaCaseData data(ifa_long());
  store_element(data.args().query, ifa_q_elem(data, 1, 0, 0), kNaN);
  store_element(*data.args().pse_shift, {0, 3, 0, 600}, kInf);  // +inf score: exp(inf - inf) = NaN
  const reference::IfaReference ref = reference::ifa_reference(data.args());
  EXPECT_TRUE(ifa_row_all_nan(ref, 1, 0));
  EXPECT_TRUE(ifa_row_all_nan(ref, 0, 3));
  EXPECT_TRUE(ifa_row_finite(ref, 1, 1));
  check_ifa(data, ref);
}

TEST(IfaNonFinite, EmptyRowsStayEmptyAndUnattendedSlotsNeverReachTheOutput) {
  IfaCase c = ifa_base();
  c.kv_lens = {0, 70};
  c.pse = PseShape::kBatch;
  IfaCaseData data(c);
  set_kv(data, 0, 1, 0, 2, 2, kNaN);  // batch 1, attended
  // Slots past batch 1's length, and all of batch 0's (length 0), already hold NaN/inf poison;
  // so does the pse beyond the attended columns.
  const reference::IfaReference ref = reference::ifa_reference(data.args());
  for (int64_t h = 0; h < 4; ++h) {
    EXPECT_EQ(ref.lse[ref.row(0, h)], -kInf);
    EXPECT_EQ(ifa_row_stats(ref, 0, h).finite, c.head_dim);
  }
  EXPECT_TRUE(ifa_row_all_nan(ref, 1, 0));
  EXPECT_TRUE(ifa_row_finite(ref, 1, 2));
  for (const IfaPath& path : ifa_paths()) {
    fill_finite(data.args().attention_out);
    fill_finite(*data.args().softmax_lse);
    ASSERT_TRUE(path.run(data.args()));
    IfaCompareOptions options;
    options.allow_mostly_empty = true;  // batch 0 is empty on purpose
    ASSERT_TRUE(compare_ifa_output(c.name(), data.args(), ref, options)) << path.name;
  }
}

// ---- SFA ---------------------------------------------------------------------------------------

SfaCase sfa_base(SfaKvLayout kv = SfaKvLayout::kBsnd) {
  SfaCase c;
  c.q_layout = SfaQLayout::kBsnd;
  c.kv_layout = kv;
  c.num_heads = 16;
  c.sparse_size = 64;
  c.q_lens = {3, 3};
  c.kv_lens = {90, 150};
  c.sparse_mode = 0;
  c.indices = SfaIndexPattern::kClean;
  c.sinks = true;
  c.lse = kv != SfaKvLayout::kPaBsnd;
  c.value_separate = true;
  c.block_size = 32;
  c.tag = "nonfinite";
  return c;
}

// Element (b, token j, d) of key / key_rope / value.
int64_t sfa_kv_elem(const SfaCaseData& data, const TensorView& t, int64_t b, int64_t j, int64_t d) {
  const SfaArgs& a = data.args();
  if (a.block_table) {
    const int64_t bs = data.spec().block_size;
    const int64_t blk = static_cast<int64_t>(load_element(*a.block_table, {b, j / bs}));
    return element_at(t, {blk, j % bs, 0, d});
  }
  return element_at(t, {b, j, 0, d});
}

// The kv token that row (b, i) selects first (kClean indices: in range, sparse_block_size 1).
int64_t sfa_first_selected(const SfaCaseData& data, int64_t b, int64_t i) {
  return static_cast<int64_t>(load_element(data.args().sparse_indices, {b, i, 0, 0}));
}

// Whether row (b, i) selects token j.
bool sfa_selects(const SfaCaseData& data, int64_t b, int64_t i, int64_t j) {
  const int64_t k = data.spec().sparse_size;
  for (int64_t r = 0; r < k; ++r) {
    const int64_t x = static_cast<int64_t>(load_element(data.args().sparse_indices, {b, i, 0, r}));
    if (x == -1) break;
    if (x == j) return true;
  }
  return false;
}

RowStats sfa_head_stats(const reference::SfaReference& r, int64_t row, int64_t h) {
  RowStats s;
  for (int64_t d = 0; d < reference::SfaReference::kHeadDim; ++d) {
    const double x = r.attention[r.index(row, h, d)];
    if (std::isnan(x))
      ++s.nan;
    else if (std::isinf(x))
      ++s.inf;
    else
      ++s.finite;
  }
  return s;
}

bool sfa_head_all_nan(const reference::SfaReference& r, int64_t row, int64_t h) {
  return sfa_head_stats(r, row, h).nan == reference::SfaReference::kHeadDim &&
         std::isnan(r.softmax_max[r.row(row, h)]) && std::isnan(r.softmax_sum[r.row(row, h)]);
}
bool sfa_head_finite(const reference::SfaReference& r, int64_t row, int64_t h) {
  return sfa_head_stats(r, row, h).finite == reference::SfaReference::kHeadDim &&
         std::isfinite(r.softmax_max[r.row(row, h)]) && std::isfinite(r.softmax_sum[r.row(row, h)]);
}

void check_sfa(SfaCaseData& data, const reference::SfaReference& ref,
               bool allow_mostly_empty = false) {
  const std::string name = data.spec().name();
  for (cpu::Isa isa : isas_to_test()) {
    ScopedIsaCap cap(isa);
    for (int threads : {1, 3}) {
      SCOPED_TRACE(std::string("isa=") + cpu::isa_name(isa) +
                   " threads=" + std::to_string(threads));
      const SfaArgs& a = data.args();
      fill_finite(a.attention_out);
      if (a.softmax_max) fill_finite(*a.softmax_max);
      if (a.softmax_sum) fill_finite(*a.softmax_sum);
      data.mutable_args().num_threads = threads;
      std::unique_ptr<SfaPlan> plan;
      ASSERT_EQ(SfaPlan::create(a, &plan), Status::kSuccess) << last_error_message();
      std::vector<std::byte> ws(plan->workspace_size());
      ASSERT_EQ(plan->run(a, ws.data(), ws.size()), Status::kSuccess) << last_error_message();
      ASSERT_TRUE(compare_sfa_output(name, a, ref, allow_mostly_empty));
    }
  }
  // The matrix-engine body on the software model of the tiles (its vector parts need
  // AVX512-BF16), in passes of 16 and of 3 heads.
  if (cpu::detected_isa() < cpu::Isa::kAvx512Bf16) return;
  for (const cpu::SfaKernels* k : {&kSfaKernelsEmuTiles, &kSfaKernelsEmuTilesNarrow}) {
    SCOPED_TRACE(k == &kSfaKernelsEmuTiles ? "emulated-amx" : "emulated-amx-narrow");
    const SfaArgs& a = data.args();
    fill_finite(a.attention_out);
    if (a.softmax_max) fill_finite(*a.softmax_max);
    if (a.softmax_sum) fill_finite(*a.softmax_sum);
    data.mutable_args().num_threads = 3;
    ASSERT_TRUE(run_sfa_kernels(a, *k));
    ASSERT_TRUE(compare_sfa_output(name, a, ref, allow_mostly_empty));
  }
}

TEST(SfaNonFinite, NanInASelectedKeyRowReachesEveryRowSelectingIt) {
  for (DType dt : {DType::kFloat16, DType::kBFloat16}) {
    for (bool rope : {false, true}) {
      SfaCase c = sfa_base();
      c.dtype = dt;
      SfaCaseData data(c);
      const int64_t j = sfa_first_selected(data, 1, 0);
      const TensorView& t = rope ? data.args().key_rope : data.args().key;
      store_element(t, sfa_kv_elem(data, t, 1, j, rope ? 63 : 200), kNaN);
      const reference::SfaReference ref = reference::sfa_reference(data.args());
      int64_t nan_rows = 0, finite_rows = 0;
      for (int64_t i = 0; i < 3; ++i) {
        const int64_t row = 3 + i;
        const bool sel = sfa_selects(data, 1, i, j);
        for (int64_t h = 0; h < c.num_heads; ++h) {
          EXPECT_TRUE(sel ? sfa_head_all_nan(ref, row, h) : sfa_head_finite(ref, row, h));
        }
        (sel ? nan_rows : finite_rows) += 1;
      }
      EXPECT_GE(nan_rows, 1);
      EXPECT_TRUE(sfa_head_finite(ref, 0, 0));
      check_sfa(data, ref);
    }
  }
}

TEST(SfaNonFinite, NanInASelectedValueRowMakesThatColumnNan) {
  SfaCase c = sfa_base();
  SfaCaseData data(c);
  const int64_t j = sfa_first_selected(data, 0, 2);
  store_element(*data.args().value, sfa_kv_elem(data, *data.args().value, 0, j, 77), kNaN);
  const reference::SfaReference ref = reference::sfa_reference(data.args());
  for (int64_t h = 0; h < c.num_heads; ++h) {
    EXPECT_EQ(sfa_head_stats(ref, 2, h).nan, 1);
    EXPECT_TRUE(std::isfinite(ref.softmax_sum[ref.row(2, h)]));
  }
  check_sfa(data, ref);
}

// An infinite value in a selected row makes that column infinite (the matrix engine runs such a
// block of P·V on the vector FMAs: a zero lower piece of a weight times inf would be NaN).
TEST(SfaNonFinite, InfiniteValueGivesAnInfiniteColumn) {
  for (DType dt : {DType::kFloat16, DType::kBFloat16}) {
    SfaCase c = sfa_base();
    c.dtype = dt;
    SfaCaseData data(c);
    const int64_t j = sfa_first_selected(data, 0, 2);
    store_element(*data.args().value, sfa_kv_elem(data, *data.args().value, 0, j, 77), kInf);
    const reference::SfaReference ref = reference::sfa_reference(data.args());
    for (int64_t h = 0; h < c.num_heads; ++h) {
      EXPECT_EQ(ref.attention[ref.index(2, h, 77)], kInf);
      EXPECT_TRUE(std::isfinite(ref.attention[ref.index(2, h, 76)]));
    }
    check_sfa(data, ref);
  }
}

TEST(SfaNonFinite, NanInTheQueryAndItsRope) {
  SfaCase c = sfa_base();
  SfaCaseData data(c);
  store_element(data.args().query, {0, 1, 5, 300}, kNaN);
  store_element(data.args().query_rope, {1, 2, 9, 0}, kNaN);
  const reference::SfaReference ref = reference::sfa_reference(data.args());
  EXPECT_TRUE(sfa_head_all_nan(ref, 1, 5));
  EXPECT_TRUE(sfa_head_all_nan(ref, 5, 9));
  EXPECT_TRUE(sfa_head_finite(ref, 1, 4));
  EXPECT_TRUE(sfa_head_finite(ref, 5, 8));
  check_sfa(data, ref);
}

TEST(SfaNonFinite, NonFiniteSinks) {
  // NaN sink: that head NaN everywhere. +inf sink: m = +inf, exp(inf - inf) = NaN in the sum, so
  // the output is NaN with softmax_max = +inf. -inf sink: no mass (the same as no sink), except
  // on rows with an empty selection, where m = -inf and the sum is exp(-inf - -inf) = NaN.
  SfaCase c = sfa_base();
  c.indices = SfaIndexPattern::kSomeEmpty;
  SfaCaseData data(c);
  const TensorView& sinks = *data.args().sinks;
  store_element(sinks, {3}, kNaN);
  store_element(sinks, {4}, kInf);
  store_element(sinks, {5}, -kInf);
  const reference::SfaReference ref = reference::sfa_reference(data.args());
  int64_t empty_rows = 0;
  for (int64_t row = 0; row < ref.num_rows; ++row) {
    if (ref.row_kind[row] == reference::SfaRowKind::kUncovered) continue;
    const bool empty = ref.row_kind[row] == reference::SfaRowKind::kEmpty;
    empty_rows += empty;
    EXPECT_TRUE(sfa_head_all_nan(ref, row, 3)) << row;
    EXPECT_EQ(sfa_head_stats(ref, row, 4).nan, reference::SfaReference::kHeadDim);
    EXPECT_EQ(ref.softmax_max[ref.row(row, 4)], kInf);
    EXPECT_EQ(empty ? sfa_head_stats(ref, row, 5).nan : sfa_head_stats(ref, row, 5).finite,
              reference::SfaReference::kHeadDim)
        << row;
    EXPECT_TRUE(empty ? sfa_head_stats(ref, row, 6).finite == reference::SfaReference::kHeadDim
                      : sfa_head_finite(ref, row, 6));
  }
  EXPECT_GE(empty_rows, 1);
  check_sfa(data, ref, /*allow_mostly_empty=*/true);
}

TEST(SfaNonFinite, InfiniteKeysGiveInfiniteScores) {
  // Channel 0 of the rope of every token of batch 1 is +inf: each head's scores are all +inf or
  // all -inf depending on the sign of its query. +inf: NaN. All -inf: with a sink, zeros with
  // max = sink and sum = 1; without one, no softmax exists (NaN, max -inf).
  for (bool sinks : {true, false}) {
    SfaCase c = sfa_base();
    c.sinks = sinks;
    SfaCaseData data(c);
    const TensorView& kr = data.args().key_rope;
    for (int64_t j = 0; j < 150; ++j) {
      bool used = false;
      for (int64_t i = 0; i < 3; ++i) used = used || sfa_selects(data, 1, i, j);
      if (used) store_element(kr, sfa_kv_elem(data, kr, 1, j, 0), kInf);
    }
    const reference::SfaReference ref = reference::sfa_reference(data.args());
    int64_t pos = 0, neg = 0;
    for (int64_t h = 0; h < c.num_heads; ++h) {
      const bool positive = load_element(data.args().query_rope, {1, 0, h, 0}) > 0;
      (positive ? pos : neg) += 1;
      const RowStats s = sfa_head_stats(ref, 3, h);
      if (positive || !sinks) {
        EXPECT_EQ(s.nan, reference::SfaReference::kHeadDim) << h;
      } else {
        EXPECT_EQ(s.finite, reference::SfaReference::kHeadDim) << h;
      }
    }
    EXPECT_GE(pos, 1);
    EXPECT_GE(neg, 1);
    check_sfa(data, ref);
  }
}

TEST(SfaNonFinite, PagedCacheAndUnselectedTokens) {
  SfaCase c = sfa_base(SfaKvLayout::kPaBsnd);
  c.dtype = DType::kBFloat16;
  SfaCaseData data(c);
  const int64_t j = sfa_first_selected(data, 0, 1);
  store_element(data.args().key, sfa_kv_elem(data, data.args().key, 0, j, 1), kNaN);
  // Every token no row selects already holds NaN (the builder's poison).
  const reference::SfaReference ref = reference::sfa_reference(data.args());
  EXPECT_TRUE(sfa_head_stats(ref, 1, 0).nan == reference::SfaReference::kHeadDim);
  EXPECT_TRUE(sfa_head_stats(ref, 3, 0).finite == reference::SfaReference::kHeadDim);
  check_sfa(data, ref);
}

TEST(SfaNonFinite, LongSelectionNanInALateTile) {
  // 2048 selected tokens (32 tiles): a NaN in the last tile after many finite ones.
  SfaCase c = sfa_base();
  c.num_heads = 8;
  c.sparse_size = 2048;
  c.q_lens = {1};
  c.kv_lens = {2100};
  SfaCaseData data(c);
  const int64_t j = static_cast<int64_t>(load_element(data.args().sparse_indices, {0, 0, 0, 2040}));
  store_element(data.args().key, sfa_kv_elem(data, data.args().key, 0, j, 0), kNaN);
  const reference::SfaReference ref = reference::sfa_reference(data.args());
  for (int64_t h = 0; h < 8; ++h) EXPECT_TRUE(sfa_head_all_nan(ref, 0, h));
  check_sfa(data, ref);
}

TEST(SfaNonFinite, PlusInfAndNanScoresInOneRowGiveANanMax) {
  // +inf in one selected key, NaN in another: the max is NaN (not +inf), in the same tile and
  // with the +inf in an earlier tile than the NaN.
  for (int64_t sparse_size : {64, 2048}) {
    SfaCase c = sfa_base();
    c.num_heads = 8;
    c.sparse_size = sparse_size;
    c.q_lens = {1};
    c.kv_lens = {sparse_size + 40};
    SfaCaseData data(c);
    const TensorView& k = data.args().key;
    const int64_t j_inf =
        static_cast<int64_t>(load_element(data.args().sparse_indices, {0, 0, 0, 1}));
    const int64_t j_nan =
        static_cast<int64_t>(load_element(data.args().sparse_indices, {0, 0, 0, sparse_size - 2}));
    store_element(k, sfa_kv_elem(data, k, 0, j_inf, 3), kInf);
    store_element(k, sfa_kv_elem(data, k, 0, j_nan, 4), kNaN);
    const reference::SfaReference ref = reference::sfa_reference(data.args());
    for (int64_t h = 0; h < 8; ++h) EXPECT_TRUE(sfa_head_all_nan(ref, 0, h)) << h;
    check_sfa(data, ref);
  }
}

}  // namespace
}  // namespace kvflash::testing
