// The SFA kernel on the matrix engine (src/cpu/sfa/sfa_tiles-inl.h) against the fp64 reference
// over every case of the shared SFA case list (support/sfa_cases.hpp), every output element, at
// 1, 2 and 5 threads (which also change the head blocks of the tasks), with the other ISAs'
// tolerances (support/sfa_compare.hpp); the worst |diff| / bound per engine and dtype is printed
// when the program ends.
//   - Emulated: the body on the software model of the tiles (support/sfa_emu_tiles.hpp) on every
//     machine with AVX512-BF16: the same bits at every thread count, and with tile passes of at
//     most 3 heads instead of 16; the avx512 kernels run beside it, for their worst err/tol;
//   - Hardware: the cpu-amx entry's kernels on the CPU's tiles, skipped (with the reason) where the
//     amx level is not detected.
// The kernels run the way a backend entry runs them (support/sfa_run.hpp), with the kernel table
// chosen here rather than by the backend list.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "cpu/isa.hpp"
#include "cpu/sfa/sfa_kernel.hpp"
#include "cpu/sfa/sfa_kernel_isa.hpp"
#include "sfa_reference.hpp"
#include "support/sfa_cases.hpp"
#include "support/sfa_compare.hpp"
#include "support/sfa_emu_tiles.hpp"
#include "support/sfa_run.hpp"

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
      std::printf("amx sfa worst err/tol %s: %.3g\n", key.c_str(), w);
    }
  }
};
[[maybe_unused]] ::testing::Environment* const kWorstPrinter =
    ::testing::AddGlobalTestEnvironment(new WorstPrinter);

std::string dtype_key(const SfaCase& c) {
  if (c.fp32_out) return c.dtype == DType::kBFloat16 ? "bf16->fp32" : "fp16->fp32";
  return c.dtype == DType::kBFloat16 ? "bf16" : "fp16";
}

// Runs case c on kernels k at every thread count: each run against the reference, and the output
// (and softmax) bits equal at every thread count. Returns the output bytes of the first run.
std::vector<std::byte> check_case(const SfaCase& c, SfaCaseData& data,
                                  const reference::SfaReference& ref, const char* engine,
                                  const cpu::SfaKernels& k) {
  std::vector<std::byte> first;
  for (int threads : kThreadCounts) {
    SCOPED_TRACE(std::string("engine=") + engine + " threads=" + std::to_string(threads));
    data.poison_outputs();
    data.mutable_args().num_threads = threads;
    EXPECT_TRUE(run_sfa_kernels(data.args(), k)) << c.name();
    double worst = 0.0;
    EXPECT_TRUE(compare_sfa_output(c.name(), data.args(), ref, c.expect_mostly_empty, &worst));
    double& w = worst_by_engine()[std::string(engine) + " " + dtype_key(c)];
    w = std::max(w, worst);
    if (first.empty()) {
      first = data.output_bytes();
      continue;
    }
    EXPECT_TRUE(data.output_bytes() == first) << c.name() << ": bits differ from 1 thread";
  }
  return first;
}

class AmxSfaEmulated : public ::testing::TestWithParam<SfaCase> {};

TEST_P(AmxSfaEmulated, MatchesReference) {
  if (cpu::detected_isa() < cpu::Isa::kAvx512Bf16) {
    GTEST_SKIP() << "the emulated engine's vector parts need AVX512-BF16";
  }
  const SfaCase& c = GetParam();
  SfaCaseData data(c);
  const reference::SfaReference ref = reference::sfa_reference(data.args());
  const std::vector<std::byte> tiles = check_case(c, data, ref, "emulated", kSfaKernelsEmuTiles);
  // The vector kernels of the level below, for their worst err/tol beside these.
  check_case(c, data, ref, "avx512", cpu::avx512::kSfaKernels);
  // Passes of at most 3 heads (more than 3 heads then take several, the last one overlapping).
  data.poison_outputs();
  data.mutable_args().num_threads = 2;
  ASSERT_TRUE(run_sfa_kernels(data.args(), kSfaKernelsEmuTilesNarrow)) << c.name();
  EXPECT_TRUE(data.output_bytes() == tiles)
      << c.name() << ": tile passes of 3 heads change the output bits";
}

INSTANTIATE_TEST_SUITE_P(Cases, AmxSfaEmulated, ::testing::ValuesIn(sfa_cases_for_run()),
                         [](const ::testing::TestParamInfo<SfaCase>& info) {
                           return info.param.test_name();
                         });

// Cases of the list's kinds that the tile half treats apart: infinite values in the selected
// rows (a P·V block on the vector FMAs), 128 heads (8 tile passes) and 48 heads (passes of 16,
// or of 3 in the narrow engine, the last one overlapping).
std::vector<SfaCase> tile_cases() {
  std::vector<SfaCase> cases;
  for (DType dt : {DType::kFloat16, DType::kBFloat16}) {
    SfaCase c;
    c.kv_layout = SfaKvLayout::kPaBsnd;
    c.dtype = dt;
    c.num_heads = 128;
    c.sparse_size = 100;
    c.q_lens = {1, 2};
    c.kv_lens = {150, 77};
    c.block_size = 32;
    c.sinks = true;
    c.lse = true;
    c.tag = "tiles128";
    cases.push_back(c);
    SfaCase s = c;
    s.num_heads = 32;
    s.strided = true;
    s.value_separate = true;
    s.fp32_out = true;
    s.kv_layout = SfaKvLayout::kBsnd;
    s.tag = "tiles32s";
    cases.push_back(s);
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Tiles, AmxSfaEmulated, ::testing::ValuesIn(tile_cases()),
                         [](const ::testing::TestParamInfo<SfaCase>& info) {
                           return info.param.test_name();
                         });

class AmxSfaHardware : public ::testing::TestWithParam<SfaCase> {};

TEST_P(AmxSfaHardware, MatchesReference) {
  if (cpu::detected_isa() < cpu::Isa::kAmx) {
    GTEST_SKIP() << "no amx level: " << cpu::amx_unavailable_reason();
  }
  const SfaCase& c = GetParam();
  SfaCaseData data(c);
  const reference::SfaReference ref = reference::sfa_reference(data.args());
  check_case(c, data, ref, "hardware", cpu::amx::kSfaKernelsAllTiles);
}

INSTANTIATE_TEST_SUITE_P(Cases, AmxSfaHardware, ::testing::ValuesIn(sfa_cases_for_run()),
                         [](const ::testing::TestParamInfo<SfaCase>& info) {
                           return info.param.test_name();
                         });
INSTANTIATE_TEST_SUITE_P(Tiles, AmxSfaHardware, ::testing::ValuesIn(tile_cases()),
                         [](const ::testing::TestParamInfo<SfaCase>& info) {
                           return info.param.test_name();
                         });

}  // namespace
}  // namespace kvflash::testing
