// LightningIndexerPlan beyond the case sweep (tests/backend_ops_test.cpp): the plan contract
// (a run with other metadata refused and nothing written, the workspace checks, a stream with
// host tensors refused, the fingerprint), sparse_values ignored without return_value, and the fp32
// sparse_values extension: the unrounded scores, which round to the query-dtype values bit for
// bit and let shards' selections merge exactly (li_merge_topk) into the single indexer's.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/half.hpp"
#include "cpu/li/li_kernel.hpp"
#include "kvflash/li.hpp"
#include "li_reference.hpp"
#include "support/li_cases.hpp"
#include "support/li_compare.hpp"

namespace kvflash::testing {
namespace {

LiCase small_case(bool values) {
  LiCase c;
  c.q_layout = LiQLayout::kTnd;
  c.k_layout = LiKLayout::kPaBsnd;
  c.num_heads = 8;
  c.sparse_count = 16;
  c.q_lens = {2, 3};
  c.kv_lens = {40, 25};
  c.return_value = values;
  return c;
}

Status run_once(const LightningIndexerArgs& a) { return lightning_indexer(a); }

TEST(LiPlan, ARunWithOtherMetadataIsRefusedAndWritesNothing) {
  LiCaseData data(small_case(true));
  std::unique_ptr<LightningIndexerPlan> plan;
  ASSERT_EQ(LightningIndexerPlan::create(data.call(), &plan), Status::kSuccess);
  std::vector<std::byte> ws(plan->workspace_size());
  const std::vector<std::byte> before = data.output_bytes();
  const auto refused = [&](LightningIndexerArgs other, const char* name) {
    const Status st = plan->run(other, ws.data(), ws.size());
    EXPECT_NE(st, Status::kSuccess) << name;
    EXPECT_NE(std::string(last_error_message()).find(name), std::string::npos)
        << last_error_message();
    EXPECT_TRUE(data.output_bytes() == before) << name;
  };
  LightningIndexerArgs a = data.call();
  a.sparse_count = 8;
  refused(a, "sparse_count");
  a = data.call();
  a.query.strides[0] += 1;
  refused(a, "query");
  a = data.call();
  a.layout_key = "TND";
  refused(a, "layout_key");
  a = data.call();
  a.block_table.reset();
  refused(a, "block_table");
  a = data.call();
  a.weights.offset += 1;
  refused(a, "weights");
  // num_threads and data pointers may differ.
  a = data.call();
  a.num_threads = 3;
  EXPECT_EQ(plan->run(a, ws.data(), ws.size()), Status::kSuccess) << last_error_message();
}

TEST(LiPlan, WorkspaceAndStreamChecks) {
  LiCaseData data(small_case(false));
  std::unique_ptr<LightningIndexerPlan> plan;
  ASSERT_EQ(LightningIndexerPlan::create(data.call(), &plan), Status::kSuccess);
  const size_t size = plan->workspace_size();
  ASSERT_GT(size, 0u);
  std::vector<std::byte> ws(size);
  EXPECT_EQ(plan->run(data.call(), ws.data(), size - 1), Status::kInvalid);
  EXPECT_NE(std::string(last_error_message()).find("workspace_size"), std::string::npos);
  EXPECT_EQ(plan->run(data.call(), nullptr, size), Status::kNullPtr);
  int stream = 0;
  EXPECT_EQ(plan->run(data.call(), ws.data(), size, &stream), Status::kInvalid);
  EXPECT_NE(std::string(last_error_message()).find("stream"), std::string::npos);
  EXPECT_EQ(LightningIndexerPlan::create(data.call(), nullptr), Status::kNullPtr);
}

TEST(LiPlan, StatusOfAHostPlanReadsNothing) {
  // run() on host tensors returns any fault itself: status() reads nothing and succeeds.
  LiCaseData data(small_case(false));
  std::unique_ptr<LightningIndexerPlan> plan;
  ASSERT_EQ(LightningIndexerPlan::create(data.call(), &plan), Status::kSuccess);
  std::vector<std::byte> ws(plan->workspace_size());
  ASSERT_EQ(plan->run(data.call(), ws.data(), ws.size()), Status::kSuccess);
  const std::vector<std::byte> after_run = ws;
  EXPECT_EQ(plan->status(ws.data()), Status::kSuccess);
  EXPECT_EQ(plan->status(nullptr), Status::kSuccess);
  EXPECT_EQ(ws, after_run);
}

TEST(LiPlan, FingerprintFollowsTheMetadataOnly) {
  LiCaseData a(small_case(false)), b(small_case(false));
  std::string fa, fb, fc;
  ASSERT_EQ(LightningIndexerPlan::fingerprint(a.call(), &fa), Status::kSuccess);
  LightningIndexerArgs other = b.call();  // other data, other thread count
  other.num_threads = 5;
  ASSERT_EQ(LightningIndexerPlan::fingerprint(other, &fb), Status::kSuccess);
  EXPECT_EQ(fa, fb);
  other.sparse_mode = 0;
  ASSERT_EQ(LightningIndexerPlan::fingerprint(other, &fc), Status::kSuccess);
  EXPECT_NE(fa, fc);
  EXPECT_EQ(LightningIndexerPlan::fingerprint(a.call(), nullptr), Status::kNullPtr);
}

TEST(LiPlan, SparseValuesAreIgnoredWithoutReturnValue) {
  LiCaseData data(small_case(true));
  LightningIndexerArgs a = data.call();
  a.return_value = false;
  a.sparse_values->dtype = DType::kInt8;  // would be refused if looked at
  ASSERT_EQ(run_once(a), Status::kSuccess) << last_error_message();
  const auto* v = static_cast<const uint16_t*>(a.sparse_values->data);
  for (int64_t i = 0; i < a.sparse_values->numel(); ++i) ASSERT_EQ(v[i] & 0x7fc0, 0x7fc0) << i;
}

// fp32 sparse_values: the scores as the kernel computed them; rounded to bf16 they are the
// bf16 values of a bf16 run, bit for bit, and they are within the score tolerance of fp64.
TEST(LiPlan, Fp32ValuesAreTheUnroundedScores) {
  LiCase c = small_case(true);
  c.values = LiValues::kNonFinite;
  LiCaseData data(c);
  const auto ref = reference::li_reference(data.call());
  ASSERT_EQ(run_once(data.call()), Status::kSuccess) << last_error_message();
  const int64_t n = data.call().sparse_indices.numel();
  std::vector<int32_t> idx(n, 0);
  std::vector<float> scores(n, 0.0f);
  LightningIndexerArgs a = data.call();
  a.sparse_indices.data = idx.data();
  a.sparse_values = TensorView::contiguous(
      scores.data(), DType::kFloat32,
      std::span(a.sparse_indices.shape.data(), static_cast<size_t>(a.sparse_indices.rank)));
  ASSERT_EQ(run_once(a), Status::kSuccess) << last_error_message();
  EXPECT_EQ(std::memcmp(idx.data(), data.call().sparse_indices.data, n * sizeof(int32_t)), 0);
  const auto* bf16 = static_cast<const uint16_t*>(data.call().sparse_values->data);
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(core::float_to_bf16(scores[i]), bf16[i]) << i << ": " << scores[i];
  }
  EXPECT_TRUE(compare_li_output(c.name() + " fp32 values", a, ref, false));
}

// A context-parallel indexer through the C++ API: the keys of a BSND sequence split into
// contiguous shards (each a strided view of the same key tensor with its own lengths), each
// shard's selection with fp32 scores, its local indices made global, merged by li_merge_topk:
// the single indexer's sparse_indices and scores, bit for bit. sparse_mode 0 (one decode row
// sees every key; the causal threshold is global, docs/lightning_indexer.md).
TEST(LiPlan, ShardsWithFp32ScoresMergeToTheSingleIndexer) {
  LiCase c;
  c.q_layout = LiQLayout::kBsnd;
  c.k_layout = LiKLayout::kBsnd;
  c.num_heads = 16;
  c.sparse_count = 64;
  c.q_lens = {1, 1};
  c.kv_lens = {300, 300};
  c.kv_slack = 0;
  c.sparse_mode = 0;
  c.values = LiValues::kTies;
  c.return_value = true;
  LiCaseData data(c);
  const int64_t k = c.sparse_count, rows = 2, s2 = 300;
  const auto run = [&](const LightningIndexerArgs& base, int64_t from, int64_t to,
                       std::vector<int32_t>* idx, std::vector<float>* sc) {
    LightningIndexerArgs a = base;
    a.key.shape[1] = to - from;
    a.key.offset += from * a.key.strides[1];
    a.actual_seq_lengths_key.reset();  // S2 = the shard's length
    idx->assign(rows * k, 0);
    sc->assign(rows * k, 0.0f);
    a.sparse_indices.data = idx->data();
    a.sparse_values = TensorView::contiguous(sc->data(), DType::kFloat32, {2, 1, 1, k});
    ASSERT_EQ(run_once(a), Status::kSuccess) << last_error_message();
    for (int32_t& x : *idx)
      if (x >= 0) x += static_cast<int32_t>(from);
  };
  std::vector<int32_t> whole_idx;
  std::vector<float> whole_sc;
  run(data.call(), 0, s2, &whole_idx, &whole_sc);
  const int64_t bounds[] = {0, 90, 91, 200, 300};
  std::vector<std::vector<int32_t>> idx(4);
  std::vector<std::vector<float>> sc(4);
  for (int r = 0; r < 4; ++r) run(data.call(), bounds[r], bounds[r + 1], &idx[r], &sc[r]);
  for (int64_t row = 0; row < rows; ++row) {
    cpu::LiTopkList lists[4];
    for (int r = 0; r < 4; ++r) lists[3 - r] = {sc[r].data() + row * k, idx[r].data() + row * k, k};
    std::vector<int32_t> out_idx(k);
    std::vector<float> out_sc(k);
    ASSERT_EQ(cpu::li_merge_topk(lists, 4, k, out_idx.data(), out_sc.data()), k);
    for (int64_t s = 0; s < k; ++s) {
      ASSERT_EQ(out_idx[s], whole_idx[row * k + s]) << row << " " << s;
      ASSERT_EQ(std::memcmp(&out_sc[s], &whole_sc[row * k + s], 4), 0) << row << " " << s;
    }
  }
}

}  // namespace
}  // namespace kvflash::testing
