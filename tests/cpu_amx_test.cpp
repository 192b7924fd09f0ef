// The AMX microkernels (src/cpu/amx/) against fp64: the bf16 pieces of fp32 / fp16 / int8 values,
// the packed layouts, the scores (K rows straight from a cache as the A operand) and P·V, with
// tails (keys not a multiple of 16 or 32, channels not a multiple of 32, 1..16 heads), non-finite
// inputs, zeros and subnormals, and the independence of a key's score bits from the blocking.
// Every kernel test runs twice: on the software model of the tiles (tests/support/amx_emu.hpp),
// on every machine, and on the CPU's tiles where the amx level is detected (skipped elsewhere,
// with the reason).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/half.hpp"
#include "cpu/amx/amx_kernels.hpp"
#include "cpu/isa.hpp"
#include "support/amx_emu.hpp"

namespace kvflash::cpu::amx {
namespace {

using testing::EmuTiles;

constexpr double kU = 0x1p-24;  // fp32 unit roundoff
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// ---- the pieces ---------------------------------------------------------------------------

TEST(AmxSplit, ThreePiecesAreExactForFp32) {
  std::mt19937 rng(1);
  std::uniform_int_distribution<uint32_t> bits;
  int checked = 0;
  for (int i = 0; i < 200000; ++i) {
    const float x = std::bit_cast<float>(bits(rng));
    if (!std::isfinite(x)) continue;
    // Pieces of values from 2^-102 up stay normal (the last holds bits down to 2^-24 |x|).
    if (std::fabs(x) < 0x1p-102f && x != 0.0f) continue;
    uint16_t p[3];
    split_to_bf16(x, 3, p);
    ASSERT_EQ(sum_of_pieces(p, 3), static_cast<double>(x)) << std::hexfloat << x;
    ++checked;
  }
  EXPECT_GT(checked, 150000);
}

TEST(AmxSplit, TwoPiecesWithin2ToMinus16) {
  std::mt19937 rng(2);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::uniform_int_distribution<int> e(-60, 60);
  for (int i = 0; i < 100000; ++i) {
    const float x = std::ldexp(u(rng), e(rng));
    uint16_t p[2];
    split_to_bf16(x, 2, p);
    ASSERT_LE(std::fabs(sum_of_pieces(p, 2) - x), 0x1p-16 * std::fabs(x)) << x;
  }
  // The largest finite fp32 does not overflow into an inf piece.
  uint16_t p[3];
  split_to_bf16(std::numeric_limits<float>::max(), 3, p);
  EXPECT_EQ(sum_of_pieces(p, 3), static_cast<double>(std::numeric_limits<float>::max()));
}

TEST(AmxSplit, EveryFp16IsTwoExactPieces) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float x = core::fp16_to_float(static_cast<uint16_t>(h));
    uint16_t p[2];
    split_to_bf16(x, 2, p);
    if (std::isnan(x)) {
      EXPECT_TRUE(std::isnan(core::bf16_to_float(p[0]))) << h;
      EXPECT_EQ(p[1], 0) << h;
      continue;
    }
    ASSERT_EQ(sum_of_pieces(p, 2), static_cast<double>(x)) << "fp16 bits " << h;
    // No piece is a bf16 subnormal (the matrix engine would read it as zero), fp16 subnormals
    // included.
    for (uint16_t q : p) EXPECT_FALSE((q & 0x7f80u) == 0 && (q & 0x7fu) != 0) << h;
  }
}

TEST(AmxSplit, EveryInt8IsOneExactPiece) {
  for (int v = -128; v <= 127; ++v) {
    uint16_t p[1];
    split_to_bf16(static_cast<float>(v), 1, p);
    EXPECT_EQ(sum_of_pieces(p, 1), v);
  }
}

TEST(AmxSplit, NonFiniteGoWholeIntoTheFirstPiece) {
  for (float x : {kInf, -kInf, kNaN, std::bit_cast<float>(0x7f800001u)}) {
    uint16_t p[3];
    split_to_bf16(x, 3, p);
    const float hi = core::bf16_to_float(p[0]);
    EXPECT_EQ(std::isnan(hi), std::isnan(x));
    if (!std::isnan(x)) {
      EXPECT_EQ(hi, x);
    }
    EXPECT_EQ(p[1], 0);
    EXPECT_EQ(p[2], 0);
  }
  uint16_t p[3];
  split_to_bf16(-0.0f, 3, p);
  EXPECT_EQ(p[0], 0x8000);
  EXPECT_EQ(sum_of_pieces(p, 3), 0.0);
}

// ---- packing ------------------------------------------------------------------------------

TEST(AmxPack, VectorValuePackMatchesScalar) {
  if (detected_isa() < Isa::kAvx512) GTEST_SKIP() << "no AVX-512";
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> bits(0, 0xffff);
  for (int d : {16, 20, 32, 48, 64, 100, 128, 256}) {
    for (int n : {1, 2, 15, 31, 32}) {
      const ptrdiff_t stride = d + 3;
      std::vector<uint16_t> v(static_cast<size_t>((n - 1) * stride + d));  // exactly what is read
      for (auto& x : v) x = static_cast<uint16_t>(bits(rng));
      std::vector<uint16_t> want(value_pack_size(d, KvType::kBf16), 1);
      std::vector<uint16_t> got(want.size(), 2);
      const bool finite = pack_values<KvType::kBf16>(v.data(), stride, n, d, want.data());
      EXPECT_EQ(pack_values_bf16_avx512(v.data(), stride, n, d, got.data()), finite);
      ASSERT_EQ(got, want) << "d " << d << " n " << n;
    }
  }
}

// The full-tile fast path of pack_values_bf16_avx512 (32 rows, whole 32-channel chunks) with
// +-inf and the values around it (largest finite, NaNs with the smallest payloads) planted at
// every position in turn: the finiteness answer and the packing match the scalar code.
TEST(AmxPack, VectorValuePackFindsEveryInfinity) {
  if (detected_isa() < Isa::kAvx512) GTEST_SKIP() << "no AVX-512";
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> bits(0, 0x7f7f);  // finite, either sign below
  const uint16_t planted[] = {0x7f80, 0xff80, 0x7f7f, 0xff7f, 0x7f81, 0xffc0, 0x7fff};
  for (int d : {32, 64, 128}) {
    const ptrdiff_t stride = d + 8;
    std::vector<uint16_t> v(static_cast<size_t>(31 * stride + d));
    for (auto& x : v) x = static_cast<uint16_t>(bits(rng) | (bits(rng) & 1) << 15);
    std::vector<uint16_t> want(value_pack_size(d, KvType::kBf16)), got(want.size());
    EXPECT_TRUE(pack_values_bf16_avx512(v.data(), stride, 32, d, got.data()));
    for (int k = 0; k < 32; k += 3) {
      for (int x = k % 5; x < d; x += 7) {
        for (uint16_t value : planted) {
          const uint16_t keep = v[k * stride + x];
          v[k * stride + x] = value;
          const bool finite = pack_values<KvType::kBf16>(v.data(), stride, 32, d, want.data());
          EXPECT_EQ(finite, (value & 0x7fff) != 0x7f80);
          ASSERT_EQ(pack_values_bf16_avx512(v.data(), stride, 32, d, got.data()), finite)
              << "d " << d << " key " << k << " channel " << x << " value " << value;
          ASSERT_EQ(got, want);
          v[k * stride + x] = keep;
        }
      }
    }
  }
}

// Rows of int8 or fp16 cache elements for the vector packing and K staging of the tile path:
// random bit patterns (every fp16 class: NaN, inf, subnormals, -0) or random finite ones, with
// `planted` values stored at every position in turn by the tests below.
struct TypedRows {
  TypedRows(KvType t, int n, int d, ptrdiff_t stride, bool finite, std::mt19937& rng)
      : type(t), stride(stride), bytes(static_cast<size_t>(((n - 1) * stride + d) * kv_bytes(t))) {
    std::uniform_int_distribution<int> bits(0, 0xffff);
    for (size_t i = 0; i < bytes.size(); i += kv_bytes(t)) {
      uint16_t b = static_cast<uint16_t>(bits(rng));
      if (finite && t == KvType::kFp16 && (b & 0x7c00) == 0x7c00) b &= 0xbfff;  // exponent < 31
      std::memcpy(&bytes[i], &b, kv_bytes(t));
    }
    for (int k = 0; k < n; ++k) row_ptr.push_back(bytes.data() + k * stride * kv_bytes(t));
  }
  void set(int k, int x, uint16_t value) {
    std::memcpy(&bytes[(k * stride + x) * kv_bytes(type)], &value, kv_bytes(type));
  }
  const void* const* rows() const { return reinterpret_cast<const void* const*>(row_ptr.data()); }
  template <class E>
  const E* const* typed() const {
    return reinterpret_cast<const E* const*>(row_ptr.data());
  }

  KvType type;
  ptrdiff_t stride;
  std::vector<std::byte> bytes;  // exactly what is read
  std::vector<const std::byte*> row_ptr;
};

// The specials planted: int8's ends and zero; fp16 +-inf, NaNs (smallest payloads, quiet and
// signalling), the largest finite, -0, the smallest and largest subnormals.
std::vector<uint16_t> specials_of(KvType t) {
  if (t == KvType::kInt8) return {0x80, 0x7f, 0x00, 0xff, 0x01};
  return {0x7c00, 0xfc00, 0x7c01, 0xfe00, 0x7fff, 0x7bff, 0xfbff,
          0x8000, 0x0001, 0x8001, 0x03ff, 0x83ff, 0x0400};
}

bool typed_pack_avx512(const TypedRows& v, int n, int d, uint16_t* out) {
  return v.type == KvType::kInt8 ? pack_value_rows_int8_avx512(v.typed<int8_t>(), n, d, out)
                                 : pack_value_rows_fp16_avx512(v.typed<uint16_t>(), n, d, out);
}
bool typed_pack_scalar(const TypedRows& v, int n, int d, uint16_t* out) {
  return v.type == KvType::kInt8 ? pack_value_rows<KvType::kInt8>(v.rows(), 1, n, d, out)
                                 : pack_value_rows<KvType::kFp16>(v.rows(), 1, n, d, out);
}

// pack_value_rows_{int8,fp16}_avx512 give pack_value_rows' bits and finiteness answer over random
// rows (all fp16 bit patterns, NaN and inf included) at every tail of keys and channels, and with
// each special planted at spread positions of finite rows.
TEST(AmxPack, Int8AndFp16ValuePackMatchScalar) {
  if (detected_isa() < Isa::kAvx512Bf16) GTEST_SKIP() << "no AVX512-BF16";
  std::mt19937 rng(31);
  for (KvType t : {KvType::kInt8, KvType::kFp16}) {
    for (int d : {16, 20, 32, 48, 64, 100, 128, 256}) {
      for (int n : {1, 2, 15, 31, 32}) {
        for (bool finite : {false, true}) {
          const TypedRows v(t, n, d, d + 5, finite, rng);
          std::vector<uint16_t> want(value_pack_size(d, t), 1), got(want.size(), 2);
          const bool want_finite = typed_pack_scalar(v, n, d, want.data());
          ASSERT_EQ(typed_pack_avx512(v, n, d, got.data()), want_finite) << "d " << d << " n " << n;
          ASSERT_EQ(got, want) << "type " << int(t) << " d " << d << " n " << n;
        }
      }
    }
  }
  for (KvType t : {KvType::kInt8, KvType::kFp16}) {
    for (int d : {40, 128}) {
      TypedRows v(t, 32, d, d, /*finite=*/true, rng);
      std::vector<uint16_t> want(value_pack_size(d, t)), got(want.size());
      for (int k = 0; k < 32; k += 3) {
        for (int x = k % 5; x < d; x += 11) {
          for (uint16_t value : specials_of(t)) {
            uint16_t keep = 0;
            std::memcpy(&keep, &v.bytes[(k * v.stride + x) * kv_bytes(t)], kv_bytes(t));
            v.set(k, x, value);
            const bool finite = typed_pack_scalar(v, 32, d, want.data());
            EXPECT_EQ(finite, t == KvType::kInt8 || (value & 0x7fff) != 0x7c00);
            ASSERT_EQ(typed_pack_avx512(v, 32, d, got.data()), finite)
                << "d " << d << " key " << k << " channel " << x << " value " << value;
            ASSERT_EQ(got, want) << "d " << d << " key " << k << " channel " << x;
            v.set(k, x, keep);
          }
        }
      }
    }
  }
}

// widen_rows_int8_avx512 / split_rows_fp16_avx512 write, element for element, what
// detail::stage_k stages for scores<Ops, T> (every 16-row block, chunk and piece), and nothing
// past d; specials planted as above.
TEST(AmxPack, Int8AndFp16KRowsMatchStaging) {
  if (detected_isa() < Isa::kAvx512Bf16) GTEST_SKIP() << "no AVX512-BF16";
  std::mt19937 rng(37);
  for (KvType t : {KvType::kInt8, KvType::kFp16}) {
    const int pieces = kv_pieces(t);
    for (int d : {16, 20, 32, 40, 128, 576}) {
      for (int n : {1, 16, 17, 32}) {
        TypedRows v(t, n, d, d + 3, /*finite=*/false, rng);
        const std::vector<uint16_t> specials = specials_of(t);
        for (size_t i = 0; i < specials.size(); ++i) {
          v.set(static_cast<int>(i) % n, static_cast<int>(i * 7) % d, specials[i]);
        }
        const ptrdiff_t out_stride = d + 9;
        constexpr uint16_t kUntouched = 0x5555;
        std::vector<uint16_t> out[2];
        for (auto& o : out) o.assign(static_cast<size_t>(n * out_stride), kUntouched);
        if (t == KvType::kInt8) {
          widen_rows_int8_avx512(v.typed<int8_t>(), n, d, out[0].data(), out_stride);
        } else {
          split_rows_fp16_avx512(v.typed<uint16_t>(), n, d, out[0].data(), out[1].data(),
                                 out_stride);
        }
        alignas(64) uint16_t stage[kTileRows * kTileK];
        const ptrdiff_t stride_bytes = v.stride * kv_bytes(t);
        for (int j0 = 0; j0 < n; j0 += kTileRows) {
          const int rows = n - j0 < kTileRows ? n - j0 : kTileRows;
          for (int x0 = 0; x0 < d; x0 += kTileK) {
            for (int p = 0; p < pieces; ++p) {
              const std::byte* k = v.row_ptr[j0];
              if (t == KvType::kInt8) {
                detail::stage_k<KvType::kInt8>(k, stride_bytes, rows, x0, d, p, stage);
              } else {
                detail::stage_k<KvType::kFp16>(k, stride_bytes, rows, x0, d, p, stage);
              }
              for (int r = 0; r < rows; ++r) {
                for (int x = 0; x < kTileK && x0 + x < d; ++x) {
                  ASSERT_EQ(out[p][(j0 + r) * out_stride + x0 + x], stage[r * kTileK + x])
                      << "type " << int(t) << " d " << d << " row " << j0 + r << " channel "
                      << x0 + x << " piece " << p;
                }
              }
            }
          }
        }
        for (int p = 0; p < pieces; ++p) {
          for (int r = 0; r < n; ++r) {
            for (ptrdiff_t x = d; x < out_stride; ++x) {
              ASSERT_EQ(out[p][r * out_stride + x], kUntouched) << "row " << r << " at " << x;
            }
          }
        }
      }
    }
  }
}

// ---- the engines: the model of the tiles, and the CPU's ----------------------------------

struct EmuScope : BasicTileScope<EmuTiles> {
  explicit EmuScope(int m) : BasicTileScope<EmuTiles>(decode_palette(m)) {}
};

struct Emulated {
  using Scope = EmuScope;
  static const char* unavailable() { return nullptr; }
  static void scores(KvType t, const void* k, ptrdiff_t ks, int n, int d, const uint16_t* qp, int m,
                     int qpieces, float* st, ptrdiff_t sts) {
    switch (t) {
      case KvType::kBf16:
        return amx::scores<EmuTiles, KvType::kBf16>(k, ks, n, d, qp, m, qpieces, st, sts);
      case KvType::kFp16:
        return amx::scores<EmuTiles, KvType::kFp16>(k, ks, n, d, qp, m, qpieces, st, sts);
      case KvType::kInt8:
        return amx::scores<EmuTiles, KvType::kInt8>(k, ks, n, d, qp, m, qpieces, st, sts);
    }
  }
  static void pv(const uint16_t* pp, int m, int ppieces, const uint16_t* vp, int vpieces, int d,
                 float* o, ptrdiff_t os) {
    amx::pv_accumulate<EmuTiles>(pp, m, ppieces, vp, vpieces, d, o, os);
  }
};

struct Hardware {
  using Scope = TileScope;
  static const char* unavailable() {
    return detected_isa() >= Isa::kAmx ? nullptr : amx_unavailable_reason();
  }
  static void scores(KvType t, const void* k, ptrdiff_t ks, int n, int d, const uint16_t* qp, int m,
                     int qpieces, float* st, ptrdiff_t sts) {
    amx::scores(t, k, ks, n, d, qp, m, qpieces, st, sts);
  }
  static void pv(const uint16_t* pp, int m, int ppieces, const uint16_t* vp, int vpieces, int d,
                 float* o, ptrdiff_t os) {
    amx::pv_accumulate(pp, m, ppieces, vp, vpieces, d, o, os);
  }
};

// A cache of n rows of d channels of type t at a row stride larger than d (so a kernel reading
// past a row's channels reads the next row, and the comparison shows it), sized to end exactly
// at the last row's last channel (ASan sees a read past the attended rows).
struct Cache {
  KvType type;
  int n, d;
  ptrdiff_t stride;
  std::vector<uint8_t> bytes;
  Cache(KvType t, int rows, int channels, std::mt19937& rng)
      : type(t), n(rows), d(channels), stride(channels + 5) {
    bytes.resize(static_cast<size_t>(((n - 1) * stride + d) * kv_bytes(t)));
    std::uniform_real_distribution<float> u(-2.0f, 2.0f);
    std::uniform_int_distribution<int> i8(-128, 127);
    for (int j = 0; j < n; ++j) {
      for (int x = 0; x < d; ++x) {
        if (t == KvType::kInt8) {
          set(j, x, static_cast<float>(i8(rng)));
        } else {
          set(j, x, u(rng));
        }
      }
    }
  }
  // Stores the nearest value of the type.
  void set(int j, int x, float v) {
    uint8_t* p = bytes.data() + (j * stride + x) * kv_bytes(type);
    if (type == KvType::kInt8) {
      const int8_t c = static_cast<int8_t>(v);
      std::memcpy(p, &c, 1);
    } else {
      const uint16_t h = type == KvType::kFp16 ? core::float_to_fp16(v) : core::float_to_bf16(v);
      std::memcpy(p, &h, 2);
    }
  }
  double at(int j, int x) const {
    const uint8_t* p = bytes.data() + (j * stride + x) * kv_bytes(type);
    if (type == KvType::kInt8) return static_cast<int8_t>(*p);
    uint16_t h;
    std::memcpy(&h, p, 2);
    return type == KvType::kFp16 ? core::fp16_to_float(h) : core::bf16_to_float(h);
  }
};

std::vector<float> random_query(int m, int d, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::uniform_int_distribution<int> e(-6, 6);
  std::vector<float> q(static_cast<size_t>(m) * d);
  for (float& x : q) x = std::ldexp(u(rng), e(rng));  // fp32 values bf16 cannot hold
  return q;
}

// Worst-case bound of an fp32 chain of `passes` tdpbf16ps (64 additions each) over terms whose
// magnitudes sum to `mass` (the CPU's measured bound is 4.46 u per pass: docs/perf-log.md, round 3).
double chain_bound(int passes, double mass) { return 64.0 * passes * kU * mass + 1e-36; }

template <class E>
class AmxKernelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const char* why = E::unavailable()) GTEST_SKIP() << "no amx level: " << why;
  }

  // Scores of m heads of query q (fp32, qpieces pieces) against the cache; returns the worst
  // error over the bound (<= 1 passes) and checks the non-finite classes against fp64.
  double check_scores(const Cache& k, const std::vector<float>& q, int m, int qpieces,
                      std::vector<float>* out = nullptr) {
    const int n = k.n, d = k.d;
    std::vector<uint16_t> qp(query_pack_size(m, d, qpieces));
    pack_query_f32(q.data(), d, m, d, qpieces, qp.data());
    const ptrdiff_t sts = m + 1;
    std::vector<float> st(static_cast<size_t>(n * sts), -7.0f);
    {
      typename E::Scope scope(m);
      E::scores(k.type, k.bytes.data(), k.stride, n, d, qp.data(), m, qpieces, st.data(), sts);
    }
    const int passes = num_chunks(d) * qpieces * kv_pieces(k.type);
    double worst = 0.0;
    for (int j = 0; j < n; ++j) {
      EXPECT_EQ(st[j * sts + m], -7.0f) << "wrote past m heads, key " << j;
      for (int i = 0; i < m; ++i) {
        double ref = 0.0, mass = 0.0;
        for (int x = 0; x < d; ++x) {
          const double t = k.at(j, x) * static_cast<double>(q[i * d + x]);
          ref += t, mass += std::fabs(t);
        }
        const float got = st[j * sts + i];
        if (!std::isfinite(ref)) {
          EXPECT_EQ(std::isnan(got), std::isnan(ref)) << "key " << j << " head " << i;
          if (!std::isnan(ref)) {
            EXPECT_EQ(got, ref) << "key " << j << " head " << i;
          }
          continue;
        }
        EXPECT_TRUE(std::isfinite(got)) << "key " << j << " head " << i;
        worst = std::max(worst, std::fabs(got - ref) / chain_bound(passes, mass));
      }
    }
    if (out) *out = st;
    return worst;
  }
};

using Engines = ::testing::Types<Emulated, Hardware>;
class EngineName {
 public:
  template <class E>
  static std::string GetName(int) {
    return std::is_same_v<E, Emulated> ? "Emulated" : "Hardware";
  }
};
TYPED_TEST_SUITE(AmxKernelTest, Engines, EngineName);

TYPED_TEST(AmxKernelTest, ScoresAgainstFp64) {
  std::mt19937 rng(10);
  for (KvType t : {KvType::kBf16, KvType::kFp16, KvType::kInt8}) {
    for (int d : {64, 128, 256, 40, 18, 576}) {
      for (int n : {1, 15, 16, 17, 31, 32, 33, 100}) {
        for (int m : {1, 2, 3, 4, 5, 7, 8, 16}) {
          if (d == 576 && n > 33) continue;  // the SFA row width, a few shapes
          const Cache k(t, n, d, rng);
          const auto q = random_query(m, d, rng);
          SCOPED_TRACE(::testing::Message()
                       << "type " << static_cast<int>(t) << " d " << d << " n " << n << " m " << m);
          EXPECT_LE(this->check_scores(k, q, m, 3), 1.0);
        }
      }
    }
  }
}

// The bound has power: one piece (q rounded to bf16, what the splitting avoids) fails it.
TYPED_TEST(AmxKernelTest, OnePieceOfAnFp32QueryFailsTheBound) {
  std::mt19937 rng(11);
  const Cache k(KvType::kBf16, 64, 128, rng);
  const auto q = random_query(4, 128, rng);
  EXPECT_GT(this->check_scores(k, q, 4, 1), 2.0);
  EXPECT_LE(this->check_scores(k, q, 4, 3), 1.0);
}

// bf16 and fp16 queries are exact in 1 and 2 pieces (pack_query).
TYPED_TEST(AmxKernelTest, CacheTypedQueries) {
  std::mt19937 rng(12);
  for (KvType t : {KvType::kBf16, KvType::kFp16}) {
    const int m = 6, d = 96, n = 40;
    const Cache k(t, n, d, rng);
    const Cache qc(t, m, d, rng);  // the query rows in the cache's type
    std::vector<float> q(static_cast<size_t>(m) * d);
    for (int i = 0; i < m; ++i) {
      for (int x = 0; x < d; ++x) q[i * d + x] = static_cast<float>(qc.at(i, x));
    }
    std::vector<uint16_t> qp(query_pack_size(m, d, kv_pieces(t)));
    std::vector<uint16_t> qp_f32(qp.size());
    if (t == KvType::kBf16) {
      pack_query<KvType::kBf16>(qc.bytes.data(), qc.stride, m, d, qp.data());
    } else {
      pack_query<KvType::kFp16>(qc.bytes.data(), qc.stride, m, d, qp.data());
    }
    pack_query_f32(q.data(), d, m, d, kv_pieces(t), qp_f32.data());
    EXPECT_EQ(qp, qp_f32);  // the same pieces as from the exact fp32 values
    EXPECT_LE(this->check_scores(k, q, m, kv_pieces(t)), 1.0);
  }
}

TYPED_TEST(AmxKernelTest, ScoresNonFiniteZerosSubnormals) {
  std::mt19937 rng(13);
  const int m = 5, d = 64, n = 20;
  for (KvType t : {KvType::kBf16, KvType::kFp16}) {
    Cache k(t, n, d, rng);
    k.set(3, 10, kNaN);                              // a NaN key: every head's score is NaN
    k.set(7, 0, kInf);                               // an infinite key: +-inf by the query's sign
    k.set(9, 1, kInf), k.set(9, 2, -kInf);           // +inf and -inf: NaN or +-inf, as fp64
    for (int x = 0; x < d; ++x) k.set(12, x, 0.0f);  // a zero key: +0
    auto q = random_query(m, d, rng);
    q[2 * d + 5] = kInf;  // an infinite query channel
    q[1 * d + 0] = 0.0f;  // head 1 meets key 7's inf with 0: NaN
    std::vector<float> st;
    EXPECT_LE(this->check_scores(k, q, m, 3, &st), 1.0);
    for (int i = 0; i < m; ++i) EXPECT_TRUE(std::isnan(st[3 * (m + 1) + i]));
    EXPECT_TRUE(std::isnan(st[7 * (m + 1) + 1]));
    EXPECT_EQ(std::bit_cast<uint32_t>(st[12 * (m + 1) + 0]), 0u);
  }
  // fp16 subnormal keys are normal bf16 pieces: the score against q = 1 is exact.
  Cache k(KvType::kFp16, 16, 32, rng);
  std::uniform_int_distribution<int> man(1, 0x3ff);
  for (int j = 0; j < 16; ++j) {
    for (int x = 0; x < 32; ++x) k.set(j, x, static_cast<float>(man(rng)) * 0x1p-24f);
  }
  std::vector<float> ones(32, 1.0f);
  std::vector<float> st;
  this->check_scores(k, ones, 1, 1, &st);
  for (int j = 0; j < 16; ++j) {
    double ref = 0.0;
    for (int x = 0; x < 32; ++x) ref += k.at(j, x);
    EXPECT_EQ(st[j * 2], ref) << j;
  }
}

// A key's score bits do not depend on the number of heads in the tile, nor on the number of keys
// or the key's place in a tile pair.
TYPED_TEST(AmxKernelTest, ScoreBitsIndependentOfBlocking) {
  std::mt19937 rng(14);
  for (KvType t : {KvType::kBf16, KvType::kFp16, KvType::kInt8}) {
    const int d = 128;
    const Cache k(t, 70, d, rng);
    const auto q = random_query(8, d, rng);
    std::vector<float> all, few_heads, few_keys;
    this->check_scores(k, q, 8, 3, &all);
    this->check_scores(k, std::vector<float>(q.begin(), q.begin() + 3 * d), 3, 3, &few_heads);
    Cache k17 = k;
    k17.n = 17;
    k17.bytes.resize(static_cast<size_t>((16 * k.stride + d) * kv_bytes(t)));
    this->check_scores(k17, q, 8, 3, &few_keys);
    for (int j = 0; j < 70; ++j) {
      for (int i = 0; i < 8; ++i) {
        const uint32_t a = std::bit_cast<uint32_t>(all[j * 9 + i]);
        if (i < 3) {
          EXPECT_EQ(std::bit_cast<uint32_t>(few_heads[j * 4 + i]), a) << j << " " << i;
        }
        if (j < 17) {
          EXPECT_EQ(std::bit_cast<uint32_t>(few_keys[j * 9 + i]), a) << j << " " << i;
        }
      }
    }
  }
}

TYPED_TEST(AmxKernelTest, PvAgainstFp64) {
  std::mt19937 rng(15);
  std::uniform_real_distribution<float> u(0.0f, 1.0f), s(-1.0f, 1.0f);
  std::uniform_int_distribution<int> e(-20, 0);
  for (KvType t : {KvType::kBf16, KvType::kFp16, KvType::kInt8}) {
    for (int d : {16, 40, 64, 128, 256, 512}) {
      for (int n : {1, 7, 31, 32}) {
        for (int m : {1, 3, 7, 8, 16}) {
          for (int ppieces : {3, 2}) {
            SCOPED_TRACE(::testing::Message()
                         << "type " << static_cast<int>(t) << " d " << d << " n " << n << " m " << m
                         << " P pieces " << ppieces);
            const Cache v(t, n, d, rng);
            std::vector<float> p(static_cast<size_t>(m) * n);
            for (float& x : p) x = std::ldexp(u(rng), e(rng));  // probabilities, fp32
            const int groups = num_groups(d);
            const ptrdiff_t os = 16 * groups + 3;
            std::vector<float> o(static_cast<size_t>(m) * os);
            for (float& x : o) x = s(rng);
            const std::vector<float> o0 = o;
            std::vector<uint16_t> pp(prob_pack_size(m, ppieces)), vp(value_pack_size(d, t));
            pack_probs(p.data(), n, m, n, ppieces, pp.data());
            switch (t) {
              case KvType::kBf16:
                pack_values<KvType::kBf16>(v.bytes.data(), v.stride, n, d, vp.data());
                break;
              case KvType::kFp16:
                pack_values<KvType::kFp16>(v.bytes.data(), v.stride, n, d, vp.data());
                break;
              case KvType::kInt8:
                pack_values<KvType::kInt8>(v.bytes.data(), v.stride, n, d, vp.data());
                break;
            }
            {
              typename TypeParam::Scope scope(m);
              TypeParam::pv(pp.data(), m, ppieces, vp.data(), kv_pieces(t), d, o.data(), os);
            }
            const int passes = ppieces * kv_pieces(t);
            double worst = 0.0;
            for (int i = 0; i < m; ++i) {
              for (int x = 0; x < os; ++x) {
                if (x >= 16 * groups) {  // past the groups: untouched
                  EXPECT_EQ(o[i * os + x], o0[i * os + x]);
                  continue;
                }
                double ref = o0[i * os + x], mass = std::fabs(ref), split = 0.0;
                for (int j = 0; j < n && x < d; ++j) {
                  const double term = static_cast<double>(p[i * n + j]) * v.at(j, x);
                  ref += term, mass += std::fabs(term);
                }
                // Two pieces of P carry <= 2^-16 relative error per weight.
                if (ppieces == 2) split = 0x1p-16 * (mass - std::fabs(o0[i * os + x]));
                worst = std::max(
                    worst, std::fabs(o[i * os + x] - ref) / (chain_bound(passes, mass) + split));
              }
            }
            EXPECT_LE(worst, 1.0);
          }
        }
      }
    }
  }
}

TYPED_TEST(AmxKernelTest, PvNonFinite) {
  std::mt19937 rng(16);
  const int m = 4, n = 32, d = 32;
  Cache v(KvType::kBf16, n, d, rng);
  v.set(5, 3, kNaN);  // channel 3: NaN for every head (0 * NaN is NaN too)
  std::vector<float> p(static_cast<size_t>(m) * n, 0.25f);
  p[1 * n + 5] = 0.0f;
  std::vector<float> o(static_cast<size_t>(m) * d, 0.0f);
  std::vector<uint16_t> pp(prob_pack_size(m, 3)), vp(value_pack_size(d, KvType::kBf16));
  pack_probs(p.data(), n, m, n, 3, pp.data());
  EXPECT_TRUE(pack_values<KvType::kBf16>(v.bytes.data(), v.stride, n, d, vp.data()));
  {
    typename TypeParam::Scope scope(m);
    TypeParam::pv(pp.data(), m, 3, vp.data(), 1, d, o.data(), d);
  }
  for (int i = 0; i < m; ++i) {
    EXPECT_TRUE(std::isnan(o[i * d + 3])) << i;
    EXPECT_TRUE(std::isfinite(o[i * d + 0])) << i;
  }
  // An infinite value is reported, for the FMA path (pack_values).
  v.set(6, 4, -kInf);
  EXPECT_FALSE(pack_values<KvType::kBf16>(v.bytes.data(), v.stride, n, d, vp.data()));
  Cache f(KvType::kFp16, n, d, rng);
  f.set(31, 31, kInf);
  std::vector<uint16_t> fp(value_pack_size(d, KvType::kFp16));
  EXPECT_FALSE(pack_values<KvType::kFp16>(f.bytes.data(), f.stride, n, d, fp.data()));
}

// The model's own shape checks fire (so a kernel passing on it issues only shapes the CPU takes).
// scores_split on fp16 rows split beforehand gives scores<KvType::kFp16>'s bits (the SFA tile
// half splits each gathered row once for all its passes of heads), infinite keys included.
TEST(AmxKernelSplit, SplitFp16RowsGiveTheSameScoreBits) {
  std::mt19937 rng(22);
  for (int d : {576, 64, 40}) {
    for (int n : {1, 16, 17, 64}) {
      for (int m : {1, 5, 16}) {
        for (int qpieces : {1, 2, 3}) {
          Cache k(KvType::kFp16, n, d, rng);
          k.set(n - 1, d / 2, std::numeric_limits<float>::infinity());
          const auto q = random_query(m, d, rng);
          std::vector<uint16_t> qp(query_pack_size(m, d, qpieces));
          pack_query_f32(q.data(), d, m, d, qpieces, qp.data());
          std::vector<uint16_t> hi(static_cast<size_t>(n * k.stride)), lo(hi.size());
          for (int j = 0; j < n; ++j) {
            for (int x = 0; x < d; ++x) {
              uint16_t piece[2];
              split_to_bf16(static_cast<float>(k.at(j, x)), 2, piece);
              hi[j * k.stride + x] = piece[0];
              lo[j * k.stride + x] = piece[1];
            }
          }
          std::vector<float> want(static_cast<size_t>(n) * m), got(want.size(), -7.0f);
          {
            EmuScope scope(m);
            amx::scores<EmuTiles, KvType::kFp16>(k.bytes.data(), k.stride, n, d, qp.data(), m,
                                                 qpieces, want.data(), m);
            amx::scores_split<EmuTiles>(hi.data(), lo.data(), k.stride, n, d, qp.data(), m, qpieces,
                                        got.data(), m);
          }
          ASSERT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * sizeof(float)))
              << "d " << d << " n " << n << " m " << m << " qpieces " << qpieces;
        }
      }
    }
  }
}

TEST(AmxEmulator, RejectsMismatchedShapes) {
  alignas(64) uint8_t buffer[kTileRows * kTileRowBytes] = {};
  EXPECT_THROW(EmuTiles::load<kTileQ>(buffer, kTileRowBytes), std::logic_error);  // unconfigured
  EmuScope scope(4);
  EXPECT_THROW((EmuTiles::dpbf16ps<kTileS0, kTileK0, kTileO>()), std::logic_error);
  EXPECT_THROW((EmuTiles::dpbf16ps<kTileO, kTileK0, kTileV>()), std::logic_error);
  EXPECT_NO_THROW((EmuTiles::dpbf16ps<kTileS0, kTileK0, kTileQ>()));
  EXPECT_NO_THROW((EmuTiles::dpbf16ps<kTileO, kTileP, kTileV>()));
}

}  // namespace
}  // namespace kvflash::cpu::amx
