// IfaPlan: create() plans from metadata and sizes the workspace exactly as the kernel does; run()
// refuses a too-small or null workspace and tensors that do not match the plan without touching
// the output, binds new data pointers, and reads the device data (block table) as it is at run
// time: a bad block id faults its batch only.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <initializer_list>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/half.hpp"
#include "ops/ifa/ifa_problem.hpp"
#include "cpu/ifa/ifa_kernel.hpp"
#include "ops/ifa/ifa_plan_impl.hpp"
#include "ops/ifa/ifa_validate.hpp"
#include "kvflash/ifa.hpp"

namespace kvflash {
namespace {

class IfaPlanTest : public ::testing::Test {
 protected:
  TensorView tensor(DType dtype, std::initializer_list<int64_t> shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    bufs_.emplace_back(static_cast<size_t>(std::max<int64_t>(n, 1)) * dtype_size(dtype));
    return TensorView::contiguous(bufs_.back().data(), dtype, shape);
  }
  static int64_t numel(const TensorView& t) { return t.numel(); }
  static void fill_fp16(const TensorView& t, float value) {
    auto* p = static_cast<uint16_t*>(t.data);
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = core::float_to_fp16(value);
  }
  void fill_random_fp16(const TensorView& t) {
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    auto* p = static_cast<uint16_t*>(t.data);
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = core::float_to_fp16(dist(rng_));
  }
  static std::vector<std::byte> bytes_of(const TensorView& t) {
    const auto* p = static_cast<const std::byte*>(t.data);
    return std::vector<std::byte>(p, p + t.numel() * dtype_size(t.dtype));
  }

  // BSH fp16: B=2, N=4, KV_N=2, D=16, S=40, random q/k/v.
  IfaArgs contiguous() {
    IfaArgs a;
    a.query = tensor(DType::kFloat16, {2, 1, 64});
    a.key = {tensor(DType::kFloat16, {2, 40, 32})};
    a.value = {tensor(DType::kFloat16, {2, 40, 32})};
    a.attention_out = tensor(DType::kFloat16, {2, 1, 64});
    fill_random_fp16(a.query);
    fill_random_fp16(a.key[0]);
    fill_random_fp16(a.value[0]);
    a.num_heads = 4;
    a.num_key_value_heads = 2;
    a.scale_value = 0.25;
    a.input_layout = "BSH";
    return a;
  }
  // Paged BSH fp16: 6 blocks of 16, lengths {20, 5}, table {{0, 3, -1}, {5, -1, -1}}.
  IfaArgs paged() {
    IfaArgs a = contiguous();
    a.key = {tensor(DType::kFloat16, {6, 16, 32})};
    a.value = {tensor(DType::kFloat16, {6, 16, 32})};
    fill_random_fp16(a.key[0]);
    fill_random_fp16(a.value[0]);
    a.block_table = tensor(DType::kInt32, {2, 3});
    const int32_t ids[] = {0, 3, -1, 5, -1, -1};
    std::memcpy(a.block_table->data, ids, sizeof(ids));
    a.block_size = 16;
    a.actual_seq_lengths = std::vector<int64_t>{20, 5};
    return a;
  }
  // Int8 KV (per-channel antiquant) with int8 per-tensor post-quant and an LSE output.
  IfaArgs quantised() {
    IfaArgs a = contiguous();
    a.key = {tensor(DType::kInt8, {2, 40, 32})};
    a.value = {tensor(DType::kInt8, {2, 40, 32})};
    a.antiquant_scale = tensor(DType::kFloat16, {2, 2, 16});
    fill_fp16(*a.antiquant_scale, 0.01f);
    a.attention_out = tensor(DType::kInt8, {2, 1, 64});
    a.quant_scale2 = tensor(DType::kFloat32, {1});
    *static_cast<float*>(a.quant_scale2->data) = 100.0f;
    a.softmax_lse = tensor(DType::kFloat32, {2, 4});
    return a;
  }

  std::unique_ptr<IfaPlan> plan_of(const IfaArgs& a) {
    std::unique_ptr<IfaPlan> plan;
    EXPECT_EQ(IfaPlan::create(a, &plan), Status::kSuccess) << last_error_message();
    EXPECT_NE(plan, nullptr);
    return plan;
  }
  static void expect_message(const std::string& needle) {
    const std::string msg = last_error_message();
    EXPECT_EQ(msg.rfind("[incre_flash_attention] ", 0), 0u) << msg;
    EXPECT_NE(msg.find(needle), std::string::npos) << "expected '" << needle << "' in: " << msg;
  }

  std::mt19937 rng_{12345};
  std::deque<std::vector<std::byte>> bufs_;
};

TEST_F(IfaPlanTest, WorkspaceSizeAgreesWithKernel) {
  const IfaArgs cases[] = {contiguous(), paged(), quantised()};
  for (const IfaArgs& a : cases) {
    auto plan = plan_of(a);
    ASSERT_NE(plan, nullptr);
    core::IfaProblem p;
    ASSERT_EQ(ifa::validate_ifa(a, &p), Status::kSuccess) << last_error_message();
    EXPECT_EQ(plan->workspace_size(), cpu::ifa_workspace_size(p));
    const auto& impl = IfaPlanAccess::impl(*plan);
    EXPECT_EQ(plan->workspace_size(), cpu::ifa_workspace_size(impl.problem));
    EXPECT_EQ(impl.workspace_size, plan->workspace_size());
    EXPECT_EQ(impl.problem.kv_len, p.kv_len);
    // The plan keeps no data pointer.
    EXPECT_EQ(impl.meta.query.data, nullptr);
    EXPECT_EQ(impl.meta.key[0].data, nullptr);
    EXPECT_EQ(impl.meta.attention_out.data, nullptr);
    EXPECT_GT(plan->workspace_size(), 0u);
  }
}

TEST_F(IfaPlanTest, CreateFailureResetsPlanAndReports) {
  std::unique_ptr<IfaPlan> plan = plan_of(contiguous());
  IfaArgs bad = contiguous();
  bad.num_key_value_heads = 3;
  EXPECT_EQ(IfaPlan::create(bad, &plan), Status::kInvalid);
  EXPECT_EQ(plan, nullptr);
  expect_message("num_key_value_heads (3)");

  IfaArgs null_q = contiguous();
  null_q.query.data = nullptr;
  EXPECT_EQ(IfaPlan::create(null_q, &plan), Status::kNullPtr);
  expect_message("query is null");
}

TEST_F(IfaPlanTest, CreateClearsAnOldError) {
  std::unique_ptr<IfaPlan> plan;
  IfaArgs bad = contiguous();
  bad.num_heads = 0;
  EXPECT_EQ(IfaPlan::create(bad, &plan), Status::kInvalid);
  EXPECT_STRNE(last_error_message(), "");
  EXPECT_EQ(IfaPlan::create(contiguous(), &plan), Status::kSuccess);
  EXPECT_STREQ(last_error_message(), "");
}

TEST_F(IfaPlanTest, CreateNullPlanPointer) {
  EXPECT_EQ(IfaPlan::create(contiguous(), nullptr), Status::kNullPtr);
  expect_message("plan");
}

TEST_F(IfaPlanTest, RunRefusesTooSmallWorkspaceWithOutputUntouched) {
  IfaArgs a = contiguous();
  auto plan = plan_of(a);
  std::memset(a.attention_out.data, 0x5a, numel(a.attention_out) * 2);
  const auto before = bytes_of(a.attention_out);
  std::vector<std::byte> ws(plan->workspace_size());
  EXPECT_EQ(plan->run(a, ws.data(), ws.size() - 1), Status::kInvalid);
  expect_message("workspace_size");
  EXPECT_EQ(bytes_of(a.attention_out), before);
}

TEST_F(IfaPlanTest, RunRefusesNullWorkspace) {
  IfaArgs a = contiguous();
  auto plan = plan_of(a);
  std::memset(a.attention_out.data, 0x5a, numel(a.attention_out) * 2);
  const auto before = bytes_of(a.attention_out);
  EXPECT_EQ(plan->run(a, nullptr, plan->workspace_size()), Status::kNullPtr);
  expect_message("workspace is null");
  EXPECT_EQ(bytes_of(a.attention_out), before);
}

// The ids are read by the run: an edit after create() is seen, a bad id faults batch 0 only
// (NaN rows, kInvalid), and restoring it makes the same plan succeed.
TEST_F(IfaPlanTest, BadBlockIdFaultsItsBatchAtRun) {
  IfaArgs a = paged();
  auto plan = plan_of(a);
  auto* ids = static_cast<int32_t*>(a.block_table->data);
  std::vector<std::byte> ws(plan->workspace_size());
  ASSERT_EQ(plan->run(a, ws.data(), ws.size()), Status::kSuccess) << last_error_message();
  const auto good = bytes_of(a.attention_out);
  const int64_t row = numel(a.attention_out) / a.attention_out.shape[0];
  const auto* out = static_cast<const uint16_t*>(a.attention_out.data);
  for (int32_t bad : {6, -1, 1 << 30}) {
    ids[1] = bad;  // batch 0, slot 1: referenced by length 20
    std::memset(a.attention_out.data, 0x5a, numel(a.attention_out) * 2);
    EXPECT_EQ(plan->run(a, ws.data(), ws.size()), Status::kInvalid);
    expect_message("block_table[0][1] (" + std::to_string(bad) + ")");
    for (int64_t i = 0; i < row; ++i) ASSERT_TRUE(std::isnan(core::fp16_to_float(out[i]))) << i;
    EXPECT_EQ(std::memcmp(out + row, good.data() + row * 2, row * 2), 0) << "batch 1 changed";
  }
  ids[1] = 3;
  EXPECT_EQ(plan->run(a, ws.data(), ws.size()), Status::kSuccess) << last_error_message();
  EXPECT_EQ(bytes_of(a.attention_out), good);
}

// One plan serves every call with the same metadata: new data pointers are bound by run().
TEST_F(IfaPlanTest, RunBindsNewTensorsOfTheSameShapes) {
  IfaArgs a = contiguous();
  fill_fp16(a.key[0], 0.0f);
  fill_fp16(a.value[0], 1.5f);
  auto plan = plan_of(a);
  IfaArgs b = contiguous();  // fresh buffers, same shapes
  fill_fp16(b.key[0], 0.0f);
  fill_fp16(b.value[0], -3.0f);
  std::vector<std::byte> ws(plan->workspace_size());
  ASSERT_EQ(plan->run(b, ws.data(), ws.size()), Status::kSuccess) << last_error_message();
  const auto* out = static_cast<const uint16_t*>(b.attention_out.data);
  for (int64_t i = 0; i < numel(b.attention_out); ++i) {
    ASSERT_EQ(core::fp16_to_float(out[i]), -3.0f) << i;
  }
  b.num_threads = 1;  // a run-time knob, not part of the plan
  EXPECT_EQ(plan->run(b, ws.data(), ws.size()), Status::kSuccess) << last_error_message();
}

TEST_F(IfaPlanTest, RunRefusesTensorsThatDoNotMatchThePlan) {
  IfaArgs a = contiguous();
  auto plan = plan_of(a);
  std::vector<std::byte> ws(plan->workspace_size());
  std::memset(a.attention_out.data, 0x5a, numel(a.attention_out) * 2);
  const auto before = bytes_of(a.attention_out);
  struct Edit {
    const char* what;
    void (*apply)(IfaArgs*);
    Status status;
  };
  const Edit edits[] = {
      {"query", [](IfaArgs* x) { x->query.strides[0] += 1; }, Status::kInvalid},
      {"key[0]", [](IfaArgs* x) { x->key[0].dtype = DType::kBFloat16; }, Status::kInvalid},
      {"value[0]", [](IfaArgs* x) { x->value[0].offset = 1; }, Status::kInvalid},
      {"attention_out", [](IfaArgs* x) { x->attention_out.device.type = DeviceType::kCuda; },
       Status::kInvalid},
      {"atten_mask", [](IfaArgs* x) { x->atten_mask = x->query; }, Status::kInvalid},
      {"actual_seq_lengths", [](IfaArgs* x) { x->actual_seq_lengths = {{3}}; }, Status::kInvalid},
      {"num_heads", [](IfaArgs* x) { x->num_heads = 2; }, Status::kInvalid},
      {"scale_value", [](IfaArgs* x) { x->scale_value = 0.3; }, Status::kInvalid},
      {"query has elements but no data", [](IfaArgs* x) { x->query.data = nullptr; },
       Status::kNullPtr},
  };
  for (const Edit& e : edits) {
    IfaArgs b = a;
    e.apply(&b);
    EXPECT_EQ(plan->run(b, ws.data(), ws.size()), e.status) << e.what;
    expect_message(e.what);
    EXPECT_EQ(bytes_of(a.attention_out), before) << e.what;
  }
  int not_a_stream = 0;
  EXPECT_EQ(plan->run(a, ws.data(), ws.size(), &not_a_stream), Status::kInvalid);
  expect_message("stream must be null for host tensors");
}

// The fingerprint is the metadata a plan matches runs on: equal for new data pointers and thread
// counts, different for every edit that run() refuses as a mismatch.
TEST_F(IfaPlanTest, FingerprintIsThePlanMetadata) {
  const IfaArgs a = contiguous();
  std::string fa;
  ASSERT_EQ(IfaPlan::fingerprint(a, &fa), Status::kSuccess);
  EXPECT_FALSE(fa.empty());
  IfaArgs same = a;
  same.query.data = nullptr;
  same.key[0].data = a.value[0].data;
  same.num_threads = 3;
  std::string fs;
  ASSERT_EQ(IfaPlan::fingerprint(same, &fs), Status::kSuccess);
  EXPECT_EQ(fs, fa);
  void (*const edits[])(IfaArgs*) = {
      [](IfaArgs* x) { x->query.strides[0] += 1; },
      [](IfaArgs* x) { x->key[0].dtype = DType::kBFloat16; },
      [](IfaArgs* x) { x->value.push_back(x->value[0]); },
      [](IfaArgs* x) { x->attention_out.device.type = DeviceType::kCuda; },
      [](IfaArgs* x) { x->atten_mask = x->query; },
      [](IfaArgs* x) { x->actual_seq_lengths = {{3}}; },
      [](IfaArgs* x) { x->num_heads = 2; },
      [](IfaArgs* x) { x->scale_value = 0.3; },
      [](IfaArgs* x) { x->input_layout = "BNSD"; },
      [](IfaArgs* x) { x->zero_fully_masked_rows = true; },
      [](IfaArgs* x) { x->blocks_may_repeat = true; },
  };
  for (size_t i = 0; i < std::size(edits); ++i) {
    IfaArgs b = a;
    edits[i](&b);
    std::string fb;
    ASSERT_EQ(IfaPlan::fingerprint(b, &fb), Status::kSuccess);
    EXPECT_NE(fb, fa) << "edit " << i;
  }
  EXPECT_EQ(IfaPlan::fingerprint(a, nullptr), Status::kNullPtr);
  expect_message("bytes (the output pointer) is null");
}

TEST_F(IfaPlanTest, UnreferencedSlotsMayHoldAnything) {
  IfaArgs a = paged();
  auto* ids = static_cast<int32_t*>(a.block_table->data);
  ids[2] = 1 << 30;  // batch 0 slot 2, batch 1 slots 1, 2: beyond the lengths
  ids[4] = -5;
  ids[5] = 99;
  auto plan = plan_of(a);
  std::vector<std::byte> ws(plan->workspace_size());
  EXPECT_EQ(plan->run(a, ws.data(), ws.size()), Status::kSuccess) << last_error_message();
}

// blocks_may_repeat (prefix caching): two sequences read the same blocks, more blocks in total
// than the cache holds; each gives the output of its own contiguous copy.
TEST_F(IfaPlanTest, SharedBlocksWithBlocksMayRepeat) {
  IfaArgs a = paged();
  a.key = {tensor(DType::kFloat16, {2, 16, 32})};
  a.value = {tensor(DType::kFloat16, {2, 16, 32})};
  fill_random_fp16(a.key[0]);
  fill_random_fp16(a.value[0]);
  const int32_t ids[] = {1, 0, -1, 1, 0, -1};
  std::memcpy(a.block_table->data, ids, sizeof(ids));
  a.actual_seq_lengths = std::vector<int64_t>{20, 20};
  std::unique_ptr<IfaPlan> refused;
  EXPECT_EQ(IfaPlan::create(a, &refused), Status::kInvalid);
  expect_message("key cache has 2 blocks (dim 0) but actual_seq_lengths need 4");
  a.blocks_may_repeat = true;
  // Both batches share one query row, so both outputs are equal.
  fill_fp16(a.query, 0.25f);
  auto plan = plan_of(a);
  std::vector<std::byte> ws(plan->workspace_size());
  ASSERT_EQ(plan->run(a, ws.data(), ws.size()), Status::kSuccess) << last_error_message();
  const auto* out = static_cast<const uint16_t*>(a.attention_out.data);
  const int64_t half = numel(a.attention_out) / 2;
  for (int64_t i = 0; i < half; ++i) ASSERT_EQ(out[i], out[half + i]) << i;
}

// With K = 0 every score is 0: the output is the mean of V and LSE = log(kv_len), exactly.
TEST_F(IfaPlanTest, RunComputesFromTensorsAtRunTime) {
  IfaArgs a = contiguous();
  fill_fp16(a.key[0], 0.0f);
  fill_fp16(a.value[0], 1.5f);
  a.actual_seq_lengths = std::vector<int64_t>{40, 7};
  a.softmax_lse = tensor(DType::kFloat32, {2, 4});
  auto plan = plan_of(a);
  std::vector<std::byte> ws(plan->workspace_size());
  ASSERT_EQ(plan->run(a, ws.data(), ws.size()), Status::kSuccess) << last_error_message();
  const auto* out = static_cast<const uint16_t*>(a.attention_out.data);
  for (int64_t i = 0; i < numel(a.attention_out); ++i) {
    ASSERT_EQ(core::fp16_to_float(out[i]), 1.5f) << i;
  }
  const auto* lse = static_cast<const float*>(a.softmax_lse->data);
  for (int h = 0; h < 4; ++h) {
    EXPECT_NEAR(lse[h], std::log(40.0), 1e-5);
    EXPECT_NEAR(lse[4 + h], std::log(7.0), 1e-5);
  }
  // The tensors are read by each run: new V values are used by the next run.
  fill_fp16(a.value[0], -2.0f);
  ASSERT_EQ(plan->run(a, ws.data(), ws.size()), Status::kSuccess);
  for (int64_t i = 0; i < numel(a.attention_out); ++i) {
    ASSERT_EQ(core::fp16_to_float(out[i]), -2.0f) << i;
  }
}

TEST_F(IfaPlanTest, RunIsRepeatableAndAcceptsAnyWorkspaceAlignment) {
  IfaArgs a = quantised();
  std::uniform_int_distribution<int> dist(-100, 100);
  for (const TensorView& t : {a.key[0], a.value[0]}) {
    auto* p = static_cast<int8_t*>(t.data);
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<int8_t>(dist(rng_));
  }
  auto plan = plan_of(a);
  std::vector<std::byte> ws(plan->workspace_size() + 64);
  ASSERT_EQ(plan->run(a, ws.data(), plan->workspace_size()), Status::kSuccess)
      << last_error_message();
  const auto first = bytes_of(a.attention_out);
  const auto first_lse = bytes_of(*a.softmax_lse);
  std::memset(a.attention_out.data, 0, numel(a.attention_out));
  ASSERT_EQ(plan->run(a, ws.data() + 3, plan->workspace_size()), Status::kSuccess);
  EXPECT_EQ(bytes_of(a.attention_out), first);
  EXPECT_EQ(bytes_of(*a.softmax_lse), first_lse);
}

TEST_F(IfaPlanTest, OneShotMatchesPlan) {
  IfaArgs a = paged();
  auto plan = plan_of(a);
  std::vector<std::byte> ws(plan->workspace_size());
  ASSERT_EQ(plan->run(a, ws.data(), ws.size()), Status::kSuccess) << last_error_message();
  const auto from_plan = bytes_of(a.attention_out);
  std::memset(a.attention_out.data, 0, numel(a.attention_out) * 2);
  ASSERT_EQ(incre_flash_attention(a), Status::kSuccess) << last_error_message();
  EXPECT_EQ(bytes_of(a.attention_out), from_plan);
}

TEST_F(IfaPlanTest, OneShotReportsErrors) {
  IfaArgs a = paged();
  a.block_size = 24;
  EXPECT_EQ(incre_flash_attention(a), Status::kInvalid);
  expect_message("block_size (24)");

  IfaArgs b = paged();
  static_cast<int32_t*>(b.block_table->data)[3] = 6;  // batch 1 slot 0
  EXPECT_EQ(incre_flash_attention(b), Status::kInvalid);
  expect_message("block_table[1][0] (6)");
}

}  // namespace
}  // namespace kvflash
