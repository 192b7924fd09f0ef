// The SFA properties of docs/semantics.md §4 on hand-made cases, checked on the reference itself
// (and, where the case is end-to-end, on the kernel too), plus layout equivalences of the
// reference.
#include "sfa_reference.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/half.hpp"
#include "kvflash/sfa.hpp"
#include "support/sfa_cases.hpp"
#include "support/sfa_compare.hpp"

namespace kvflash::testing {
namespace {

using reference::sfa_reference_select;
using reference::SfaRowKind;
constexpr int64_t kD = 512, kR = 64;

// A hand-made BSND call (B = 1, N2 = 1): q has a in dim 0 only; key token j has c[j] in dim 0,
// so score_j = a * c[j] * scale; value token j is vals[j] in every dim.
struct Tiny {
  int64_t s1, n1, s2, k;
  std::vector<uint16_t> q, qr, key, kr, val, out;
  std::vector<int32_t> idx, asq, askv;
  std::vector<float> sinks, mx, sm;
  SfaArgs args;

  Tiny(int64_t s1_, int64_t n1_, const std::vector<double>& c, const std::vector<double>& vals,
       const std::vector<std::vector<int32_t>>& rows_idx, double a = 1.0)
      : s1(s1_), n1(n1_), s2(static_cast<int64_t>(c.size())), k(rows_idx[0].size()) {
    auto h = [](double x) { return core::float_to_fp16(static_cast<float>(x)); };
    q.assign(s1 * n1 * kD, 0);
    qr.assign(s1 * n1 * kR, 0);
    for (int64_t r = 0; r < s1 * n1; ++r) q[r * kD] = h(a);
    key.assign(s2 * kD, 0);
    kr.assign(s2 * kR, 0);
    val.assign(s2 * kD, 0);
    for (int64_t j = 0; j < s2; ++j) {
      key[j * kD] = h(c[j]);
      for (int64_t d = 0; d < kD; ++d) val[j * kD + d] = h(vals[j]);
    }
    for (const auto& r : rows_idx) idx.insert(idx.end(), r.begin(), r.end());
    out.assign(s1 * n1 * kD, 0x7e00);
    mx.assign(s1 * n1, NAN);
    sm.assign(s1 * n1, NAN);
    args.query = TensorView::contiguous(q.data(), DType::kFloat16, {1, s1, n1, kD});
    args.query_rope = TensorView::contiguous(qr.data(), DType::kFloat16, {1, s1, n1, kR});
    args.key = TensorView::contiguous(key.data(), DType::kFloat16, {1, s2, 1, kD});
    args.key_rope = TensorView::contiguous(kr.data(), DType::kFloat16, {1, s2, 1, kR});
    args.value = TensorView::contiguous(val.data(), DType::kFloat16, {1, s2, 1, kD});
    args.sparse_indices = TensorView::contiguous(idx.data(), DType::kInt32, {1, s1, 1, k});
    args.attention_out = TensorView::contiguous(out.data(), DType::kFloat16, {1, s1, n1, kD});
    args.softmax_max = TensorView::contiguous(mx.data(), DType::kFloat32, {1, 1, s1, n1});
    args.softmax_sum = TensorView::contiguous(sm.data(), DType::kFloat32, {1, 1, s1, n1});
    args.return_softmax_lse = true;
    args.scale_value = 1.0;
  }
  void set_sinks(std::vector<float> s) {
    sinks = std::move(s);
    args.sinks = TensorView::contiguous(sinks.data(), DType::kFloat32, {n1});
  }
  void set_lengths(int32_t lq, int32_t lkv) {
    asq = {lq};
    askv = {lkv};
    args.actual_seq_lengths_query = TensorView::contiguous(asq.data(), DType::kInt32, {1});
    args.actual_seq_lengths_kv = TensorView::contiguous(askv.data(), DType::kInt32, {1});
  }
  float out_at(int64_t i, int64_t h, int64_t d) const {
    return core::fp16_to_float(out[(i * n1 + h) * kD + d]);
  }
  reference::SfaReference run_both() {
    reference::SfaReference ref = reference::sfa_reference(args);
    EXPECT_EQ(sparse_flash_attention(args), Status::kSuccess) << last_error_message();
    EXPECT_TRUE(compare_sfa_output("tiny", args, ref, /*allow_mostly_empty=*/true));
    return ref;
  }
};

// ---- the selection rules (docs/semantics.md §3.4 step 2)
// ------------------------------------------------
TEST(SfaSelectTest, MinusOneInTheMiddleTruncates) {
  EXPECT_EQ(sfa_reference_select({3, 1, -1, 2, 0}, 10, 1), (std::vector<int64_t>{3, 1}));
}
TEST(SfaSelectTest, OutOfRangeIsSkippedNotTerminating) {
  EXPECT_EQ(sfa_reference_select({9, 12, 2}, 10, 1), (std::vector<int64_t>{9, 2}));
  // thr 10, sbs 4: ceil(10/4) = 3 blocks; block 3 (begin 12) is out of range.
  EXPECT_EQ(sfa_reference_select({3, 0}, 10, 4), (std::vector<int64_t>{0, 1, 2, 3}));
}
TEST(SfaSelectTest, DuplicatesAreCountedTwice) {
  EXPECT_EQ(sfa_reference_select({4, 4, 1}, 10, 1), (std::vector<int64_t>{4, 4, 1}));
}
TEST(SfaSelectTest, NegativesBelowMinusOneAreSkipped) {
  EXPECT_EQ(sfa_reference_select({-2, 5, std::numeric_limits<int32_t>::min(), 6}, 10, 1),
            (std::vector<int64_t>{5, 6}));
}
TEST(SfaSelectTest, OnlyTheFirstValidCountEntriesAreExamined) {
  // thr 3 with sbs 1: validCount = min(K = 5, 3) = 3, so the valid id at position 3 is ignored.
  EXPECT_EQ(sfa_reference_select({7, 8, 2, 0, 1}, 3, 1), (std::vector<int64_t>{2}));
}
TEST(SfaSelectTest, PartialLastBlockIsClippedAtThreshold) {
  EXPECT_EQ(sfa_reference_select({2}, 10, 4), (std::vector<int64_t>{8, 9}));
  EXPECT_EQ(sfa_reference_select({1, 0}, 5, 128), (std::vector<int64_t>{}));
  EXPECT_EQ(sfa_reference_select({0}, 5, 128), (std::vector<int64_t>{0, 1, 2, 3, 4}));
}
TEST(SfaSelectTest, NonPositiveThresholdSelectsNothing) {
  EXPECT_TRUE(sfa_reference_select({0, 1}, 0, 1).empty());
  EXPECT_TRUE(sfa_reference_select({0, 1}, -3, 1).empty());
}

// ---- end-to-end properties (reference and kernel) ------------------------------------------
TEST(SfaReferenceTest, DuplicatesWeighTwice) {
  // Equal scores; token 0 (value 1) selected twice, token 1 (value 0) once: out = 2/3. (Three
  // tokens so that validCount = min(K, thr) = 3 examines every entry.)
  Tiny t(1, 1, {0.0, 0.0, 0.0}, {1.0, 0.0, 9.0}, {{0, 0, 1}});
  t.args.sparse_mode = 0;
  const auto ref = t.run_both();
  EXPECT_NEAR(ref.attention[0], 2.0 / 3.0, 1e-15);
  EXPECT_NEAR(ref.softmax_sum[0], 3.0, 1e-15);
  EXPECT_EQ(ref.softmax_max[0], 0.0);
  EXPECT_NEAR(t.out_at(0, 0, 7), 2.0 / 3.0, 1e-3);
}
TEST(SfaReferenceTest, MinusOneInTheMiddleEndsTheRow) {
  Tiny t(1, 1, {0.0, 0.0, 0.0}, {1.0, 0.0, 5.0}, {{0, -1, 2}});
  t.args.sparse_mode = 0;
  const auto ref = t.run_both();
  EXPECT_EQ(ref.selected[0], 1);
  EXPECT_DOUBLE_EQ(ref.attention[5], 1.0);
  EXPECT_FLOAT_EQ(t.out_at(0, 0, 5), 1.0f);
}
TEST(SfaReferenceTest, OutOfRangeIndexIsSkipped) {
  // KV length 3 (token 3 beyond it holds 100): index 5 is skipped, index 1 after it still used.
  Tiny t(1, 1, {0.0, 0.0, 0.0, 0.0}, {1.0, 3.0, 100.0, 100.0}, {{0, 5, 1}});
  t.args.sparse_mode = 0;
  t.set_lengths(1, 3);
  const auto ref = t.run_both();
  EXPECT_EQ(ref.selected[0], 2);
  EXPECT_DOUBLE_EQ(ref.attention[0], 2.0);
}
TEST(SfaReferenceTest, ModeThreeLeadingRowsAreZeroEvenWithSinks) {
  // lq = 3 > lkv = 1: rows 0 and 1 have thr <= 0; row 2 attends token 0.
  Tiny t(3, 2, {1.0}, {4.0}, {{0}, {0}, {0}});
  t.set_sinks({0.5f, -0.25f});
  t.args.sparse_mode = 3;
  const auto ref = t.run_both();
  for (int64_t i : {0, 1}) {
    EXPECT_EQ(ref.row_kind[i], SfaRowKind::kInvalid);
    for (int64_t h = 0; h < 2; ++h) {
      EXPECT_EQ(t.out_at(i, h, 0), 0.0f);
      EXPECT_EQ(t.mx[i * 2 + h], 0.0f);
      EXPECT_EQ(t.sm[i * 2 + h], 0.0f);
    }
  }
  EXPECT_EQ(ref.row_kind[2], SfaRowKind::kNormal);
  EXPECT_GT(t.out_at(2, 0, 0), 0.0f);
}
TEST(SfaReferenceTest, ModeZeroSeesThePaddedFuture) {
  // Mode 0: row 0 of 2 may select token 1 (not causal); mode 3 would skip it.
  Tiny t(2, 1, {0.0, 0.0}, {1.0, 3.0}, {{0, 1}, {1, 0}});
  t.args.sparse_mode = 0;
  auto ref = t.run_both();
  EXPECT_DOUBLE_EQ(ref.attention[0], 2.0);
  t.args.sparse_mode = 3;
  ref = t.run_both();
  EXPECT_DOUBLE_EQ(ref.attention[0], 1.0);  // row 0: thr = 1, validCount 1, only token 0
  EXPECT_DOUBLE_EQ(ref.attention[kD], 2.0);
}
TEST(SfaReferenceTest, SinkWithEmptySelection) {
  Tiny t(1, 2, {0.0}, {1.0}, {{-1}});
  t.set_sinks({1.5f, -2.0f});
  t.args.sparse_mode = 0;
  const auto ref = t.run_both();
  EXPECT_EQ(ref.row_kind[0], SfaRowKind::kEmpty);
  for (int64_t h = 0; h < 2; ++h) {
    EXPECT_EQ(ref.softmax_max[h], h == 0 ? 1.5 : -2.0);
    EXPECT_EQ(ref.softmax_sum[h], 1.0);
    EXPECT_EQ(t.mx[h], h == 0 ? 1.5f : -2.0f);
    EXPECT_FLOAT_EQ(t.sm[h], 1.0f);
    EXPECT_EQ(t.out_at(0, h, 0), 0.0f);
  }
}
TEST(SfaReferenceTest, ModeZeroWithEmptyKvIsAnEmptySelection) {
  // Mode 0 never makes a row invalid: with no KV tokens the selection is empty, so the sink
  // alone sets max and sum (mode 3 would make the row invalid: zeros and 0, 0).
  Tiny t(1, 1, {0.0}, {1.0}, {{0}});
  t.set_sinks({0.75f});
  t.set_lengths(1, 0);
  t.args.sparse_mode = 0;
  auto ref = t.run_both();
  EXPECT_EQ(ref.row_kind[0], SfaRowKind::kEmpty);
  EXPECT_EQ(t.mx[0], 0.75f);
  EXPECT_FLOAT_EQ(t.sm[0], 1.0f);
  t.args.sparse_mode = 3;
  ref = t.run_both();
  EXPECT_EQ(ref.row_kind[0], SfaRowKind::kInvalid);
  EXPECT_EQ(t.mx[0], 0.0f);
  EXPECT_EQ(t.sm[0], 0.0f);
}
TEST(SfaReferenceTest, EmptySelectionWithoutSinkIsAllZero) {
  Tiny t(1, 1, {0.0, 0.0}, {1.0, 1.0}, {{5, -3}});
  t.args.sparse_mode = 0;
  const auto ref = t.run_both();
  EXPECT_EQ(ref.row_kind[0], SfaRowKind::kEmpty);
  EXPECT_EQ(t.mx[0], 0.0f);
  EXPECT_EQ(t.sm[0], 0.0f);
}
TEST(SfaReferenceTest, SinkJoinsMaxAndDenominatorOnly) {
  // One token with score 2 (a = 2, c = 1), value 1; sink 3: out = e^2 / (e^2 + e^3).
  Tiny t(1, 1, {1.0}, {1.0}, {{0}}, 2.0);
  t.set_sinks({3.0f});
  t.args.sparse_mode = 0;
  const auto ref = t.run_both();
  EXPECT_NEAR(ref.attention[0], std::exp(2.0) / (std::exp(2.0) + std::exp(3.0)), 1e-15);
  EXPECT_EQ(ref.softmax_max[0], 3.0);
  EXPECT_NEAR(ref.softmax_sum[0], std::exp(-1.0) + 1.0, 1e-15);
}
TEST(SfaReferenceTest, SoftmaxOutputsAreNaturalBaseWithScale) {
  // Scores 0.5 * {1, 3} = {0.5, 1.5}: max 1.5, sum 1 + e^-1.
  Tiny t(1, 1, {1.0, 3.0}, {0.0, 2.0}, {{0, 1}});
  t.args.scale_value = 0.5;
  t.args.sparse_mode = 0;
  const auto ref = t.run_both();
  EXPECT_DOUBLE_EQ(ref.softmax_max[0], 1.5);
  EXPECT_NEAR(ref.softmax_sum[0], 1.0 + std::exp(-1.0), 1e-15);
  EXPECT_NEAR(ref.attention[0], 2.0 / (1.0 + std::exp(-1.0)), 1e-15);
}
TEST(SfaReferenceTest, ValueTensorIsUsedAndNullMeansKey) {
  Tiny t(1, 1, {2.0}, {7.0}, {{0}});
  t.args.sparse_mode = 0;
  auto ref = t.run_both();
  EXPECT_DOUBLE_EQ(ref.attention[0], 7.0);
  t.args.value.reset();  // value = key: dim 0 is 2, others 0
  ref = t.run_both();
  EXPECT_DOUBLE_EQ(ref.attention[0], 2.0);
  EXPECT_DOUBLE_EQ(ref.attention[1], 0.0);
}

// ---- layout equivalence: the same logical data in another layout gives the same oracle -----
// Rebuilds a PA_BSND / TND case as BSND by copying every logical element through the views.
TEST(SfaReferenceLayoutTest, PagedAndTndMatchDenseBsnd) {
  for (SfaKvLayout kv : {SfaKvLayout::kPaBsnd, SfaKvLayout::kTnd}) {
    SfaCase c;
    c.q_layout = kv == SfaKvLayout::kTnd ? SfaQLayout::kTnd : SfaQLayout::kBsnd;
    c.kv_layout = kv;
    c.num_heads = 2;
    c.sparse_size = 16;
    c.q_lens = {2, 1};
    c.kv_lens = {40, 23};
    c.sinks = true;
    SfaCaseData data(c);
    const SfaArgs& a = data.args();
    const auto want = reference::sfa_reference(a);

    // Dense copies: key/rope (B, S2 = 40, 1, D), query (B, S1 = 2, N, D), indices (B, 2, 1, K).
    const int64_t b_n = 2, s2 = 40, s1 = 2, n = 2, k = 16;
    std::vector<uint16_t> key(b_n * s2 * kD, 0x7e00), kr(b_n * s2 * kR, 0x7e00);
    std::vector<uint16_t> q(b_n * s1 * n * kD, 0x7e00), qr(b_n * s1 * n * kR, 0x7e00);
    std::vector<int32_t> idx(b_n * s1 * k, -1), askv = {40, 23}, asq = {2, 1};
    auto at = [](const TensorView& v, std::vector<int64_t> ix) {
      int64_t off = v.offset;
      for (size_t i = 0; i < ix.size(); ++i) off += ix[i] * v.strides[i];
      return off;
    };
    const uint16_t* src_k = static_cast<const uint16_t*>(a.key.data);
    const uint16_t* src_kr = static_cast<const uint16_t*>(a.key_rope.data);
    const uint16_t* src_q = static_cast<const uint16_t*>(a.query.data);
    const uint16_t* src_qr = static_cast<const uint16_t*>(a.query_rope.data);
    const int32_t* src_i = static_cast<const int32_t*>(a.sparse_indices.data);
    const int32_t* bt = a.block_table ? static_cast<const int32_t*>(a.block_table->data) : nullptr;
    int64_t kv0 = 0, q0 = 0;
    for (int64_t b = 0; b < b_n; ++b) {
      for (int64_t j = 0; j < c.kv_lens[b]; ++j) {
        std::vector<int64_t> ix;
        if (kv == SfaKvLayout::kPaBsnd) {
          const int64_t blk = bt[at(*a.block_table, {b, j / c.block_size})];
          ix = {blk, j % c.block_size, 0, 0};
        } else {
          ix = {kv0 + j, 0, 0};
        }
        for (int64_t d = 0; d < kD; ++d) {
          ix.back() = d;
          key[(b * s2 + j) * kD + d] = src_k[at(a.key, ix)];
        }
        for (int64_t d = 0; d < kR; ++d) {
          ix.back() = d;
          kr[(b * s2 + j) * kR + d] = src_kr[at(a.key_rope, ix)];
        }
      }
      for (int64_t i = 0; i < c.q_lens[b]; ++i) {
        const std::vector<int64_t> base = c.q_layout == SfaQLayout::kTnd
                                              ? std::vector<int64_t>{q0 + i}
                                              : std::vector<int64_t>{b, i};
        for (int64_t h = 0; h < n; ++h) {
          for (int64_t d = 0; d < kD; ++d) {
            std::vector<int64_t> ix = base;
            ix.insert(ix.end(), {h, d});
            q[((b * s1 + i) * n + h) * kD + d] = src_q[at(a.query, ix)];
          }
          for (int64_t d = 0; d < kR; ++d) {
            std::vector<int64_t> ix = base;
            ix.insert(ix.end(), {h, d});
            qr[((b * s1 + i) * n + h) * kR + d] = src_qr[at(a.query_rope, ix)];
          }
        }
        for (int64_t kk = 0; kk < k; ++kk) {
          std::vector<int64_t> ix = base;
          ix.insert(ix.end(), {0, kk});
          idx[(b * s1 + i) * k + kk] = src_i[at(a.sparse_indices, ix)];
        }
      }
      kv0 += c.kv_lens[b];
      q0 += c.q_lens[b];
    }
    std::vector<uint16_t> out(b_n * s1 * n * kD);
    SfaArgs d = a;
    d.layout_query = "BSND";
    d.layout_kv = "BSND";
    d.block_table.reset();
    d.key = TensorView::contiguous(key.data(), DType::kFloat16, {b_n, s2, 1, kD});
    d.key_rope = TensorView::contiguous(kr.data(), DType::kFloat16, {b_n, s2, 1, kR});
    d.value.reset();
    d.query = TensorView::contiguous(q.data(), DType::kFloat16, {b_n, s1, n, kD});
    d.query_rope = TensorView::contiguous(qr.data(), DType::kFloat16, {b_n, s1, n, kR});
    d.sparse_indices = TensorView::contiguous(idx.data(), DType::kInt32, {b_n, s1, 1, k});
    d.attention_out = TensorView::contiguous(out.data(), DType::kFloat16, {b_n, s1, n, kD});
    d.actual_seq_lengths_kv = TensorView::contiguous(askv.data(), DType::kInt32, {b_n});
    d.actual_seq_lengths_query = TensorView::contiguous(asq.data(), DType::kInt32, {b_n});
    d.return_softmax_lse = false;
    const auto got = reference::sfa_reference(d);
    // Map rows: dense r = b*2 + i; source rows follow the source layout.
    int64_t src_row0 = 0;
    for (int64_t b = 0; b < b_n; ++b) {
      for (int64_t i = 0; i < c.q_lens[b]; ++i) {
        const int64_t rs = c.q_layout == SfaQLayout::kTnd ? src_row0 + i : b * a.query.shape[1] + i;
        const int64_t rd = b * s1 + i;
        for (int64_t h = 0; h < n; ++h) {
          for (int64_t dd = 0; dd < kD; ++dd)
            ASSERT_EQ(want.attention[want.index(rs, h, dd)], got.attention[got.index(rd, h, dd)])
                << c.name();
          EXPECT_EQ(want.softmax_max[want.row(rs, h)], got.softmax_max[got.row(rd, h)]);
        }
      }
      src_row0 += c.q_lens[b];
    }
  }
}

}  // namespace
}  // namespace kvflash::testing
