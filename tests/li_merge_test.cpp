// The exact top-k merge of a sharded LightningIndexer (li_merge_topk, src/cpu/li/li_topk.cpp):
// over the shared case list, every row's keys are split into shards (contiguous ranges and
// round-robin blocks, several world sizes), each shard's selection is what a rank's indexer
// selects (its keys in the selection order, by global index, its top k), and the merge of the
// shards must be the single indexer's output bit for bit (indices and fp32 scores). Plus the
// merge's own contract: NaN first, ties across shards by index, padding, bad lists.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "cpu/isa.hpp"
#include "cpu/li/li_kernel.hpp"
#include "support/li_cases.hpp"
#include "support/li_run.hpp"

namespace kvflash::testing {
namespace {

// One li_run of call's problem with sparse_count k (indices and fp32 scores into the given
// buffers, values off).
Status run_with_k(const reference::LiCall& call, int64_t k, std::vector<int32_t>* idx,
                  std::vector<float>* scores) {
  cpu::LiParams p;
  cpu::LiData d;
  li_bind(call, &p, &d);
  p.sparse_count = k;
  p.return_value = false;
  idx->assign(static_cast<size_t>(p.num_rows * k), 0x7eadbeef);
  scores->assign(static_cast<size_t>(p.num_rows * k), 1.0f);
  d.indices = idx->data();
  d.scores = scores->data();
  d.values = nullptr;
  std::vector<std::byte> ws(cpu::li_workspace_size(p));
  return li_run_isa(p, d, cpu::detected_isa(), 2, ws.data());
}

// Which rank holds global key position j of a row.
struct Sharding {
  std::string name;
  int world = 1;
  int64_t bound_step = 0;  // contiguous: rank r holds [r * step, (r + 1) * step), the last the rest
  int64_t block = 0;       // round-robin: block j / block on rank (j / block) % world
  int owner(int64_t j) const {
    if (block > 0) return static_cast<int>((j / block) % world);
    return static_cast<int>(std::min<int64_t>(j / bound_step, world - 1));
  }
};

uint32_t bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof(u));
  return u;
}

class LiMergeTest : public ::testing::TestWithParam<LiCase> {};

TEST_P(LiMergeTest, ShardsMergeToTheSingleIndexer) {
  const LiCase& c = GetParam();
  if (c.fault != LiFault::kNone) GTEST_SKIP() << "faulted rows select nothing";
  if (c.work() > (int64_t{1} << 24)) GTEST_SKIP() << "large case: covered by the smaller ones";
  LiCaseData data(c);
  cpu::LiParams p;
  cpu::LiData d;
  li_bind(data.call(), &p, &d);
  const int64_t k = p.sparse_count, rows = p.num_rows;
  // The single indexer, and every row's whole valid key sequence in the selection order (a
  // sparse_count of the capacity selects them all).
  std::vector<int32_t> ref_idx, all_idx;
  std::vector<float> ref_sc, all_sc;
  ASSERT_EQ(run_with_k(data.call(), k, &ref_idx, &ref_sc), Status::kSuccess);
  const int64_t cap = std::max<int64_t>(p.kv_cap, 1);
  ASSERT_EQ(run_with_k(data.call(), cap, &all_idx, &all_sc), Status::kSuccess);

  const int64_t blk = p.key_layout == cpu::LiKeyLayout::kPaged ? p.block_size : 16;
  std::vector<Sharding> shardings;
  for (int world : {2, 3, 5}) {
    shardings.push_back({"contiguous/" + std::to_string(world), world,
                         std::max<int64_t>((cap + world - 1) / world, 1), 0});
    shardings.push_back({"round-robin/" + std::to_string(world), world, 0, blk});
  }
  shardings.push_back({"round-robin/2 blocks of 1", 2, 0, 1});
  std::vector<int32_t> out_idx(k);
  std::vector<float> out_sc(k);
  for (const Sharding& sh : shardings) {
    SCOPED_TRACE(sh.name);
    // Rank r's list of a row: its keys of the row's selection order, the first k, -1 after.
    std::vector<std::vector<int32_t>> li(sh.world, std::vector<int32_t>(k));
    std::vector<std::vector<float>> ls(sh.world, std::vector<float>(k));
    for (int64_t row = 0; row < rows; ++row) {
      std::vector<int64_t> fill(sh.world, 0);
      for (int64_t s = 0; s < cap; ++s) {
        const int32_t j = all_idx[row * cap + s];
        if (j < 0) break;
        const int r = sh.owner(j);
        if (fill[r] == k) continue;
        li[r][fill[r]] = j;
        ls[r][fill[r]] = all_sc[row * cap + s];
        ++fill[r];
      }
      std::vector<cpu::LiTopkList> lists(sh.world);
      for (int r = 0; r < sh.world; ++r) {
        std::fill(li[r].begin() + fill[r], li[r].end(), -1);
        std::fill(ls[r].begin() + fill[r], ls[r].end(), -std::numeric_limits<float>::infinity());
        // Rank order must not matter: the lists are handed over in reverse.
        lists[sh.world - 1 - r] = {ls[r].data(), li[r].data(), k};
      }
      const int64_t got =
          cpu::li_merge_topk(lists.data(), sh.world, k, out_idx.data(), out_sc.data());
      ASSERT_GE(got, 0) << "row " << row;
      int64_t want = 0;
      while (want < k && ref_idx[row * k + want] >= 0) ++want;
      ASSERT_EQ(got, want) << "row " << row;
      for (int64_t s = 0; s < k; ++s) {
        ASSERT_EQ(out_idx[s], ref_idx[row * k + s]) << "row " << row << " slot " << s;
        if (s < got) {
          ASSERT_EQ(bits(out_sc[s]), bits(ref_sc[row * k + s])) << "row " << row << " slot " << s;
        } else {
          ASSERT_TRUE(std::isinf(out_sc[s]) && out_sc[s] < 0);
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, LiMergeTest, ::testing::ValuesIn(li_cases_for_run()),
                         [](const ::testing::TestParamInfo<LiCase>& info) {
                           return std::to_string(info.index) + "_" + info.param.test_name();
                         });

const float kNan = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

// NaN above +inf above numbers, NaN among themselves and equal scores by index across lists,
// +0 == -0, padding after the last, k beyond the total.
TEST(LiMergeTopk, OrderTiesNanAndPadding) {
  const std::vector<float> s0 = {kNan, 2.0f, 2.0f, 0.0f, -kInf};
  const std::vector<int32_t> i0 = {7, 3, 9, 4, 11};
  const std::vector<float> s1 = {-kNan, kInf, 2.0f, -0.0f, 0.0f};
  const std::vector<int32_t> i1 = {2, 5, 6, 1, -1};  // the -1 ends the list
  const cpu::LiTopkList lists[2] = {{s0.data(), i0.data(), 5}, {s1.data(), i1.data(), 5}};
  std::vector<int32_t> idx(12);
  std::vector<float> sc(12);
  ASSERT_EQ(cpu::li_merge_topk(lists, 2, 12, idx.data(), sc.data()), 9);
  const std::vector<int32_t> want = {2, 7, 5, 3, 6, 9, 1, 4, 11, -1, -1, -1};
  EXPECT_EQ(idx, want);
  EXPECT_TRUE(std::isnan(sc[0]) && std::isnan(sc[1]));
  EXPECT_EQ(sc[2], kInf);
  EXPECT_EQ(bits(sc[6]), bits(-0.0f));  // the shard's own bits
  EXPECT_EQ(sc[8], -kInf);
  EXPECT_EQ(sc[11], -kInf);
  ASSERT_EQ(cpu::li_merge_topk(lists, 2, 3, idx.data(), sc.data()), 3);
  EXPECT_EQ(idx[2], 5);
  ASSERT_EQ(cpu::li_merge_topk(lists, 0, 3, idx.data(), sc.data()), 0);
  EXPECT_EQ(idx[0], -1);
}

// Lists out of the selection order, or holding the same entry twice, are refused.
TEST(LiMergeTopk, RefusesBadLists) {
  std::vector<int32_t> idx(4);
  std::vector<float> sc(4);
  const std::vector<float> up = {1.0f, 2.0f};
  const std::vector<int32_t> ui = {0, 1};
  const cpu::LiTopkList unsorted[1] = {{up.data(), ui.data(), 2}};
  EXPECT_EQ(cpu::li_merge_topk(unsorted, 1, 4, idx.data(), sc.data()), -1);
  const std::vector<float> tie = {1.0f, 1.0f};
  const std::vector<int32_t> ti = {5, 4};  // equal scores must come by the lower index
  const cpu::LiTopkList tied[1] = {{tie.data(), ti.data(), 2}};
  EXPECT_EQ(cpu::li_merge_topk(tied, 1, 4, idx.data(), sc.data()), -1);
  const std::vector<float> one = {3.0f};
  const std::vector<int32_t> oi = {8};
  const cpu::LiTopkList twice[2] = {{one.data(), oi.data(), 1}, {one.data(), oi.data(), 1}};
  EXPECT_EQ(cpu::li_merge_topk(twice, 2, 4, idx.data(), sc.data()), -1);
}

}  // namespace
}  // namespace kvflash::testing
