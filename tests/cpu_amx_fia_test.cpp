// The FIA prefill kernel on the matrix engine (src/cpu/fia/fia_tiles-inl.h) against the fp64
// reference over every case of the shared FIA case list (support/fia_cases.hpp) plus cases shaped
// for the tiles (whole key tiles, 16-row blocks with a remainder, rope, value widths of 32 x k and
// 16 more, a shape the tiles do not take), every output element, at 1, 2 and 5 threads, with the
// other ISAs' tolerances; the worst |diff| / bound per engine and output dtype is printed when the
// program ends.
//   - Emulated: the cpu-amx entry's kernels on the software model of the tiles
//     (support/fia_emu_tiles.hpp), on every machine with AVX512-BF16: the same bits at every
//     thread count; the avx512bf16 kernels run beside them, for their worst err/tol;
//   - Hardware: the cpu-amx entry's kernels (cpu::amx::kFiaKernels) on the CPU's tiles, skipped
//     (with the reason) where the amx level is not detected.
// The kernels run the way the backend entry runs them (cpu::fia_entry_run), with the kernel table
// chosen here rather than by the backend list.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "cpu/fia/fia_kernel_isa.hpp"
#include "cpu/ifa/ifa_kernel_isa.hpp"
#include "cpu/isa.hpp"
#include "fia_reference.hpp"
#include "support/fia_cases.hpp"
#include "support/fia_emu_tiles.hpp"
#include "support/fia_run.hpp"

namespace kvflash::testing {
namespace {

constexpr int kThreadCounts[] = {1, 2, 5};

std::map<std::string, double>& worst_by_engine() {
  static std::map<std::string, double> w;
  return w;
}

class WorstPrinter : public ::testing::Environment {
 public:
  void TearDown() override {
    for (const auto& [key, w] : worst_by_engine()) {
      std::printf("amx fia worst err/tol %s: %.3g\n", key.c_str(), w);
    }
  }
};
[[maybe_unused]] ::testing::Environment* const kWorstPrinter =
    ::testing::AddGlobalTestEnvironment(new WorstPrinter);

std::vector<std::byte> output_bytes(const reference::FiaCall& call) {
  const TensorView& o = call.attention_out;
  size_t n = 1;
  for (int i = 0; i < o.rank; ++i) n *= static_cast<size_t>(o.shape[i]);
  std::vector<std::byte> bytes(n * dtype_size(o.dtype));
  std::memcpy(bytes.data(), o.data, bytes.size());
  return bytes;
}

// Runs case c on kernels k at every thread count, each run against the reference, the output bits
// equal at every thread count.
void check_case(const FiaCase& c, FiaCaseData& data, const reference::FiaReference& ref,
                const char* engine, const cpu::FiaKernels& k) {
  FiaArgs args = data.call();
  std::vector<std::byte> first;
  for (int threads : kThreadCounts) {
    SCOPED_TRACE(std::string("engine=") + engine + " threads=" + std::to_string(threads));
    data.poison_outputs();
    args.num_threads = threads;
    ASSERT_TRUE(run_fia_kernels(args, k)) << c.name();
    double worst = 0;
    EXPECT_TRUE(compare_fia_output(c.name(), data.call(), ref, &worst, c.expect_mostly_empty));
    double& w = worst_by_engine()[std::string(engine) + " " + dtype_name(c.out_dtype)];
    w = std::max(w, worst);
    if (first.empty()) {
      first = output_bytes(data.call());
    } else {
      EXPECT_TRUE(output_bytes(data.call()) == first)
          << c.name() << ": output bits differ from 1 thread";
    }
  }
}

// Prefill shapes for the tiles: several whole key tiles and a diagonal (mode 3), 16-row blocks
// with a remainder (G = 7: 36 query rows x 7 heads), rope (128 + 64), value widths 96 (three
// 32-channel blocks) and 80 (two and a 16-channel tail), paged, a sink, a sliding window, a
// full mask (no whole tile: the tiles score, the FMAs add P·V), and D = 80 (not a multiple of 32:
// the vdpbf16ps path).
std::vector<FiaCase> tile_cases() {
  std::vector<FiaCase> cases;
  const auto bf16 = [](FiaCase c) {
    c.q_dtype = c.kv_dtype = c.out_dtype = DType::kBFloat16;
    c.tag = "tiles";
    return c;
  };
  {
    FiaCase c;
    c.num_heads = 28, c.num_kv_heads = 4, c.head_dim = 128;
    c.q_lens = {150}, c.kv_lens = {150};
    c.sparse_mode = 3, c.mask = FiaMask::kCompressed, c.lse = true;
    cases.push_back(bf16(c));
  }
  {
    FiaCase c;
    c.layout = FiaLayout::kTnd;
    c.num_heads = 2, c.num_kv_heads = 2, c.head_dim = 96;
    c.q_lens = {70, 20}, c.kv_lens = {200, 129};
    cases.push_back(bf16(c));
  }
  {
    FiaCase c;
    c.layout = FiaLayout::kTnd;
    c.num_heads = 4, c.num_kv_heads = 4, c.head_dim = 128, c.value_dim = 128, c.rope_dim = 64;
    c.q_lens = {130}, c.kv_lens = {130};
    c.sparse_mode = 3, c.mask = FiaMask::kCompressed, c.lse = true;
    cases.push_back(bf16(c));
  }
  {
    FiaCase c;
    c.layout = FiaLayout::kTnd;
    c.num_heads = 8, c.num_kv_heads = 2, c.head_dim = 64, c.value_dim = 80;
    c.q_lens = {100, 3}, c.kv_lens = {100, 190};
    c.paged = true, c.block_size = 128;
    c.sparse_mode = 3, c.mask = FiaMask::kCompressed, c.sink = true;
    cases.push_back(bf16(c));
  }
  {
    FiaCase c;
    c.num_heads = 4, c.num_kv_heads = 1, c.head_dim = 64;
    c.q_lens = {140}, c.kv_lens = {140};
    c.sparse_mode = 4, c.mask = FiaMask::kCompressed, c.pre_tokens = 70, c.next_tokens = 0;
    cases.push_back(bf16(c));
  }
  {
    FiaCase c;
    c.num_heads = 2, c.num_kv_heads = 1, c.head_dim = 64;
    c.q_lens = {40}, c.kv_lens = {130};
    c.mask = FiaMask::kFull3;
    cases.push_back(bf16(c));
  }
  {
    FiaCase c;
    c.layout = FiaLayout::kTnd;
    c.num_heads = 4, c.num_kv_heads = 2, c.head_dim = 80;
    c.q_lens = {70}, c.kv_lens = {140};
    cases.push_back(bf16(c));
  }
  return cases;
}

std::vector<FiaCase> all_cases() {
  std::vector<FiaCase> cases;
  for (const FiaCase& c : fia_cases_for_run()) {
    if (c.dv() % 16 == 0) cases.push_back(c);  // the others are refused (BackendOpsFia)
  }
  for (const FiaCase& c : tile_cases()) cases.push_back(c);
  return cases;
}

class AmxFiaEmulated : public ::testing::TestWithParam<FiaCase> {};

TEST_P(AmxFiaEmulated, MatchesReference) {
  if (cpu::detected_isa() < cpu::Isa::kAvx512Bf16) {
    GTEST_SKIP() << "the emulated engine's vector parts need AVX512-BF16";
  }
  const FiaCase& c = GetParam();
  FiaCaseData data(c);
  const reference::FiaReference ref = reference::fia_reference(data.call());
  check_case(c, data, ref, "emulated", kFiaKernelsEmuTiles);
  // The vector kernels of the level below, for their worst err/tol beside these.
  check_case(c, data, ref, "avx512bf16", cpu::avx512::kFiaKernelsBf16);
}

INSTANTIATE_TEST_SUITE_P(Cases, AmxFiaEmulated, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<FiaCase>& info) {
                           return std::to_string(info.index) + "_" + info.param.test_name();
                         });

// The tiles' fold (FiaTiles::fold_block) keeps the bits of the per-row fold: its exp equals vexp
// and its 16-row reductions equal vreduce_max / vreduce_add for every input, bit for bit. Inputs:
// a stride through all 2^32 patterns, the ranges around vexp's clamps and the subnormal results,
// and the specials; rows with NaN, infinities and signed zeros for the reductions.
TEST(AmxFiaExp, SameBitsAsVexp) {
  if (cpu::detected_isa() < cpu::Isa::kAvx512Bf16) GTEST_SKIP() << "needs AVX512-BF16";
  std::vector<float> x;
  const auto bits = [](uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  };
  for (uint64_t u = 0; u < (uint64_t{1} << 32); u += 4093) x.push_back(bits(static_cast<uint32_t>(u)));
  for (float lo : {-105.0f, -104.0f, -88.0f, -1.0f, 88.0f}) {
    for (int i = 0; i < 20000; ++i) x.push_back(lo + static_cast<float>(i) * (2.0f / 20000));
  }
  for (float v : {0.0f, -0.0f, 1e-45f, -1e-45f, 89.0f, 89.5f, 88.72283f, -87.33654f, -103.97208f,
                  -1e30f, 1e30f, std::numeric_limits<float>::infinity(),
                  -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(),
                  -std::numeric_limits<float>::quiet_NaN(), bits(0x7fa00001u), bits(0xffc12345u)})
    x.push_back(v);
  while (x.size() % 16 != 0) x.push_back(0.5f);
  std::vector<float> w(x.size()), ref(x.size());
  fia_tiles_exps(x.data(), w.data(), ref.data(), static_cast<int64_t>(x.size()));
  int64_t differ = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::memcmp(&w[i], &ref[i], 4) != 0 && ++differ <= 5) {
      ADD_FAILURE() << "exp(" << x[i] << "): " << w[i] << " vs vexp " << ref[i];
    }
  }
  EXPECT_EQ(differ, 0);

  std::vector<float> rows(256);
  uint32_t state = 12345;
  for (int trial = 0; trial < 200; ++trial) {
    for (float& v : rows) {
      state = state * 1664525u + 1013904223u;
      v = static_cast<float>(static_cast<int32_t>(state)) * 1e-7f;
    }
    // Specials in some rows, at varying lanes.
    const float specials[] = {std::numeric_limits<float>::quiet_NaN(),
                              std::numeric_limits<float>::infinity(),
                              -std::numeric_limits<float>::infinity(), -0.0f, bits(0x7fc01234u)};
    for (int k = 0; k < trial % 6; ++k) rows[(trial * 37 + k * 53) % 256] = specials[(trial + k) % 5];
    float mx[16], sm[16], rmx[16], rsm[16];
    fia_tiles_reductions(rows.data(), mx, sm, rmx, rsm);
    ASSERT_EQ(std::memcmp(mx, rmx, sizeof mx), 0) << "max, trial " << trial;
    ASSERT_EQ(std::memcmp(sm, rsm, sizeof sm), 0) << "sum, trial " << trial;
  }
}

class AmxFiaHardware : public ::testing::TestWithParam<FiaCase> {};

TEST_P(AmxFiaHardware, MatchesReference) {
  const char* why = nullptr;
  if (!cpu::isa_available(cpu::Isa::kAmx, &why)) GTEST_SKIP() << "no amx level here: " << why;
  const FiaCase& c = GetParam();
  FiaCaseData data(c);
  const reference::FiaReference ref = reference::fia_reference(data.call());
  check_case(c, data, ref, "hardware", cpu::amx::kFiaKernels);
}

INSTANTIATE_TEST_SUITE_P(Cases, AmxFiaHardware, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<FiaCase>& info) {
                           return std::to_string(info.index) + "_" + info.param.test_name();
                         });

}  // namespace
}  // namespace kvflash::testing
