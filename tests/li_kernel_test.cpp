// The LightningIndexer CPU kernel (src/cpu/li/): every case of the shared list on every ISA this
// CPU has, checked slot by slot against the fp64 reference; output bits independent of the thread
// count; the top-k and the order keys on their own.
#include "cpu/li/li_kernel.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <vector>

#include "cpu/isa.hpp"
#include "li_reference.hpp"
#include "support/li_cases.hpp"
#include "support/li_compare.hpp"
#include "support/li_emu_tiles.hpp"
#include "support/li_run.hpp"
#include "support/test_rng.hpp"

namespace kvflash::testing {
namespace {

// Per-ISA totals over the sweep, printed once at the end (the numbers the closing note
// quotes).
struct Totals {
  int64_t cases = 0, normal_rows = 0, slots = 0, near_tie_swaps = 0;
  double worst_value_ratio = 0.0;
};
Totals g_totals[static_cast<int>(cpu::Isa::kAmx) + 1];  // one per ISA level

class LiKernelTest : public ::testing::TestWithParam<LiCase> {
 protected:
  static void TearDownTestSuite() {
    for (int isa = 0; isa <= static_cast<int>(cpu::detected_isa()); ++isa) {
      const Totals& t = g_totals[isa];
      std::printf(
          "[li] %-10s cases %lld, normal rows %lld, slots %lld, near-tie swaps %lld, worst value "
          "error %.3f of its tolerance\n",
          cpu::isa_name(static_cast<cpu::Isa>(isa)), static_cast<long long>(t.cases),
          static_cast<long long>(t.normal_rows), static_cast<long long>(t.slots),
          static_cast<long long>(t.near_tie_swaps), t.worst_value_ratio);
    }
  }
};

TEST_P(LiKernelTest, MatchesReferenceOnEveryIsa) {
  const LiCase& c = GetParam();
  LiCaseData data(c);
  const reference::LiReference ref = reference::li_reference(data.call());
  std::vector<std::byte> ws;
  for (int isa = 0; isa <= static_cast<int>(cpu::detected_isa()); ++isa) {
    SCOPED_TRACE(cpu::isa_name(static_cast<cpu::Isa>(isa)));
    data.poison_outputs();
    const Status st = li_run_call(data.call(), static_cast<cpu::Isa>(isa), 3, &ws);
    if (ref.fault.empty()) {
      ASSERT_EQ(st, Status::kSuccess) << last_error_message();
    } else {
      ASSERT_EQ(st, Status::kInvalid);
      EXPECT_NE(std::strstr(last_error_message(), ref.fault.c_str()), nullptr)
          << last_error_message() << " does not name " << ref.fault;
    }
    LiCompareStats stats;
    EXPECT_TRUE(compare_li_output(c.name(), data.call(), ref, c.expect_mostly_empty, &stats));
    Totals& t = g_totals[isa];
    ++t.cases;
    t.normal_rows += stats.normal_rows;
    t.slots += stats.slots;
    t.near_tie_swaps += stats.near_tie_swaps;
    t.worst_value_ratio = std::max(t.worst_value_ratio, stats.worst_value_ratio);
  }
}

// Rows are split across 1..5 participants (and the default count): the same bits every time, at
// every ISA level.
TEST_P(LiKernelTest, SameBitsForEveryThreadCount) {
  const LiCase& c = GetParam();
  if (c.work() > (int64_t{1} << 22)) GTEST_SKIP() << "large case: covered by the smaller ones";
  LiCaseData data(c);
  std::vector<std::byte> ws;
  for (int isa = 0; isa <= static_cast<int>(cpu::detected_isa()); ++isa) {
    SCOPED_TRACE(cpu::isa_name(static_cast<cpu::Isa>(isa)));
    std::vector<std::byte> first;
    for (int threads : {1, 2, 3, 4, 5, 0}) {
      data.poison_outputs();
      // Stale scratch (the previous run's keys) must not be able to stand in for work not done.
      std::fill(ws.begin(), ws.end(), std::byte{0xa5});
      (void)li_run_call(data.call(), static_cast<cpu::Isa>(isa), threads, &ws);
      if (first.empty()) {
        first = data.output_bytes();
      } else {
        EXPECT_TRUE(data.output_bytes() == first) << c.name() << ": threads " << threads;
      }
    }
  }
}

// The cpu-amx entry's scorer on the software model of the tiles (on machines without AMX; the
// amx level above runs it on the CPU's tiles where it exists): against the reference, and the same
// bits at every thread count.
TEST_P(LiKernelTest, EmulatedTilesMatchReference) {
  if (cpu::detected_isa() < cpu::Isa::kAvx512Bf16) {
    GTEST_SKIP() << "the emulated scorer's vector parts need AVX512-BF16";
  }
  const LiCase& c = GetParam();
  LiCaseData data(c);
  const reference::LiReference ref = reference::li_reference(data.call());
  std::vector<std::byte> ws, first;
  for (int threads : {1, 3}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    data.poison_outputs();
    const Status st = li_run_call(data.call(), kLiKernelsEmuTiles, threads, &ws);
    if (ref.fault.empty()) {
      ASSERT_EQ(st, Status::kSuccess) << last_error_message();
    } else {
      ASSERT_EQ(st, Status::kInvalid);
    }
    EXPECT_TRUE(compare_li_output(c.name(), data.call(), ref, c.expect_mostly_empty));
    if (first.empty()) {
      first = data.output_bytes();
    } else {
      EXPECT_TRUE(data.output_bytes() == first) << c.name() << ": threads " << threads;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, LiKernelTest, ::testing::ValuesIn(li_cases_for_run()),
                         [](const ::testing::TestParamInfo<LiCase>& info) {
                           return std::to_string(info.index) + "_" + info.param.test_name();
                         });

// The order keys rank like the D9 order: NaN (any sign or payload) first, then by value, with
// +0 and -0 equal; li_order_value inverts them (up to NaN payloads and the sign of zero).
TEST(LiOrderKey, RanksLikeTheSelectionOrder) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> v = {nan,
                          -nan,
                          inf,
                          -inf,
                          0.0f,
                          -0.0f,
                          1.0f,
                          -1.0f,
                          std::numeric_limits<float>::denorm_min(),
                          -std::numeric_limits<float>::denorm_min(),
                          std::numeric_limits<float>::max(),
                          -std::numeric_limits<float>::max()};
  TestRng rng(7);
  for (int i = 0; i < 2000; ++i) v.push_back(static_cast<float>(rng.normal() * 1e3));
  for (float a : v) {
    for (float b : {v[0], v[2], v[4], v[5], v[6], v[7], v[100], v[101]}) {
      const bool above = reference::li_score_above(a, b);
      const bool equal = !above && !reference::li_score_above(b, a);
      EXPECT_EQ(cpu::li_order_key(a) > cpu::li_order_key(b), above) << a << " vs " << b;
      EXPECT_EQ(cpu::li_order_key(a) == cpu::li_order_key(b), equal) << a << " vs " << b;
    }
    const float back = cpu::li_order_value(cpu::li_order_key(a));
    if (std::isnan(a)) {
      EXPECT_TRUE(std::isnan(back));
    } else {
      EXPECT_EQ(back, a);
    }
  }
}

// li_select_topk against a full sort of (key desc, index asc), on key sets with many duplicates
// (every radix digit boundary) and every relation of n to k.
TEST(LiSelectTopk, EqualsAFullSort) {
  TestRng rng(11);
  std::vector<uint32_t> hist(cpu::kLiRadixBins);
  for (int trial = 0; trial < 400; ++trial) {
    const int64_t n = trial % 5 == 0 ? rng.below(40) : rng.below(5000);
    const int64_t k = 1 + rng.below(trial % 3 == 0 ? 64 : 3000);
    std::vector<uint32_t> keys(std::max<int64_t>(n, 1));
    const int mode = trial % 4;
    for (int64_t j = 0; j < n; ++j) {
      const uint64_t x = rng.next();
      keys[j] = mode == 0   ? static_cast<uint32_t>(x)
                : mode == 1 ? static_cast<uint32_t>(x % 7) << (x % 3 == 0 ? 0 : 21)
                : mode == 2 ? 0x80000000u | static_cast<uint32_t>(x % 3) << 10 | (x >> 40) % 2
                            : 0xffffffffu - static_cast<uint32_t>(x % 2);
    }
    std::vector<int64_t> order(n);
    for (int64_t j = 0; j < n; ++j) order[j] = j;
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return keys[a] > keys[b]; });
    // Both entries (first digit histogrammed here or given), and a candidate buffer of the
    // real size and of a small one (the full-pass fallback on mass ties).
    for (int variant = 0; variant < 4; ++variant) {
      const bool given = variant % 2 == 1;
      const int64_t cap = variant < 2 ? cpu::li_topk_candidates(k, n) : 1 + rng.below(64);
      std::vector<uint64_t> sel(k + 1), tmp(k);
      std::vector<int32_t> idx(k, -7), cand(cap + 1);
      std::fill(hist.begin(), hist.end(), given ? 0u : 0xdeadu);
      if (given) {
        for (int64_t j = 0; j < n; ++j) ++hist[keys[j] >> cpu::kLiRadixShift0];
      }
      const cpu::LiTopkScratch ts{hist.data(), sel.data(), tmp.data(), cand.data(), cap};
      const int64_t c = cpu::li_select_topk(keys.data(), n, k, ts, given, idx.data());
      ASSERT_EQ(c, std::min(n, k)) << "trial " << trial;
      for (int64_t s = 0; s < c; ++s) {
        ASSERT_EQ(idx[s], order[s]) << "trial " << trial << " variant " << variant << " slot " << s
                                    << " n " << n << " k " << k;
        ASSERT_EQ(static_cast<uint32_t>(sel[s] >> 32), keys[order[s]]);
      }
    }
  }
}

}  // namespace
}  // namespace kvflash::testing
