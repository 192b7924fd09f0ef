// The oracle's own checks: hand-computable results and equalities between equivalent encodings of
// the same problem (layouts, GQA vs MHA, paged vs contiguous, list vs contiguous, antiquant vs
// pre-dequantised values), plus sanity of the shared case list.
#include "ifa_reference.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <set>

#include "core/half.hpp"
#include "support/compare.hpp"
#include "support/elements.hpp"
#include "support/ifa_cases.hpp"
#include "support/test_rng.hpp"

namespace kvflash {
namespace {

using reference::ifa_reference;
using reference::ifa_round_to_dtype;
using reference::IfaReference;
using reference::IfaRowKind;

constexpr double kInf = std::numeric_limits<double>::infinity();

// Owns buffers for hand-built arguments.
class Store {
 public:
  TensorView make(DType dtype, std::vector<int64_t> shape) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    bufs_.emplace_back(static_cast<size_t>(n) * dtype_size(dtype));
    return TensorView::contiguous(bufs_.back().data(), dtype, shape);
  }

 private:
  std::vector<std::vector<std::byte>> bufs_;
};

void set(const TensorView& v, std::initializer_list<int64_t> idx, double x) {
  kvflash::testing::store_element(v, idx, x);
}

// A logical problem (q[b][h][d], k/v[b][n2][j][d]) with fp16-representable values that can be
// materialised in any encoding.
struct Logical {
  int64_t B, N, KVN, D, S;
  std::vector<double> q, k, v;
  double& qa(int64_t b, int64_t h, int64_t d) { return q[(b * N + h) * D + d]; }
  double& ka(int64_t b, int64_t n, int64_t j, int64_t d) {
    return k[((b * KVN + n) * S + j) * D + d];
  }
  double& va(int64_t b, int64_t n, int64_t j, int64_t d) {
    return v[((b * KVN + n) * S + j) * D + d];
  }

  Logical(int64_t b, int64_t n, int64_t kvn, int64_t d, int64_t s, uint64_t seed)
      : B(b), N(n), KVN(kvn), D(d), S(s) {
    testing::TestRng rng(seed);
    auto fp16 = [&](double x) { return core::round_to_fp16(static_cast<float>(x)); };
    q.resize(B * N * D);
    k.resize(B * KVN * S * D);
    v.resize(B * KVN * S * D);
    for (double& x : q) x = fp16(rng.normal());
    for (double& x : k) x = fp16(rng.normal());
    for (double& x : v) x = fp16(rng.normal());
  }

  // Contiguous BSH arguments (fp16 everywhere).
  IfaArgs bsh(Store& st) {
    IfaArgs a;
    a.input_layout = "BSH";
    a.num_heads = N;
    a.num_key_value_heads = KVN;
    a.scale_value = 1.0 / std::sqrt(static_cast<double>(D));
    a.query = st.make(DType::kFloat16, {B, 1, N * D});
    a.attention_out = st.make(DType::kFloat16, {B, 1, N * D});
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < N; ++h)
        for (int64_t d = 0; d < D; ++d) set(a.query, {b, 0, h * D + d}, qa(b, h, d));
    TensorView kt = st.make(DType::kFloat16, {B, S, KVN * D});
    TensorView vt = st.make(DType::kFloat16, {B, S, KVN * D});
    for (int64_t b = 0; b < B; ++b)
      for (int64_t n = 0; n < KVN; ++n)
        for (int64_t j = 0; j < S; ++j)
          for (int64_t d = 0; d < D; ++d) {
            set(kt, {b, j, n * D + d}, ka(b, n, j, d));
            set(vt, {b, j, n * D + d}, va(b, n, j, d));
          }
    a.key = {kt};
    a.value = {vt};
    return a;
  }
};

void expect_same(const IfaReference& x, const IfaReference& y) {
  ASSERT_EQ(x.attention.size(), y.attention.size());
  for (size_t i = 0; i < x.attention.size(); ++i) {
    ASSERT_EQ(x.attention[i], y.attention[i]) << "element " << i;
    ASSERT_EQ(x.rounded[i], y.rounded[i]) << "element " << i;
  }
  for (size_t r = 0; r < x.lse.size(); ++r) ASSERT_EQ(x.lse[r], y.lse[r]) << "row " << r;
}

TEST(IfaReference, RoundToDtype) {
  EXPECT_EQ(ifa_round_to_dtype(1.0 + 0x1p-11, DType::kFloat16), 1.0);  // tie -> even
  EXPECT_EQ(ifa_round_to_dtype(1.0 + 3 * 0x1p-11, DType::kFloat16), 1.0 + 0x1p-9);
  EXPECT_EQ(ifa_round_to_dtype(65519.0, DType::kFloat16), 65504.0);
  EXPECT_EQ(ifa_round_to_dtype(65520.0, DType::kFloat16), kInf);
  EXPECT_EQ(ifa_round_to_dtype(0x1p-25, DType::kFloat16), 0.0);  // half the smallest subnormal
  EXPECT_EQ(ifa_round_to_dtype(0x1.8p-24, DType::kFloat16), 0x1p-23);
  EXPECT_EQ(ifa_round_to_dtype(1.0 + 0x1p-8, DType::kBFloat16), 1.0);
  EXPECT_EQ(ifa_round_to_dtype(1.0 + 0x1.8p-8, DType::kBFloat16), 1.0 + 0x1p-7);
  EXPECT_EQ(ifa_round_to_dtype(2.5, DType::kInt8), 2.0);
  EXPECT_EQ(ifa_round_to_dtype(3.5, DType::kInt8), 4.0);
  EXPECT_EQ(ifa_round_to_dtype(-2.5, DType::kInt8), -2.0);
  EXPECT_EQ(ifa_round_to_dtype(127.6, DType::kInt8), 127.0);
  EXPECT_EQ(ifa_round_to_dtype(-1000.0, DType::kInt8), -128.0);
}

TEST(IfaReference, HandComputedTwoKeys) {
  Logical p(1, 1, 1, 16, 2, 1);
  std::fill(p.q.begin(), p.q.end(), 0.0);
  std::fill(p.k.begin(), p.k.end(), 0.0);
  p.qa(0, 0, 0) = 2.0;
  p.ka(0, 0, 0, 0) = 1.0;  // s0 = 2 * scale, s1 = 0
  Store st;
  IfaArgs a = p.bsh(st);
  a.scale_value = 0.75;
  const IfaReference r = ifa_reference(a);
  const double w0 = std::exp(1.5) / (std::exp(1.5) + 1.0);
  for (int64_t d = 0; d < 16; ++d) {
    const double want = w0 * p.va(0, 0, 0, d) + (1 - w0) * p.va(0, 0, 1, d);
    EXPECT_NEAR(r.attention[d], want, 1e-14);
  }
  EXPECT_NEAR(r.lse[0], std::log(std::exp(1.5) + 1.0), 1e-14);
  EXPECT_EQ(r.row_kind[0], IfaRowKind::kNormal);
}

TEST(IfaReference, UniformKeysGiveMeanOfV) {
  Logical p(2, 4, 2, 32, 7, 2);
  std::fill(p.k.begin(), p.k.end(), 0.5);  // every key equal -> equal scores
  Store st;
  const IfaReference r = ifa_reference(p.bsh(st));
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t h = 0; h < 4; ++h)
      for (int64_t d = 0; d < 32; ++d) {
        double mean = 0;
        for (int64_t j = 0; j < 7; ++j) mean += p.va(b, h / 2, j, d) / 7;
        EXPECT_NEAR(r.attention[r.index(b, h, d)], mean, 1e-13);
      }
}

TEST(IfaReference, FullyMaskedRowGivesMeanOfVOrZeros) {
  Logical p(2, 2, 1, 16, 5, 3);
  Store st;
  IfaArgs a = p.bsh(st);
  a.actual_seq_lengths = std::vector<int64_t>{5, 3};
  TensorView m = st.make(DType::kBool, {2, 5});
  for (int64_t j = 0; j < 5; ++j) {
    set(m, {0, j}, 1);               // batch 0 fully masked
    set(m, {1, j}, j == 1 ? 1 : 0);  // batch 1: position 1 masked
  }
  a.atten_mask = m;
  const IfaReference r = ifa_reference(a);
  for (int64_t h = 0; h < 2; ++h) {
    EXPECT_EQ(r.row_kind[r.row(0, h)], IfaRowKind::kFullyMasked);
    EXPECT_EQ(r.row_kind[r.row(1, h)], IfaRowKind::kNormal);
    EXPECT_NEAR(r.lse[r.row(0, h)], static_cast<double>(-1.0e12f) + std::log(5.0), 1e-3);
    for (int64_t d = 0; d < 16; ++d) {
      double mean = 0;
      for (int64_t j = 0; j < 5; ++j) mean += p.va(0, 0, j, d) / 5;
      EXPECT_NEAR(r.attention[r.index(0, h, d)], mean, 1e-13);
    }
  }
  // Masked position 1 of batch 1 has weight exactly 0: changing its value changes nothing.
  Logical p2 = p;
  for (int64_t d = 0; d < 16; ++d) p2.va(1, 0, 1, d) = 1000.0;
  IfaArgs a2 = p2.bsh(st);
  a2.actual_seq_lengths = a.actual_seq_lengths;
  a2.atten_mask = m;
  const IfaReference r2 = ifa_reference(a2);
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t d = 0; d < 16; ++d)
      EXPECT_EQ(r.attention[r.index(1, h, d)], r2.attention[r2.index(1, h, d)]);

  a.zero_fully_masked_rows = true;
  const IfaReference z = ifa_reference(a);
  for (int64_t h = 0; h < 2; ++h) {
    EXPECT_EQ(z.row_kind[z.row(0, h)], IfaRowKind::kFullyMasked);
    EXPECT_EQ(z.lse[z.row(0, h)], -kInf);
    for (int64_t d = 0; d < 16; ++d) EXPECT_EQ(z.attention[z.index(0, h, d)], 0.0);
    EXPECT_EQ(z.lse[z.row(1, h)], r.lse[r.row(1, h)]);
  }
}

TEST(IfaReference, GqaEqualsMhaWithRepeatedKv) {
  Logical g(2, 8, 2, 32, 9, 4);
  Logical m(2, 8, 8, 32, 9, 4);
  m.q = g.q;
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t h = 0; h < 8; ++h)
      for (int64_t j = 0; j < 9; ++j)
        for (int64_t d = 0; d < 32; ++d) {
          m.ka(b, h, j, d) = g.ka(b, h / 4, j, d);
          m.va(b, h, j, d) = g.va(b, h / 4, j, d);
        }
  Store st;
  expect_same(ifa_reference(g.bsh(st)), ifa_reference(m.bsh(st)));
}

TEST(IfaReference, LayoutsAgree) {
  Logical p(2, 4, 2, 16, 6, 5);
  Store st;
  const IfaArgs bsh = p.bsh(st);
  for (const char* layout : {"BSND", "BNSD"}) {
    IfaArgs a = bsh;
    a.input_layout = layout;
    const bool bnsd = std::string(layout) == "BNSD";
    a.query = st.make(DType::kFloat16,
                      bnsd ? std::vector<int64_t>{2, 4, 1, 16} : std::vector<int64_t>{2, 1, 4, 16});
    a.attention_out = a.query;
    const std::vector<int64_t> kshape =
        bnsd ? std::vector<int64_t>{2, 2, 6, 16} : std::vector<int64_t>{2, 6, 2, 16};
    TensorView k = st.make(DType::kFloat16, kshape), v = st.make(DType::kFloat16, kshape);
    for (int64_t b = 0; b < 2; ++b) {
      for (int64_t h = 0; h < 4; ++h)
        for (int64_t d = 0; d < 16; ++d)
          set(a.query,
              bnsd ? std::initializer_list<int64_t>{b, h, 0, d}
                   : std::initializer_list<int64_t>{b, 0, h, d},
              p.qa(b, h, d));
      for (int64_t n = 0; n < 2; ++n)
        for (int64_t j = 0; j < 6; ++j)
          for (int64_t d = 0; d < 16; ++d) {
            if (bnsd) {
              set(k, {b, n, j, d}, p.ka(b, n, j, d));
              set(v, {b, n, j, d}, p.va(b, n, j, d));
            } else {
              set(k, {b, j, n, d}, p.ka(b, n, j, d));
              set(v, {b, j, n, d}, p.va(b, n, j, d));
            }
          }
    }
    a.key = {k};
    a.value = {v};
    expect_same(ifa_reference(bsh), ifa_reference(a));
  }
}

TEST(IfaReference, PseBroadcastEqualsRepeatedRows) {
  Logical p(3, 2, 1, 16, 8, 6);
  Store st;
  IfaArgs one = p.bsh(st);
  IfaArgs all = one;
  TensorView p1 = st.make(DType::kFloat16, {1, 2, 1, 8});
  TensorView pb = st.make(DType::kFloat16, {3, 2, 1, 8});
  testing::TestRng rng(7);
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t j = 0; j < 8; ++j) {
      const double x = core::round_to_fp16(static_cast<float>(rng.normal()));
      set(p1, {0, h, 0, j}, x);
      for (int64_t b = 0; b < 3; ++b) set(pb, {b, h, 0, j}, x);
    }
  one.pse_shift = p1;
  all.pse_shift = pb;
  const IfaReference r = ifa_reference(one);
  expect_same(r, ifa_reference(all));
  // ... and the pse does change the result.
  const IfaReference none = ifa_reference(p.bsh(st));
  EXPECT_NE(r.attention[0], none.attention[0]);
}

TEST(IfaReference, LeftPaddingShiftsAndStartBelowZeroIsEmpty) {
  // S = 10, pad = 3: batch 0 (len 5) attends [2, 7); batch 1 (len 9) starts at -2 -> empty.
  Logical p(2, 2, 1, 16, 10, 8);
  Store st;
  IfaArgs a = p.bsh(st);
  a.actual_seq_lengths = std::vector<int64_t>{5, 9};
  TensorView pad = st.make(DType::kInt64, {1});
  set(pad, {0}, 3);
  a.kv_padding_size = pad;
  const IfaReference r = ifa_reference(a);
  // The same data right-padded: positions [2, 7) moved to [0, 5).
  Logical s = p;
  for (int64_t j = 0; j < 5; ++j)
    for (int64_t d = 0; d < 16; ++d) {
      s.ka(0, 0, j, d) = p.ka(0, 0, j + 2, d);
      s.va(0, 0, j, d) = p.va(0, 0, j + 2, d);
    }
  IfaArgs ar = s.bsh(st);
  ar.actual_seq_lengths = std::vector<int64_t>{5, 9};
  const IfaReference rr = ifa_reference(ar);
  for (int64_t h = 0; h < 2; ++h) {
    for (int64_t d = 0; d < 16; ++d) {
      EXPECT_EQ(r.attention[r.index(0, h, d)], rr.attention[rr.index(0, h, d)]);
      EXPECT_EQ(r.attention[r.index(1, h, d)], 0.0);
    }
    EXPECT_EQ(r.row_kind[r.row(1, h)], IfaRowKind::kEmpty);
    EXPECT_EQ(r.lse[r.row(1, h)], -kInf);
  }
  // Left padding is ignored without actual_seq_lengths (docs/semantics.md §2.7).
  IfaArgs no_len = p.bsh(st);
  no_len.kv_padding_size = pad;
  expect_same(ifa_reference(no_len), ifa_reference(p.bsh(st)));
}

TEST(IfaReference, LengthZeroWithInt8OutputGivesQuantisedOffset) {
  Logical p(1, 2, 1, 16, 4, 9);
  Store st;
  IfaArgs a = p.bsh(st);
  a.actual_seq_lengths = std::vector<int64_t>{0};
  a.attention_out = st.make(DType::kInt8, {1, 1, 32});
  a.quant_scale2 = st.make(DType::kFloat32, {2, 16});
  a.quant_offset2 = st.make(DType::kFloat32, {2, 16});
  const double offsets[] = {2.5, 3.5, -2.5, 200.0, -0.4, 1.0};
  for (int64_t i = 0; i < 32; ++i) {
    set(*a.quant_scale2, {i / 16, i % 16}, 10.0);
    set(*a.quant_offset2, {i / 16, i % 16}, offsets[i % 6]);
  }
  const IfaReference r = ifa_reference(a);
  const double want[] = {2.0, 4.0, -2.0, 127.0, 0.0, 1.0};
  for (int64_t i = 0; i < 32; ++i) {
    EXPECT_EQ(r.rounded[i], want[i % 6]) << i;
    EXPECT_EQ(r.attention[i], 0.0);
  }
  EXPECT_EQ(r.lse[0], -kInf);
  EXPECT_EQ(r.row_kind[1], IfaRowKind::kEmpty);
}

TEST(IfaReference, PostQuantIsPerQueryHead) {
  Logical p(1, 4, 1, 16, 6, 10);
  Store st;
  IfaArgs fp = p.bsh(st);
  IfaArgs q8 = fp;
  q8.attention_out = st.make(DType::kInt8, {1, 1, 64});
  q8.quant_scale2 = st.make(DType::kFloat32, {4, 16});
  for (int64_t h = 0; h < 4; ++h)
    for (int64_t d = 0; d < 16; ++d) set(*q8.quant_scale2, {h, d}, 10.0 * (h + 1));
  const IfaReference r = ifa_reference(fp), rq = ifa_reference(q8);
  for (int64_t h = 0; h < 4; ++h)
    for (int64_t d = 0; d < 16; ++d) {
      const int64_t i = r.index(0, h, d);
      EXPECT_DOUBLE_EQ(rq.expected[i], r.attention[i] * 10.0 * (h + 1));
      EXPECT_EQ(rq.rounded[i], ifa_round_to_dtype(rq.expected[i], DType::kInt8));
    }
}

TEST(IfaReference, PagedEqualsContiguous) {
  Logical p(2, 4, 2, 16, 40, 11);
  Store st;
  IfaArgs c = p.bsh(st);
  c.actual_seq_lengths = std::vector<int64_t>{37, 16};
  for (bool four_d : {false, true}) {
    IfaArgs a = c;
    const int64_t bs = 16, blocks = 6;
    // Blocks of batch 0: 4, 0, 5; batch 1: 2; slot 3 and the rest -1; blocks 1 and 3 unused.
    const int32_t table[2][4] = {{4, 0, 5, -1}, {2, -1, -1, -1}};
    TensorView bt = st.make(DType::kInt32, {2, 4});
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t i = 0; i < 4; ++i) set(bt, {b, i}, table[b][i]);
    const std::vector<int64_t> shape =
        four_d ? std::vector<int64_t>{blocks, 2, bs, 16} : std::vector<int64_t>{blocks, bs, 32};
    TensorView k = st.make(DType::kFloat16, shape), v = st.make(DType::kFloat16, shape);
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t j = 0; j < (*c.actual_seq_lengths)[b]; ++j)
        for (int64_t n = 0; n < 2; ++n)
          for (int64_t d = 0; d < 16; ++d) {
            const int64_t blk = table[b][j / bs], o = j % bs;
            if (four_d) {
              set(k, {blk, n, o, d}, p.ka(b, n, j, d));
              set(v, {blk, n, o, d}, p.va(b, n, j, d));
            } else {
              set(k, {blk, o, n * 16 + d}, p.ka(b, n, j, d));
              set(v, {blk, o, n * 16 + d}, p.va(b, n, j, d));
            }
          }
    a.key = {k};
    a.value = {v};
    a.block_table = bt;
    a.block_size = bs;
    if (four_d) {
      // The 4-D cache needs BNSD; the query values stay the same.
      a.input_layout = "BNSD";
      a.query = st.make(DType::kFloat16, {2, 4, 1, 16});
      for (int64_t b = 0; b < 2; ++b)
        for (int64_t h = 0; h < 4; ++h)
          for (int64_t d = 0; d < 16; ++d) set(a.query, {b, h, 0, d}, p.qa(b, h, d));
      a.attention_out = a.query;
    }
    expect_same(ifa_reference(c), ifa_reference(a));
  }
}

TEST(IfaReference, ListEqualsContiguous) {
  Logical p(3, 2, 2, 16, 12, 12);
  Store st;
  IfaArgs c = p.bsh(st);
  c.actual_seq_lengths = std::vector<int64_t>{12, 5, 9};
  IfaArgs l = c;
  l.actual_seq_lengths.reset();  // each list tensor's own S is its length
  l.key.clear();
  l.value.clear();
  for (int64_t b = 0; b < 3; ++b) {
    const int64_t s = (*c.actual_seq_lengths)[b];
    TensorView k = st.make(DType::kFloat16, {1, s, 32}), v = st.make(DType::kFloat16, {1, s, 32});
    for (int64_t j = 0; j < s; ++j)
      for (int64_t n = 0; n < 2; ++n)
        for (int64_t d = 0; d < 16; ++d) {
          set(k, {0, j, n * 16 + d}, p.ka(b, n, j, d));
          set(v, {0, j, n * 16 + d}, p.va(b, n, j, d));
        }
    l.key.push_back(k);
    l.value.push_back(v);
  }
  expect_same(ifa_reference(c), ifa_reference(l));
}

TEST(IfaReference, PerTensorAntiquantEqualsPredequantisedValues) {
  // (x + off) * sc with sc a power of two and integer offsets is exact in fp16.
  Logical p(2, 2, 1, 16, 6, 13);
  testing::TestRng rng(14);
  std::vector<double> kx(p.k.size()), vx(p.v.size());
  const double sk = 1.0 / 64, ok = 3, sv = 1.0 / 32, ov = -5;
  for (size_t i = 0; i < kx.size(); ++i) {
    kx[i] = static_cast<double>(rng.below(256)) - 128;
    vx[i] = static_cast<double>(rng.below(256)) - 128;
    p.k[i] = (kx[i] + ok) * sk;
    p.v[i] = (vx[i] + ov) * sv;
  }
  Store st;
  const IfaArgs fp = p.bsh(st);
  IfaArgs q8 = fp;
  TensorView k = st.make(DType::kInt8, {2, 6, 16}), v = st.make(DType::kInt8, {2, 6, 16});
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t j = 0; j < 6; ++j)
      for (int64_t d = 0; d < 16; ++d) {
        set(k, {b, j, d}, kx[(b * 6 + j) * 16 + d]);
        set(v, {b, j, d}, vx[(b * 6 + j) * 16 + d]);
      }
  q8.key = {k};
  q8.value = {v};
  q8.antiquant_scale = st.make(DType::kFloat16, {2});
  q8.antiquant_offset = st.make(DType::kFloat16, {2});
  set(*q8.antiquant_scale, {0}, sk);
  set(*q8.antiquant_scale, {1}, sv);
  set(*q8.antiquant_offset, {0}, ok);
  set(*q8.antiquant_offset, {1}, ov);
  expect_same(ifa_reference(fp), ifa_reference(q8));
}

TEST(IfaReference, PerChannelAntiquantEqualsPredequantisedValues) {
  // Scale/offset per (kv head, channel) in the (2, KV_N, 1, D) shape; powers of two and integer
  // offsets keep (x + off) * sc exact in fp16.
  const int64_t B = 1, KVN = 2, S = 5, D = 16;
  Logical p(B, 4, KVN, D, S, 21);
  testing::TestRng rng(22);
  std::vector<double> sc(2 * KVN * D), off(2 * KVN * D);
  for (size_t i = 0; i < sc.size(); ++i) {
    sc[i] = std::ldexp(1.0, -4 - static_cast<int>(rng.below(4)));
    off[i] = static_cast<double>(rng.below(9)) - 4;
  }
  std::vector<double> kx(p.k.size()), vx(p.v.size());
  for (int64_t n = 0; n < KVN; ++n)
    for (int64_t j = 0; j < S; ++j)
      for (int64_t d = 0; d < D; ++d) {
        const size_t i = static_cast<size_t>((n * S + j) * D + d);
        kx[i] = static_cast<double>(rng.below(256)) - 128;
        vx[i] = static_cast<double>(rng.below(256)) - 128;
        p.k[i] = (kx[i] + off[n * D + d]) * sc[n * D + d];
        p.v[i] = (vx[i] + off[(KVN + n) * D + d]) * sc[(KVN + n) * D + d];
      }
  Store st;
  const IfaArgs fp = p.bsh(st);
  IfaArgs q8 = fp;
  TensorView k = st.make(DType::kInt8, {B, S, KVN * D}), v = st.make(DType::kInt8, {B, S, KVN * D});
  for (int64_t n = 0; n < KVN; ++n)
    for (int64_t j = 0; j < S; ++j)
      for (int64_t d = 0; d < D; ++d) {
        set(k, {0, j, n * D + d}, kx[(n * S + j) * D + d]);
        set(v, {0, j, n * D + d}, vx[(n * S + j) * D + d]);
      }
  q8.key = {k};
  q8.value = {v};
  q8.antiquant_scale = st.make(DType::kFloat16, {2, KVN, 1, D});
  q8.antiquant_offset = st.make(DType::kFloat16, {2, KVN, 1, D});
  for (int64_t w = 0; w < 2; ++w)
    for (int64_t n = 0; n < KVN; ++n)
      for (int64_t d = 0; d < D; ++d) {
        set(*q8.antiquant_scale, {w, n, 0, d}, sc[(w * KVN + n) * D + d]);
        set(*q8.antiquant_offset, {w, n, 0, d}, off[(w * KVN + n) * D + d]);
      }
  expect_same(ifa_reference(fp), ifa_reference(q8));
}

TEST(IfaReference, PerHeadMaskIsLogicalElement) {
  // (B, N, 1, S) mask: head 1 of batch 1 fully masked, nothing else.
  Logical p(2, 2, 1, 16, 5, 15);
  Store st;
  IfaArgs a = p.bsh(st);
  TensorView m = st.make(DType::kUInt8, {2, 2, 1, 5});
  for (int64_t j = 0; j < 5; ++j) set(m, {1, 1, 0, j}, 7);
  a.atten_mask = m;
  const IfaReference r = ifa_reference(a), u = ifa_reference(p.bsh(st));
  EXPECT_EQ(r.row_kind[r.row(1, 1)], IfaRowKind::kFullyMasked);
  for (int64_t row : {r.row(0, 0), r.row(0, 1), r.row(1, 0)}) {
    EXPECT_EQ(r.row_kind[row], IfaRowKind::kNormal);
    EXPECT_EQ(r.lse[row], u.lse[row]);
  }
}

TEST(IfaReference, ScaleValueIsUsedAsFloat) {
  Logical p(1, 2, 1, 16, 5, 16);
  Store st;
  IfaArgs a = p.bsh(st), b = p.bsh(st);
  a.scale_value = 0.1;
  b.scale_value = static_cast<double>(0.1f);
  expect_same(ifa_reference(a), ifa_reference(b));
}

// ---- the shared case list ----------------------------------------------------------------------

TEST(IfaCaseList, NamesAreUniqueInEveryTier) {
  for (testing::Tier t : {testing::Tier::kSmoke, testing::Tier::kCi, testing::Tier::kFull}) {
    const auto cases = testing::ifa_cases(t);
    EXPECT_GE(cases.size(), t == testing::Tier::kSmoke ? 8u : 100u);
    std::set<std::string> names;
    for (const auto& c : cases) {
      EXPECT_TRUE(names.insert(c.test_name()).second) << c.name();
      EXPECT_EQ(c.inconsistency(), "") << c.name();
    }
  }
}

TEST(IfaCaseList, DataIsDeterministic) {
  const auto cases = testing::ifa_cases(testing::Tier::kSmoke);
  ASSERT_FALSE(cases.empty());
  testing::IfaCaseData x(cases[0]), y(cases[0]);
  const TensorView& qx = x.args().query;
  const TensorView& qy = y.args().query;
  const size_t bytes = static_cast<size_t>(qx.numel()) * dtype_size(qx.dtype);
  EXPECT_EQ(std::memcmp(qx.base(), qy.base(), bytes), 0);
}

// The reference over every case of the run's tier: finite wherever a row attends something (so no
// poisoned slot is ever read), and informative (the comparator's vacuity check passes on the
// reference itself).
TEST(IfaCaseList, ReferenceIsFiniteAndInformative) {
  for (const testing::IfaCase& c : testing::ifa_cases_for_run()) {
    SCOPED_TRACE(c.name());
    testing::IfaCaseData data(c);
    const IfaReference r = ifa_reference(data.args());
    for (size_t i = 0; i < r.expected.size(); ++i) {
      ASSERT_TRUE(std::isfinite(r.expected[i])) << "element " << i;
    }
    for (double l : r.lse) ASSERT_FALSE(std::isnan(l));
    // Feed the reference's own rounded values through the comparator: it must accept them.
    IfaArgs a = data.args();
    std::vector<std::byte> out(static_cast<size_t>(a.attention_out.numel()) *
                               dtype_size(a.attention_out.dtype));
    TensorView o = a.attention_out;
    o.data = out.data();
    for (int64_t b = 0; b < r.batch; ++b)
      for (int64_t h = 0; h < r.num_heads; ++h)
        for (int64_t d = 0; d < r.head_dim; ++d) {
          const double x = r.rounded[r.index(b, h, d)];
          // The output is contiguous and Q_S = 1, so every layout stores (b, h, d) row-major.
          const int64_t e = (b * r.num_heads + h) * r.head_dim + d;
          char* p = static_cast<char*>(o.data) + e * static_cast<int64_t>(dtype_size(o.dtype));
          if (o.dtype == DType::kInt8) {
            *p = static_cast<char>(static_cast<int8_t>(x));
          } else if (o.dtype == DType::kFloat32) {
            const float f = static_cast<float>(x);
            std::memcpy(p, &f, 4);
          } else {
            const uint16_t bits = o.dtype == DType::kFloat16
                                      ? core::float_to_fp16(static_cast<float>(x))
                                      : core::float_to_bf16(static_cast<float>(x));
            std::memcpy(p, &bits, 2);
          }
        }
    a.attention_out = o;
    a.softmax_lse.reset();
    testing::IfaCompareOptions opt;
    opt.allow_mostly_empty = c.expect_mostly_empty;
    EXPECT_TRUE(testing::compare_ifa_output(c.name(), a, r, opt));
  }
}

// ---- the comparator itself: it must fail on what it exists to catch ---------------------------

struct Written {
  IfaArgs args;
  std::vector<std::byte> out;
};

// args with attention_out holding ref's rounded values (fp16 output).
Written write_reference(IfaArgs a, const IfaReference& r) {
  Written w;
  w.out.resize(static_cast<size_t>(a.attention_out.numel()) * dtype_size(a.attention_out.dtype));
  a.attention_out.data = w.out.data();
  for (size_t i = 0; i < r.rounded.size(); ++i)
    set(a.attention_out, {0, 0, static_cast<int64_t>(i)}, r.rounded[i]);
  w.args = a;
  return w;
}

TEST(IfaCompare, AcceptsReferenceAndRejectsPerturbations) {
  Logical p(1, 2, 1, 16, 9, 17);
  Store st;
  IfaArgs a = p.bsh(st);
  a.attention_out = st.make(DType::kFloat16, {1, 1, 32});
  const IfaReference r = ifa_reference(a);
  Written w = write_reference(a, r);
  EXPECT_TRUE(testing::compare_ifa_output("ok", w.args, r));
  // One element moved by 4 ulp of fp16 relative to max|V| fails, and the message names it.
  const double bump = 4 * 0x1p-10 * r.v_absmax[r.row(0, 1)];
  set(w.args.attention_out, {0, 0, 16 + 3}, r.rounded[r.index(0, 1, 3)] + bump);
  const auto bad = testing::compare_ifa_output("bumped", w.args, r);
  EXPECT_FALSE(bad);
  EXPECT_NE(std::string(bad.message()).find("b=0, h=1, d=3"), std::string::npos) << bad.message();
  // NaN fails.
  set(w.args.attention_out, {0, 0, 16 + 3}, std::numeric_limits<double>::quiet_NaN());
  EXPECT_FALSE(testing::compare_ifa_output("nan", w.args, r));
}

TEST(IfaCompare, RejectsVacuousReference) {
  Logical p(1, 2, 1, 16, 9, 18);
  Store st;
  IfaArgs a = p.bsh(st);
  a.actual_seq_lengths = std::vector<int64_t>{0};  // everything empty: output all zeros
  a.attention_out = st.make(DType::kFloat16, {1, 1, 32});
  const IfaReference r = ifa_reference(a);
  Written w = write_reference(a, r);
  EXPECT_FALSE(testing::compare_ifa_output("vacuous", w.args, r));
  testing::IfaCompareOptions allow;
  allow.allow_mostly_empty = true;
  EXPECT_TRUE(testing::compare_ifa_output("vacuous-allowed", w.args, r, allow));
}

TEST(IfaCompare, Int8WithinOneLsbAndEmptyRowsExact) {
  Logical p(1, 2, 1, 16, 9, 19);
  Store st;
  IfaArgs a = p.bsh(st);
  a.attention_out = st.make(DType::kInt8, {1, 1, 32});
  a.quant_scale2 = st.make(DType::kFloat32, {1});
  set(*a.quant_scale2, {0}, 90.0);
  const IfaReference r = ifa_reference(a);
  Written w = write_reference(a, r);
  EXPECT_TRUE(testing::compare_ifa_output("i8", w.args, r));
  const double x = r.rounded[5];
  set(w.args.attention_out, {0, 0, 5}, x > 0 ? x - 1 : x + 1);
  EXPECT_TRUE(testing::compare_ifa_output("i8-1lsb", w.args, r));
  set(w.args.attention_out, {0, 0, 5}, x > 0 ? x - 2 : x + 2);
  EXPECT_FALSE(testing::compare_ifa_output("i8-2lsb", w.args, r));
}

TEST(IfaCompare, LseChecked) {
  Logical p(1, 2, 1, 16, 9, 20);
  Store st;
  IfaArgs a = p.bsh(st);
  a.attention_out = st.make(DType::kFloat16, {1, 1, 32});
  const IfaReference r = ifa_reference(a);
  Written w = write_reference(a, r);
  w.args.softmax_lse = st.make(DType::kFloat32, {1, 2});
  set(*w.args.softmax_lse, {0, 0}, r.lse[0]);
  set(*w.args.softmax_lse, {0, 1}, r.lse[1]);
  EXPECT_TRUE(testing::compare_ifa_output("lse", w.args, r));
  set(*w.args.softmax_lse, {0, 1}, r.lse[1] + 0.01);
  EXPECT_FALSE(testing::compare_ifa_output("lse-off", w.args, r));
}

}  // namespace
}  // namespace kvflash
