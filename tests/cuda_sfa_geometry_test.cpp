// The tensor-core SFA path's host-side numbers (cuda/sfa/sfa_mma_geometry.hpp), on the CPU: the
// shared-memory layout (alignment, no overlap, fits the parts it targets), the launch geometry for
// DeepSeek-V3.2's head counts, and which kernel each device and tensor layout gets. Runs in every
// build (plain C++); the kernels themselves are tested on a GPU by cuda_sfa_test.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "cuda/sfa/sfa_mma_geometry.hpp"

namespace kvflash::cuda {
namespace {

// cudaDevAttrMaxSharedMemoryPerBlockOptin of the parts the path targets.
constexpr size_t kA100Smem = 166912;  // 163 KiB
constexpr size_t kH100Smem = 232448;  // 227 KiB (H100 / H200)

TEST(CudaSfaGeometry, LayoutRegionsAreAlignedAndDisjoint) {
  for (int m : {1, 2, 4}) {
    for (bool v_is_k : {true, false}) {
      const SfaMmaLayout l = sfa_mma_layout(128, m, v_is_k);
      SCOPED_TRACE(testing::Message() << "m_tiles " << m << " v_is_k " << v_is_k);
      const size_t h = static_cast<size_t>(l.heads);
      std::vector<std::pair<size_t, size_t>> regions = {
          {l.q, 2 * h * kMmaKStride},
          {l.k, l.k_stage * kMmaStages},
          {l.v, l.v_stage * kMmaStages},
          {l.p, 2 * h * kMmaPStride},
          {l.s, 4 * h * kMmaSStride},
          {l.state, 4 * h * 3},
          {l.offs, 8 * 3 * kMmaTile * kMmaStages},
          {l.misc, 5 * 4}};
      std::sort(regions.begin(), regions.end());
      for (size_t i = 0; i < regions.size(); ++i) {
        EXPECT_EQ(regions[i].first % 16, 0u) << "region " << i;
        const size_t end = regions[i].first + regions[i].second;
        if (i + 1 < regions.size()) {
          EXPECT_LE(end, regions[i + 1].first) << "region " << i;
        }
        EXPECT_LE(end, l.bytes);
      }
      // Stages and rows start 16-byte aligned (cp.async destinations, ldmatrix rows).
      EXPECT_EQ(l.k_stage % 16, 0u);
      EXPECT_EQ(l.v_stage % 16, 0u);
      EXPECT_EQ((kMmaKStride * 2) % 16, 0);
      EXPECT_EQ((kMmaVStride * 2) % 16, 0);
      EXPECT_EQ(l.v_smem, !v_is_k);
      EXPECT_EQ(l.v_stage == 0, v_is_k);
    }
  }
}

TEST(CudaSfaGeometry, FragmentRowsHitDistinctBankGroups) {
  // The 8 rows an mma fragment or ldmatrix reads at once (row stride in 4-byte words) must fall in
  // distinct 4-word bank groups: (row * stride_words) mod 32 distinct multiples of 4 (or, for the
  // 2-column P rows, distinct 4-word windows).
  for (int stride_elems : {kMmaKStride, kMmaVStride, kMmaPStride}) {
    std::vector<int> starts;
    for (int row = 0; row < 8; ++row) starts.push_back(row * stride_elems / 2 % 32);
    for (int a = 0; a < 8; ++a)
      for (int b = a + 1; b < 8; ++b) {
        const int d = (starts[a] - starts[b] + 32) % 32;
        EXPECT_GE(std::min(d, 32 - d), 4) << "stride " << stride_elems << " rows " << a << ", " << b;
      }
  }
}

TEST(CudaSfaGeometry, DeepSeekHeadCountsGetWholeTiles) {
  struct Want {
    int64_t heads;
    int m_tiles, ctas_per_row, threads;
  };
  for (const Want w : {Want{128, 4, 2, 512}, Want{64, 4, 1, 512}, Want{32, 2, 1, 256},
                       Want{16, 1, 1, 128}, Want{8, 1, 1, 128}, Want{20, 2, 1, 256}}) {
    SfaPathQuery q;
    q.num_heads = w.heads;
    q.v_is_k = true;
    q.rows_aligned = true;
    q.sm_major = 9;
    q.max_smem_optin = kH100Smem;
    const SfaPathChoice c = sfa_choose_path(q);
    ASSERT_EQ(c.path, SfaPath::kMma) << w.heads << ": " << c.why;
    EXPECT_EQ(c.layout.m_tiles, w.m_tiles) << w.heads;
    EXPECT_EQ(c.layout.ctas_per_row, w.ctas_per_row) << w.heads;
    EXPECT_EQ(c.layout.threads, w.threads) << w.heads;
    EXPECT_GE(c.layout.heads * c.layout.ctas_per_row, w.heads);
  }
}

TEST(CudaSfaGeometry, SharedMemoryDecidesTheTileOnEachPart) {
  SfaPathQuery q;
  q.num_heads = 128;
  q.rows_aligned = true;
  q.sm_major = 8;
  q.max_smem_optin = kA100Smem;
  q.v_is_k = true;  // MLA: V is the latent part of K
  SfaPathChoice c = sfa_choose_path(q);
  ASSERT_EQ(c.path, SfaPath::kMma);
  EXPECT_EQ(c.layout.m_tiles, 4);
  EXPECT_LE(c.layout.bytes, kA100Smem);
  q.v_is_k = false;  // a separate V needs its own stages: only 16 heads per CTA fit an A100
  c = sfa_choose_path(q);
  ASSERT_EQ(c.path, SfaPath::kMma);
  EXPECT_EQ(c.layout.m_tiles, 1);
  EXPECT_LE(c.layout.bytes, kA100Smem);
  EXPECT_GT(sfa_mma_layout(128, 2, false).bytes, kA100Smem);
  q.max_smem_optin = kH100Smem;
  q.sm_major = 9;
  c = sfa_choose_path(q);
  EXPECT_EQ(c.layout.m_tiles, 4);
  EXPECT_LE(c.layout.bytes, kH100Smem);
  q.max_smem_optin = 48 * 1024;  // nothing fits: SIMT
  c = sfa_choose_path(q);
  EXPECT_EQ(c.path, SfaPath::kSimt);
  EXPECT_STRNE(c.why, "");
}

TEST(CudaSfaGeometry, SimtFallbackCases) {
  SfaPathQuery q;
  q.num_heads = 16;
  q.rows_aligned = true;
  q.sm_major = 9;
  q.max_smem_optin = kH100Smem;
  EXPECT_EQ(sfa_choose_path(q).path, SfaPath::kMma);
  SfaPathQuery x = q;
  x.rows_aligned = false;
  EXPECT_EQ(sfa_choose_path(x).path, SfaPath::kSimt);
  x = q;
  x.sm_major = 7;
  EXPECT_EQ(sfa_choose_path(x).path, SfaPath::kSimt);
  x = q;
  x.force_simt = true;
  EXPECT_EQ(sfa_choose_path(x).path, SfaPath::kSimt);
  x = q;
  x.sm_major = 0;  // no device answered
  x.max_smem_optin = 0;
  EXPECT_EQ(sfa_choose_path(x).path, SfaPath::kSimt);
}

TEST(CudaSfaGeometry, PositionListCap) {
  // DeepSeek-V3.2: 2048 tokens, or 32 blocks of 64, per row.
  EXPECT_EQ(sfa_position_list_cap(128, 2048, 1, 131072), 2048);
  EXPECT_EQ(sfa_position_list_cap(128, 32, 64, 131072), 2048);
  // A block never yields more positions than the KV can hold (duplicates still count per entry).
  EXPECT_EQ(sfa_position_list_cap(4, 8, 128, 40), 8 * 40);
  // Too large in all (over kMaxListBytes) or positions beyond int32: no list, the SIMT kernel.
  EXPECT_EQ(sfa_position_list_cap(1 << 20, 2048, 128, 1 << 20), 0);
  EXPECT_EQ(sfa_position_list_cap(1, 16, 1, int64_t{1} << 32), 0);
  EXPECT_EQ(sfa_position_list_cap(0, 16, 1, 64), 0);
  SfaPathQuery q;
  q.num_heads = 16;
  q.rows_aligned = true;
  q.sm_major = 9;
  q.max_smem_optin = kH100Smem;
  q.list_cap = 0;
  EXPECT_EQ(sfa_choose_path(q).path, SfaPath::kSimt);
}

TEST(CudaSfaGeometry, RowAlignment) {
  alignas(16) static uint16_t buf[64];
  const int64_t good[] = {0, 512, 8};
  EXPECT_TRUE(sfa_rows_aligned(buf, 1, good, 3));
  EXPECT_FALSE(sfa_rows_aligned(buf + 1, 1, good, 3));  // base off by 2 bytes
  EXPECT_FALSE(sfa_rows_aligned(buf, 2, good, 3));      // strided dims: no 16-byte copies
  const int64_t odd[] = {0, 513, 8};                    // the case list's padded views
  EXPECT_FALSE(sfa_rows_aligned(buf, 1, odd, 3));
}

}  // namespace
}  // namespace kvflash::cuda
