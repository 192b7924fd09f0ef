// The PFA / FIA oracle (reference/fia_reference.cpp) against computations written separately here:
//  - a direct masked softmax over the builder's logical copy of each batch (its own layout code),
//    with the visibility of every sparse mode materialised as a dense matrix the way the CPU golden
//    builds it (triangles of ones), not by the reference's per-element interval test;
//  - FIA decode (Q_S = 1, D4) against the IFA oracle on the same buffers;
//  - LSE and learnable-sink identities.
#include "fia_reference.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "element_access.hpp"
#include "ifa_reference.hpp"
#include "support/fia_cases.hpp"

namespace kvflash::testing {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Dense visibility [S1][S2] (1 = visible) of a prefill row block, built from whole triangles:
// golden-style masks triu(ones, k = 1 + next) and tril(ones, k = -1 - pre) are the masked parts.
std::vector<uint8_t> dense_visibility(const FiaCase& c, int64_t S1, int64_t S2, bool decode,
                                      const std::vector<uint8_t>& full_mask) {
  std::vector<uint8_t> vis(S1 * S2, 1);
  auto mask_upper = [&](int64_t k) {  // masks j - i >= k
    for (int64_t i = 0; i < S1; ++i)
      for (int64_t j = std::max<int64_t>(0, std::min<int64_t>(S2, i + k)); j < S2; ++j)
        vis[i * S2 + j] = 0;
  };
  auto mask_lower = [&](int64_t k) {  // masks j - i <= k
    for (int64_t i = 0; i < S1; ++i)
      for (int64_t j = 0; j < S2 && j - i <= k; ++j) vis[i * S2 + j] = 0;
  };
  const int64_t lim = int64_t{1} << 40;
  const int64_t pre = std::clamp(c.pre_tokens, -lim, lim),
                next = std::clamp(c.next_tokens, -lim, lim);
  const bool has_full = !full_mask.empty();
  if (!decode) {
    const int64_t shift = S2 - S1;  // right-down re-basing of modes 3 and 4
    switch (c.sparse_mode) {
      case 0:
        if (has_full) {
          mask_upper(1 + next);
          mask_lower(-1 - pre);
        }
        break;
      case 2:
        mask_upper(1);
        break;
      case 3:
        mask_upper(1 + shift);
        break;
      case 4:
        mask_upper(1 + shift + next);
        mask_lower(-1 + shift - pre);
        break;
      default:
        break;
    }
  }
  if (has_full && (c.sparse_mode == 0 || c.sparse_mode == 1)) {
    for (int64_t i = 0; i < S1; ++i)
      for (int64_t j = 0; j < S2; ++j)
        if (full_mask[(full_mask.size() == static_cast<size_t>(S2) ? 0 : i) * S2 + j])
          vis[i * S2 + j] = 0;
  }
  return vis;
}

class FiaReferenceTest : public ::testing::TestWithParam<FiaCase> {};

TEST_P(FiaReferenceTest, MatchesDirectMaskedSoftmax) {
  const FiaCase& c = GetParam();
  FiaCaseData data(c);
  const reference::FiaReference ref = reference::fia_reference(data.call());
  const int64_t N = c.num_heads, G = c.num_heads / c.num_kv_heads;
  const int64_t Dk = c.head_dim + c.rope_dim, Dv = c.dv();
  const bool decode = !c.prompt && c.rope_dim == 0 && !c.tnd() && c.max_q() == 1 && c.q_slack == 0;
  EXPECT_EQ(ref.decode_branch, decode);
  const double scale = data.scale();
  const auto& call = data.call();

  std::vector<uint8_t> seen(ref.rows, 0);
  int64_t normal_rows = 0;
  for (int64_t b = 0; b < c.batch(); ++b) {
    const FiaLogicalBatch& L = data.logical()[b];
    const int64_t S1 = L.q_len, S2 = L.kv_len;
    std::vector<uint8_t> fm = L.mask;
    if (c.mask == FiaMask::kIfaBS) fm.resize(S2);  // one row, shared by the decode row
    const std::vector<uint8_t> vis = dense_visibility(c, S1, S2, decode, fm);
    for (int64_t i = 0; i < S1; ++i) {
      const int64_t r = L.rows[i];
      seen[r] = 1;
      for (int64_t h = 0; h < N; ++h) {
        const int64_t n2 = h / G;
        std::vector<double> s(S2, -kInf);
        double m = -kInf;
        for (int64_t j = 0; j < S2; ++j) {
          if (!vis[i * S2 + j]) continue;
          double dot = 0;
          for (int64_t d = 0; d < Dk; ++d)
            dot += L.q[(i * N + h) * Dk + d] * L.k[(n2 * S2 + j) * Dk + d];
          s[j] = dot * scale + (L.pse.empty() ? 0.0 : L.pse[(h * S1 + i) * S2 + j]);
          m = std::max(m, s[j]);
        }
        const int64_t row = ref.row(r, h);
        if (m == -kInf) {
          EXPECT_EQ(ref.row_kind[row], reference::FiaRowKind::kEmpty) << c.name() << " r=" << r;
          EXPECT_EQ(ref.lse[row], kInf);
          for (int64_t d = 0; d < Dv; ++d) EXPECT_EQ(ref.attention[ref.index(r, h, d)], 0.0);
          continue;
        }
        ++normal_rows;
        double sum = 0;
        for (int64_t j = 0; j < S2; ++j) sum += s[j] == -kInf ? 0.0 : std::exp(s[j] - m);
        if (c.sink) sum += std::exp(data.sink()[h] - m);
        const double lse = m + std::log(sum);
        ASSERT_NEAR(ref.lse[row], lse, 1e-12 * std::max(1.0, std::fabs(lse))) << c.name();
        for (int64_t d = 0; d < Dv; ++d) {
          double o = 0;
          for (int64_t j = 0; j < S2; ++j)
            if (s[j] != -kInf) o += std::exp(s[j] - m) * L.v[(n2 * S2 + j) * Dv + d];
          o /= sum;
          const double got = ref.attention[ref.index(r, h, d)];
          ASSERT_NEAR(got, o, 1e-12 * (1.0 + std::fabs(o)))
              << c.name() << " r=" << r << " h=" << h << " d=" << d;
          if (call.quant_scale2) {
            const int64_t flat = call.quant_scale2->numel() == 1 ? 0 : h * Dv + d;
            const double want = o * reference::load_element_flat(*call.quant_scale2, flat) +
                                reference::load_element_flat(*call.quant_offset2, flat);
            ASSERT_NEAR(ref.expected[ref.index(r, h, d)], want, 1e-9 * (1 + std::fabs(want)));
          }
        }
      }
    }
  }
  // Every other row is padding (D5): zero output, +inf LSE.
  for (int64_t r = 0; r < ref.rows; ++r) {
    if (seen[r]) continue;
    for (int64_t h = 0; h < N; ++h) {
      EXPECT_EQ(ref.row_kind[ref.row(r, h)], reference::FiaRowKind::kPadding);
      EXPECT_EQ(ref.lse[ref.row(r, h)], kInf);
      for (int64_t d = 0; d < Dv; ++d) EXPECT_EQ(ref.attention[ref.index(r, h, d)], 0.0);
    }
  }
  // A case in which nothing is visible would prove nothing (one case is built mostly empty).
  EXPECT_GT(normal_rows, 0) << c.name();
}

INSTANTIATE_TEST_SUITE_P(Cases, FiaReferenceTest, ::testing::ValuesIn(fia_cases_for_run()),
                         [](const ::testing::TestParamInfo<FiaCase>& info) {
                           return info.param.test_name();
                         });

// D4: FIA with Q_S = 1 in BSH/BSND/BNSD is IFA (with the row-invalid correction on: fully masked
// rows are zero, D2), whatever sparse_mode / pre / next say. The only difference is the LSE of a
// row with nothing to attend: +inf for FIA (D5), -inf for IFA.
TEST(FiaReference, DecodeMatchesIfaReference) {
  int compared = 0;
  for (const FiaCase& c : fia_cases(Tier::kCi)) {
    if (c.prompt || c.tnd() || c.max_q() != 1 || c.rope_dim || c.out != FiaOut::kSame) continue;
    // IFA's arguments have no sink, no shared prefix and only combined, per-channel or
    // per-tensor parameters.
    const bool split_aq = c.antiquant == FiaAntiquant::kSplitChannel ||
                          c.antiquant == FiaAntiquant::kSplitToken ||
                          c.antiquant == FiaAntiquant::kCombinedToken;
    if (c.sink || split_aq || c.prefix_len > 0) continue;
    FiaCaseData data(c);
    const reference::FiaCall& f = data.call();
    IfaArgs a;
    a.query = f.query;
    a.key = f.key;
    a.value = f.value;
    a.pse_shift = f.pse_shift;
    if (c.mask == FiaMask::kIfaBS) a.atten_mask = f.atten_mask;  // modes 2-4: never read
    a.actual_seq_lengths = f.actual_seq_lengths_kv;
    a.quant_scale2 = f.quant_scale2;
    a.quant_offset2 = f.quant_offset2;
    a.antiquant_scale = f.antiquant_scale;
    a.antiquant_offset = f.antiquant_offset;
    a.block_table = f.block_table;
    a.kv_padding_size = f.kv_padding_size;
    a.num_heads = f.num_heads;
    a.scale_value = f.scale;
    a.input_layout = f.input_layout;
    a.num_key_value_heads = f.num_key_value_heads;
    a.block_size = f.block_size;
    a.attention_out = f.attention_out;
    a.zero_fully_masked_rows = true;
    const reference::IfaReference ir = reference::ifa_reference(a);
    const reference::FiaReference fr = reference::fia_reference(f);
    ASSERT_TRUE(fr.decode_branch) << c.name();
    ASSERT_EQ(fr.rows, ir.batch);
    for (int64_t b = 0; b < ir.batch; ++b) {
      for (int64_t h = 0; h < ir.num_heads; ++h) {
        const double il = ir.lse[ir.row(b, h)], fl = fr.lse[fr.row(b, h)];
        if (std::isinf(il)) {
          EXPECT_EQ(fl, kInf) << c.name();
        } else {
          EXPECT_NEAR(fl, il, 1e-12 * std::max(1.0, std::fabs(il))) << c.name();
        }
        for (int64_t d = 0; d < ir.head_dim; ++d) {
          const double want = ir.expected[ir.index(b, h, d)];
          EXPECT_NEAR(fr.expected[fr.index(b, h, d)], want, 1e-12 * (1 + std::fabs(want)))
              << c.name() << " b=" << b << " h=" << h << " d=" << d;
        }
      }
    }
    ++compared;
  }
  EXPECT_GE(compared, 6);
}

// With V = 1 everywhere each normal row's output is its softmax mass: 1 without a sink, and
// 1 - exp(sink_h - lse) with one (D8: the sink takes mass and gives no value).
TEST(FiaReference, SinkAbsorbsMassAndLseIncludesIt) {
  for (bool sink : {false, true}) {
    FiaCase c;
    c.layout = FiaLayout::kTnd;
    c.num_heads = 4, c.num_kv_heads = 2;
    c.q_lens = {3, 8}, c.kv_lens = {10, 8};
    c.sparse_mode = 3, c.mask = FiaMask::kCompressed, c.lse = true, c.sink = sink;
    FiaCaseData data(c);
    const TensorView& v = data.call().value[0];
    for (int64_t i = 0; i < v.numel(); ++i) reference::store_element(v, i, 1.0);
    const reference::FiaReference ref = reference::fia_reference(data.call());
    int64_t checked = 0;
    for (int64_t r = 0; r < ref.rows; ++r) {
      for (int64_t h = 0; h < ref.num_heads; ++h) {
        if (ref.row_kind[ref.row(r, h)] != reference::FiaRowKind::kNormal) continue;
        const double want = sink ? 1.0 - std::exp(data.sink()[h] - ref.lse[ref.row(r, h)]) : 1.0;
        for (int64_t d = 0; d < ref.value_dim; ++d)
          ASSERT_NEAR(ref.attention[ref.index(r, h, d)], want, 1e-13);
        ++checked;
      }
    }
    EXPECT_EQ(checked, 11 * 4);
  }
}

// D3: the compressed mask of modes 2-4 is checked by shape only; its contents never matter.
TEST(FiaReference, CompressedMaskContentsIgnored) {
  FiaCase c;
  c.num_heads = 2, c.num_kv_heads = 1, c.q_lens = {5, 7}, c.kv_lens = {9, 7};
  c.sparse_mode = 4, c.pre_tokens = 2, c.next_tokens = 1, c.mask = FiaMask::kCompressed;
  FiaCaseData data(c);
  const reference::FiaReference ones = reference::fia_reference(data.call());
  const TensorView& m = *data.call().atten_mask;
  for (int64_t i = 0; i < m.numel(); ++i) reference::store_element(m, i, (i % 3) == 0 ? 1 : 0);
  const reference::FiaReference mixed = reference::fia_reference(data.call());
  EXPECT_EQ(ones.attention, mixed.attention);
  EXPECT_EQ(ones.lse, mixed.lse);
}

// Mode 4 with pre = W, next = 0 admits W + 1 keys (D3), and the row's LSE is the log-sum-exp of
// exactly those scores.
TEST(FiaReference, BandAdmitsWPlusOneKeys) {
  FiaCase c;
  c.num_heads = 1, c.num_kv_heads = 1, c.q_lens = {6}, c.kv_lens = {10};
  c.sparse_mode = 4, c.pre_tokens = 3, c.next_tokens = 0, c.mask = FiaMask::kCompressed;
  FiaCaseData data(c);
  // V[j] = j in every dim, q = 0: uniform weights, so the output is the mean visible position.
  const reference::FiaCall& f = data.call();
  for (int64_t i = 0; i < f.query.numel(); ++i) reference::store_element(f.query, i, 0.0);
  for (int64_t j = 0; j < 10; ++j)
    for (int64_t d = 0; d < c.head_dim; ++d)
      reference::store_element(f.value[0], reference::element_at(f.value[0], {0, j, 0, d}),
                               static_cast<double>(j));
  const reference::FiaReference ref = reference::fia_reference(f);
  for (int64_t i = 0; i < 6; ++i) {
    // Row i sees j in [i + 4 - 3, i + 4]: 4 keys, mean i + 2.5; LSE = log 4 (scores 0).
    EXPECT_DOUBLE_EQ(ref.attention[ref.index(i, 0, 0)], i + 2.5);
    EXPECT_DOUBLE_EQ(ref.lse[ref.row(i, 0)], std::log(4.0));
  }
}

}  // namespace
}  // namespace kvflash::testing
