// The IFA kernel's work decomposition: every (b, n2, chunk) slot is covered by exactly one chunk
// task for any thread count, chunk ranges stay inside the attended positions, tasks respect the
// per-task head limit, and the workspace size depends on the problem only.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ops/ifa/ifa_problem.hpp"
#include "cpu/ifa/ifa_workspace.hpp"

namespace kvflash::cpu {
namespace {

// Run-time first positions (as left padding would give), 7 * b for batch b.
std::vector<int64_t> begins(const core::IfaProblem& p) {
  std::vector<int64_t> begin;
  for (int64_t b = 0; b < p.batch; ++b) begin.push_back(7 * b);
  return begin;
}

core::IfaProblem make_problem(std::vector<int64_t> lens, int64_t kv_heads, int64_t group,
                              int64_t head_dim) {
  core::IfaProblem p;
  p.batch = static_cast<int64_t>(lens.size());
  p.num_kv_heads = kv_heads;
  p.group = group;
  p.num_heads = kv_heads * group;
  p.head_dim = head_dim;
  p.kv_len = lens;
  return p;
}

void check_cover(const core::IfaProblem& p, int threads) {
  const IfaLayout l = ifa_layout(p);
  std::vector<std::byte> ws(l.bytes + 1);
  std::byte* base = ifa_align(ws.data() + 1);  // deliberately misaligned
  ifa_fill_chunk_index(p, l, base);
  const std::vector<int64_t> begin = begins(p);
  core::IfaData d;
  d.kv_begin = begin.data();
  ASSERT_EQ(reinterpret_cast<uintptr_t>(base) % kIfaWorkspaceAlign, 0u);
  ASSERT_LE(base + l.slots + sizeof(float) * l.num_slots * l.slot_floats, ws.data() + ws.size());
  const IfaSchedule s = ifa_schedule(p, l, threads);
  ASSERT_LE(s.kv_heads_per_task * p.group, std::max<int64_t>(kIfaMaxGroup, p.group));
  std::vector<int> covered(static_cast<size_t>(l.num_slots), 0);
  const auto* first = reinterpret_cast<const int64_t*>(base + l.chunk_first);
  for (int64_t task = 0; task < s.num_tasks; ++task) {
    const IfaChunkTask t = ifa_chunk_task(p, d, l, s, base, task);
    ASSERT_GE(t.begin, begin[t.b]);
    ASSERT_LE(t.end, begin[t.b] + p.kv_len[t.b]);
    ASSERT_LT(t.begin, t.end);
    // Split points are a function of the sequence only: chunk c starts at c * kIfaChunkLen.
    ASSERT_EQ(t.begin, begin[t.b] + t.chunk * kIfaChunkLen);
    ASSERT_TRUE(t.end - t.begin == kIfaChunkLen || t.chunk == t.num_chunks - 1);
    ASSERT_LT(t.n2_begin, t.n2_end);
    ASSERT_LE(t.n2_end, p.num_kv_heads);
    for (int64_t n2 = t.n2_begin; n2 < t.n2_end; ++n2) {
      ++covered[static_cast<size_t>(first[t.b] + n2 * t.num_chunks + t.chunk)];
    }
  }
  for (size_t i = 0; i < covered.size(); ++i) {
    ASSERT_EQ(covered[i], 1) << "slot " << i << " with " << threads << " threads";
  }
}

TEST(IfaSchedule, EverySlotOnceForAnyThreadCount) {
  const std::vector<core::IfaProblem> problems = {
      make_problem({1}, 1, 1, 64),        make_problem({0, 513, 0, 1024, 1025, 3}, 8, 4, 128),
      make_problem({9000, 17}, 3, 8, 80), make_problem({512, 511, 2048}, 32, 1, 64),
      make_problem({700}, 4, 64, 512),    make_problem({0, 0}, 2, 2, 16),
  };
  for (const auto& p : problems) {
    for (int threads : {1, 2, 3, 7, 16, 64, 500}) check_cover(p, threads);
  }
}

TEST(IfaSchedule, FewThreadsGroupHeadsManyThreadsSplitThem) {
  const core::IfaProblem p = make_problem({600}, 8, 4, 128);  // 2 chunks
  EXPECT_EQ(ifa_schedule(p, ifa_layout(p), 1).kv_heads_per_task, 8);
  EXPECT_EQ(ifa_schedule(p, ifa_layout(p), 8).kv_heads_per_task, 1);
}

TEST(IfaLayout, PaddedHeadDimAndChunks) {
  // Padded head dim: inner loops have no tails.
  EXPECT_EQ(ifa_layout(make_problem({1}, 1, 1, 80)).dp, 80);
  EXPECT_EQ(ifa_layout(make_problem({1}, 1, 1, 72)).dp, 80);
  EXPECT_EQ(ifa_num_chunks(0), 0);
  EXPECT_EQ(ifa_num_chunks(kIfaChunkLen), 1);
  EXPECT_EQ(ifa_num_chunks(kIfaChunkLen + 1), 2);
}

}  // namespace
}  // namespace kvflash::cpu
