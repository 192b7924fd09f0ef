// The IFA kernel on the matrix engine (src/cpu/ifa/ifa_tiles-inl.h) against the fp64 reference
// over every case of the shared IFA case list (support/ifa_cases.hpp), every output element, at
// 1, 2 and 5 threads, with the other ISAs' tolerances (support/compare.hpp); the worst
// |diff| / bound per engine and output dtype is printed when the program ends.
//   - Emulated: the body on the software model of the tiles (support/ifa_emu_tiles.hpp), both
//     compile-time P·V choices, on every machine with AVX512-BF16: the same bits at every thread
//     count, and with tile passes of at most 3 heads instead of 16 (head blocking); the
//     avx512bf16 kernels run beside them, for their worst err/tol;
//   - Hardware: the cpu-amx entry's kernels on the CPU's tiles, skipped (with the reason) where the
//     amx level is not detected;
//   - the tile half's AVX-512 helpers directly: its probability packing bit for bit against
//     cpu::amx::pack_probs (special values included), its score transpose element for element.
// The kernels run the way a backend entry runs them (support/ifa_run.hpp, run_ifa_kernels), with
// the kernel table chosen here rather than by the backend list. tests/nonfinite_test.cpp and
// tests/ifa_determinism_test.cpp run the emulated engines too (support/ifa_run.hpp, ifa_paths).
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "cpu/amx/amx_kernels-inl.h"
#include "cpu/ifa/ifa_kernel.hpp"
#include "cpu/ifa/ifa_kernel_isa.hpp"
#include "cpu/isa.hpp"
#include "ifa_reference.hpp"
#include "support/compare.hpp"
#include "support/ifa_cases.hpp"
#include "support/ifa_emu_tiles.hpp"
#include "support/ifa_run.hpp"
#include "support/test_rng.hpp"

namespace kvflash::testing {
namespace {

constexpr int kThreadCounts[] = {1, 2, 5};

// Worst |diff| / bound per "engine dtype", printed at the end.
std::map<std::string, double>& worst_by_engine() {
  static std::map<std::string, double> w;
  return w;
}

class WorstPrinter : public ::testing::Environment {
 public:
  void TearDown() override {
    for (const auto& [key, w] : worst_by_engine()) {
      std::printf("amx ifa worst err/tol %s: %.3g\n", key.c_str(), w);
    }
  }
};
[[maybe_unused]] ::testing::Environment* const kWorstPrinter =
    ::testing::AddGlobalTestEnvironment(new WorstPrinter);

// Runs case c on kernels k at every thread count: each run against the reference, and the output
// (and LSE) bits equal at every thread count. Returns the output bytes of the first run.
std::vector<std::byte> check_case(const IfaCase& c, IfaCaseData& data,
                                  const reference::IfaReference& ref, const char* engine,
                                  const cpu::IfaKernels& k) {
  std::vector<std::byte> first_out, first_lse;
  for (int threads : kThreadCounts) {
    SCOPED_TRACE(std::string("engine=") + engine + " threads=" + std::to_string(threads));
    data.poison_outputs();
    data.mutable_args().num_threads = threads;
    EXPECT_TRUE(run_ifa_kernels(data.args(), k)) << c.name();
    double worst = 0.0;
    IfaCompareOptions options;
    options.allow_mostly_empty = c.expect_mostly_empty;
    options.worst = &worst;
    EXPECT_TRUE(compare_ifa_output(c.name(), data.args(), ref, options));
    double& w = worst_by_engine()[std::string(engine) + " " + dtype_name(c.out_dtype)];
    w = std::max(w, worst);
    if (first_out.empty()) {
      first_out = data.output_bytes();
      first_lse = data.lse_bytes();
      continue;
    }
    EXPECT_TRUE(data.output_bytes() == first_out)
        << c.name() << ": output bits differ from 1 thread";
    EXPECT_TRUE(data.lse_bytes() == first_lse) << c.name() << ": LSE bits differ from 1 thread";
  }
  return first_out;
}

class AmxIfaEmulated : public ::testing::TestWithParam<IfaCase> {};

TEST_P(AmxIfaEmulated, MatchesReference) {
  if (cpu::detected_isa() < cpu::Isa::kAvx512Bf16) {
    GTEST_SKIP() << "the emulated engine's vector parts need AVX512-BF16";
  }
  const IfaCase& c = GetParam();
  IfaCaseData data(c);
  const reference::IfaReference ref = reference::ifa_reference(data.args());
  const std::vector<std::byte> tiles = check_case(c, data, ref, "emulated", kIfaKernelsEmuTiles);
  check_case(c, data, ref, "emulated-pv-fma", kIfaKernelsEmuTilesPvFma);
  // The vector kernels of the level below, for their worst err/tol beside these.
  check_case(c, data, ref, "avx512bf16", cpu::avx512::kIfaKernelsBf16);
  // Passes of at most 3 heads (G > 3 then takes several, the last one overlapping): same bits.
  data.poison_outputs();
  data.mutable_args().num_threads = 2;
  ASSERT_TRUE(run_ifa_kernels(data.args(), kIfaKernelsEmuTilesNarrow)) << c.name();
  EXPECT_TRUE(data.output_bytes() == tiles)
      << c.name() << ": tile passes of 3 heads change the output bits";
}

INSTANTIATE_TEST_SUITE_P(Cases, AmxIfaEmulated, ::testing::ValuesIn(ifa_cases_for_run()),
                         [](const ::testing::TestParamInfo<IfaCase>& info) {
                           return info.param.test_name();
                         });

// Groups of more than 16 heads, which the entry's engine cuts into several tile passes, the last
// one overlapping the one before where 16 does not divide them evenly (G = 17: passes at heads 0
// and 8 of 9 each; 35: 0, 12, 23; 50: 0, 13, 26, 37), and a task of 3 kv heads x 2 passes of 9.
std::vector<IfaCase> wide_group_cases() {
  struct Shape {
    int64_t n, kvn, d;
    DType q, kv, out;
    int64_t block_size;  // 0: contiguous
  };
  constexpr DType kF16 = DType::kFloat16, kBf16 = DType::kBFloat16, kI8 = DType::kInt8;
  const Shape shapes[] = {
      {17, 1, 64, kF16, kF16, kF16, 0},    {51, 3, 128, kBf16, kBf16, kBf16, 16},
      {35, 1, 80, kF16, kI8, kF16, 0},     {50, 1, 64, kBf16, kBf16, DType::kFloat32, 0},
      {40, 2, 128, kBf16, kI8, kBf16, 32}, {64, 1, 64, kF16, kF16, kF16, 0},
  };
  std::vector<IfaCase> cases;
  for (const Shape& sh : shapes) {
    IfaCase c;
    c.layout = IfaLayout::kBsnd;
    c.q_dtype = sh.q, c.kv_dtype = sh.kv, c.out_dtype = sh.out;
    c.batch = 2;
    c.num_heads = sh.n, c.num_kv_heads = sh.kvn, c.head_dim = sh.d;
    c.kv_lens = {70, 33};
    c.lse = true;
    if (sh.kv == kI8) c.antiquant = QuantMode::kPerChannel;
    if (sh.block_size > 0) c.paged = true, c.block_size = sh.block_size;
    c.tag = "widegroup";
    EXPECT_EQ(c.inconsistency(), "") << c.name();
    cases.push_back(c);
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(WideGroups, AmxIfaEmulated, ::testing::ValuesIn(wide_group_cases()),
                         [](const ::testing::TestParamInfo<IfaCase>& info) {
                           return info.param.test_name();
                         });

class AmxIfaHardware : public ::testing::TestWithParam<IfaCase> {};

TEST_P(AmxIfaHardware, MatchesReference) {
  if (cpu::detected_isa() < cpu::Isa::kAmx) {
    GTEST_SKIP() << "no amx level: " << cpu::amx_unavailable_reason();
  }
  const IfaCase& c = GetParam();
  IfaCaseData data(c);
  const reference::IfaReference ref = reference::ifa_reference(data.args());
  check_case(c, data, ref, "hardware", cpu::amx::kIfaKernelsAllTiles);
}

INSTANTIATE_TEST_SUITE_P(Cases, AmxIfaHardware, ::testing::ValuesIn(ifa_cases_for_run()),
                         [](const ::testing::TestParamInfo<IfaCase>& info) {
                           return info.param.test_name();
                         });
INSTANTIATE_TEST_SUITE_P(WideGroups, AmxIfaHardware, ::testing::ValuesIn(wide_group_cases()),
                         [](const ::testing::TestParamInfo<IfaCase>& info) {
                           return info.param.test_name();
                         });

// The values the bf16 split treats apart: +-0, subnormals, values of 24 significand bits, ties of
// the last piece's rounding, the largest finite value, +-inf and NaN.
const float kSplitSpecials[] = {0.0f,
                                -0.0f,
                                1.0f,
                                0x1.000002p-3f,
                                0x1.0181p0f,
                                0x1.01808p0f,
                                0x1.fffffep127f,
                                0x1p-149f,
                                0x1.8p-130f,
                                __builtin_inff(),
                                -__builtin_inff(),
                                __builtin_nanf(""),
                                -__builtin_nanf("")};

// The tile half's AVX-512 probability packing against the scalar cpu::amx::pack_probs, bit for
// bit, on every head and key count and piece count, with kSplitSpecials among random values.
TEST(AmxIfaTileHelpers, PackProbsMatchesScalarBitForBit) {
  if (cpu::detected_isa() < cpu::Isa::kAvx512) GTEST_SKIP() << "needs AVX-512";
  TestRng rng(2026120501);
  constexpr int kStride = 40;
  std::vector<float> p(16 * kStride);
  for (int trial = 0; trial < 400; ++trial) {
    for (float& x : p) {
      const int64_t pick = rng.below(4);
      x = pick == 0   ? kSplitSpecials[rng.below(sizeof(kSplitSpecials) / sizeof(float))]
          : pick == 1 ? std::bit_cast<float>(static_cast<uint32_t>(rng.next()))
                      : static_cast<float>(rng.uniform(-1.0, 1.0));
    }
    const int m = 1 + trial % 16, n = 1 + (trial * 7) % 32, pieces = 1 + trial % 3;
    std::vector<uint16_t> want(cpu::amx::prob_pack_size(m, pieces));
    std::vector<uint16_t> got(want.size(), 0xbeef);
    cpu::amx::pack_probs(p.data(), kStride, m, n, pieces, want.data());
    ifa_tiles_pack_probs(p.data(), kStride, m, n, pieces, got.data());
    ASSERT_EQ(got, want) << "m " << m << " n " << n << " pieces " << pieces;
  }
}

// The tile half's AVX-512 query packing against the scalar cpu::amx::pack_query_f32, bit for bit,
// on every head count, head dims with partial chunks, and 1-3 pieces, with kSplitSpecials among
// random values (the output is filled with a marker first, so an element left unwritten shows).
TEST(AmxIfaTileHelpers, PackQueryMatchesScalarBitForBit) {
  if (cpu::detected_isa() < cpu::Isa::kAvx512) GTEST_SKIP() << "needs AVX-512";
  TestRng rng(2026120502);
  const int dims[] = {16, 20, 32, 64, 100, 128, 192, 256};
  for (int trial = 0; trial < 300; ++trial) {
    const int m = 1 + trial % 16, d = dims[(trial / 16) % 8], pieces = 1 + trial % 3;
    const int stride = d + 5;
    std::vector<float> q(static_cast<size_t>((m - 1) * stride + d));  // exactly what is read
    for (float& x : q) {
      const int64_t pick = rng.below(4);
      x = pick == 0   ? kSplitSpecials[rng.below(sizeof(kSplitSpecials) / sizeof(float))]
          : pick == 1 ? std::bit_cast<float>(static_cast<uint32_t>(rng.next()))
                      : static_cast<float>(rng.uniform(-1.0, 1.0));
    }
    std::vector<uint16_t> want(cpu::amx::query_pack_size(m, d, pieces));
    std::vector<uint16_t> got(want.size(), 0xbeef);
    cpu::amx::pack_query_f32(q.data(), stride, m, d, pieces, want.data());
    ifa_tiles_pack_query(q.data(), stride, m, d, pieces, got.data());
    ASSERT_EQ(got, want) << "m " << m << " d " << d << " pieces " << pieces;
  }
}

// The score transpose: row c of the output is column c of the 16 x 16 block, for rows [c0, c1)
// only (the rest untouched).
TEST(AmxIfaTileHelpers, Transpose16WritesTheAskedColumns) {
  if (cpu::detected_isa() < cpu::Isa::kAvx512) GTEST_SKIP() << "needs AVX-512";
  std::vector<float> in(16 * 20);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i);
  for (int c0 = 0; c0 < 16; c0 += 5) {
    for (int c1 = c0; c1 <= 16; c1 += 3) {
      std::vector<float> out(16 * 32, -1.0f);
      ifa_tiles_transpose16(in.data(), 20, c0, c1, out.data(), 32);
      for (int c = 0; c < 16; ++c) {
        for (int r = 0; r < 32; ++r) {
          const float want = c >= c0 && c < c1 && r < 16 ? in[r * 20 + c] : -1.0f;
          ASSERT_EQ(out[c * 32 + r], want) << c0 << ".." << c1 << " row " << c << " col " << r;
        }
      }
    }
  }
}

}  // namespace
}  // namespace kvflash::testing
