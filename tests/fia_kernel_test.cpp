// The CPU prefill kernel (src/cpu/fia/) against the fp64 reference over the shared case list, at
// every ISA this CPU has and several thread counts, every output element checked; and its
// determinism (same bits for any thread count and batch composition).
//
// bind() (tests/support/fia_bind.hpp) reduces a case to the kernel's FiaParams on its own, apart
// from the operator's validation and binding (src/ops/fia/, tested through FiaPlan by
// tests/backend_ops_test.cpp): per-batch rows, offsets and the visibility band of D3/D4, pse /
// mask columns, antiquant and post-quant parameters, the shared prefix and tensor lists. Cases
// outside the kernel's subset (value D not a multiple of
// 16) are counted and skipped by name.
#include "cpu/fia/fia_kernel.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "cpu/isa.hpp"
#include "fia_reference.hpp"
#include "support/fia_bind.hpp"
#include "support/fia_cases.hpp"
#include "support/ifa_run.hpp"
#include "support/workspace_buffer.hpp"

namespace kvflash::testing {
namespace {

using cpu::FiaBatch;
using cpu::FiaPointers;
using cpu::FiaPadRow;
using cpu::FiaParams;

void run_kernel(const FiaBound& bd, int threads) {
  WorkspaceBuffer ws(cpu::fia_workspace_size(bd.p));
  cpu::fia_run(bd.p, bd.d, ws.data(), ws.size(), threads);
}

std::vector<std::byte> bytes_of(const TensorView& t) {
  const auto* p = static_cast<const std::byte*>(t.data);
  return {p, p + t.numel() * static_cast<int64_t>(dtype_size(t.dtype))};
}

std::vector<FiaCase> covered_cases() {
  std::vector<FiaCase> cs;
  for (const FiaCase& c : fia_cases_for_run())
    if (fia_kernel_covers(c)) cs.push_back(c);
  return cs;
}

std::map<std::string, double>& worst_by_dtype() {
  static std::map<std::string, double> w;
  return w;
}

constexpr int kThreadCounts[] = {1, 2, 5};

class FiaKernelTest : public ::testing::TestWithParam<FiaCase> {};

TEST_P(FiaKernelTest, MatchesReference) {
  const FiaCase& c = GetParam();
  FiaCaseData data(c);
  const reference::FiaReference ref = reference::fia_reference(data.call());
  const FiaBound bd = bind(c, data.call());
  for (cpu::Isa isa : isas_to_test()) {
    ScopedIsaCap cap(isa);
    for (int threads : kThreadCounts) {
      SCOPED_TRACE(std::string("isa=") + cpu::isa_name(isa) +
                   " threads=" + std::to_string(threads));
      data.poison_outputs();
      run_kernel(bd, threads);
      double worst = 0;
      ASSERT_TRUE(compare_fia_output(c.name(), data.call(), ref, &worst, c.expect_mostly_empty));
      double& w = worst_by_dtype()[dtype_name(c.out_dtype)];
      w = std::max(w, worst);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, FiaKernelTest, ::testing::ValuesIn(covered_cases()),
                         [](const ::testing::TestParamInfo<FiaCase>& info) {
                           return info.param.test_name();
                         });

// Same bits for 1..7 threads, and for a batch run alone vs inside the whole batch.
TEST(FiaKernel, DeterministicAcrossThreadsAndBatchComposition) {
  int checked = 0;
  for (const FiaCase& c : covered_cases()) {
    if (c.batch() < 2 || c.work() < 200000) continue;
    FiaCaseData data(c);
    const FiaBound bd = bind(c, data.call());
    data.poison_outputs();
    run_kernel(bd, 1);
    const std::vector<std::byte> one = bytes_of(data.call().attention_out);
    for (int threads : {2, 3, 7}) {
      data.poison_outputs();
      run_kernel(bd, threads);
      ASSERT_EQ(bytes_of(data.call().attention_out), one) << c.name() << " threads=" << threads;
    }
    // Each batch alone (its rows only; the others keep the poison). Not with per-token
    // antiquant: the kernel finds a batch's parameter row by its index b, which running batch b
    // as batch 0 renumbers.
    const bool per_token =
        c.antiquant == FiaAntiquant::kCombinedToken || c.antiquant == FiaAntiquant::kSplitToken;
    for (int64_t b = 0; b < c.batch() && !per_token; ++b) {
      FiaBound alone = bd;
      alone.p.batch = 1;
      alone.p.batches = &alone.batches[b];
      alone.p.num_pad_rows = 0;
      data.poison_outputs();
      run_kernel(alone, 3);
      const std::vector<std::byte> part = bytes_of(data.call().attention_out);
      const reference::FiaReference ref = reference::fia_reference(data.call());
      const size_t es = dtype_size(c.out_dtype);
      for (int64_t r = 0; r < ref.rows; ++r) {
        if (ref.row_batch[r] != b) continue;
        for (int64_t h = 0; h < c.num_heads; ++h) {
          const size_t at =
              static_cast<size_t>(reference::fia_out_element(data.call(), r, h, 0)) * es;
          ASSERT_EQ(std::memcmp(part.data() + at, one.data() + at, es * c.dv()), 0)
              << c.name() << " batch " << b << " row " << r;
        }
      }
    }
    ++checked;
  }
  EXPECT_GE(checked, 3);
}

// The bf16 path's key tiles packed once per (batch, KV head) (FiaPackedKv) give the bits the
// tasks' own packing gives: a workspace of fia_workspace_size packs every eligible unit in one
// wave; smaller ones (fia_run packs into what is left past the other regions) pack in two waves,
// leave units that do not fit unpacked, or pack nothing. Three batches, the middle one a single
// query tile (never packed), causal and a sliding window (packed ranges not starting at tile 0),
// at every ISA with the bf16 path here (avx512bf16: vdpbf16ps; amx: the tiles).
TEST(FiaKernel, PackedKeyTilesKeepTheBits) {
  constexpr size_t kTile = 64 * (128 + 128) * 2;  // one packed key tile, Dk = Dv = 128
  int checked = 0;
  for (int64_t mode : {3, 4}) {
    FiaCase c;
    c.layout = FiaLayout::kBsnd;
    c.q_dtype = c.kv_dtype = c.out_dtype = DType::kBFloat16;
    c.num_heads = 8, c.num_kv_heads = 2, c.head_dim = 128;  // G = 4: 64-row query tiles
    c.q_lens = {300, 10, 600}, c.kv_lens = {700, 200, 900};
    c.sparse_mode = mode, c.mask = FiaMask::kCompressed;
    if (mode == 4) c.pre_tokens = 150, c.next_tokens = 0;
    FiaCaseData data(c);
    const FiaBound bd = bind(c, data.call());
    const size_t full = cpu::fia_workspace_size(bd.p);
    // Packed units: batches 0 and 2 (11 and 15 key tiles) x 2 KV heads, at most 52 tiles.
    ASSERT_GT(full, 52 * kTile) << c.name();
    for (cpu::Isa isa : isas_to_test()) {
      if (isa < cpu::Isa::kAvx512Bf16) continue;
      ScopedIsaCap cap(isa);
      std::vector<std::byte> want;
      for (size_t less : {size_t{0}, 20 * kTile, 40 * kTile, 52 * kTile}) {
        SCOPED_TRACE(std::string("isa=") + cpu::isa_name(isa) + " workspace " +
                     std::to_string(full - less) + " of " + std::to_string(full));
        WorkspaceBuffer ws(full - less);
        data.poison_outputs();
        cpu::fia_run(bd.p, bd.d, ws.data(), ws.size(), 2);
        if (want.empty()) {
          const reference::FiaReference ref = reference::fia_reference(data.call());
          ASSERT_TRUE(compare_fia_output(c.name(), data.call(), ref, nullptr, false));
          want = bytes_of(data.call().attention_out);
        } else {
          ASSERT_EQ(bytes_of(data.call().attention_out), want) << c.name();
        }
      }
      ++checked;
    }
  }
  if (checked == 0) GTEST_SKIP() << "no AVX512-BF16 here: the bf16 path does not run";
}

// Prints the worst err/bound per output dtype over the whole run, and the coverage.
class WorstReport : public ::testing::Environment {
 public:
  void TearDown() override {
    for (const auto& [dt, w] : worst_by_dtype())
      std::printf("fia kernel worst err/bound %s: %.3f\n", dt.c_str(), w);
    int64_t skipped = 0;
    for (const FiaCase& c : fia_cases_for_run()) skipped += !fia_kernel_covers(c);
    std::printf("fia kernel cases: %zu covered, %lld outside the kernel's subset\n",
                covered_cases().size(), static_cast<long long>(skipped));
  }
};
[[maybe_unused]] ::testing::Environment* const kWorstReport =
    ::testing::AddGlobalTestEnvironment(new WorstReport);

}  // namespace
}  // namespace kvflash::testing
