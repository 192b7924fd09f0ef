// Concurrency stress through the aclnn API: T host threads, each with S streams of its own, run
// IFA (V3, paged) and SFA (V2) calls on shared read-only KV caches for a bounded time. Every call
// first poisons its private copies of the device data the run reads (block table, sparse indices,
// query) with aclrtMemsetAsync, then restores them with aclrtMemcpyAsync, then runs phase 2 and
// copies the output back with aclrtMemcpyAsync, all on one stream: the result is right only if
// the stream keeps that order. Calls are queued several deep before a synchronisation, streams are
// destroyed with work queued (destroy runs it) and created again. Every result is compared bit for
// bit with an output computed beforehand through the C++ API: kvflash is deterministic for any
// thread count and any interleaving.
//
// KVFLASH_STRESS_SECONDS (default 3) bounds the run; KVFLASH_STRESS_THREADS (default 4) and
// KVFLASH_STRESS_STREAMS (default 2) size it. The test runs under ThreadSanitizer in
// scripts/test.sh.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "aclnnop/aclnn_incre_flash_attention_v3.h"
#include "aclnnop/aclnn_sparse_flash_attention_v2.h"
#include "kvflash/ifa.hpp"
#include "kvflash/sfa.hpp"
#include "support/ifa_cases.hpp"
#include "support/sfa_cases.hpp"

namespace {

using kvflash::TensorView;
using namespace kvflash::testing;

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : fallback;
}

// Bytes from view.data to the end of its furthest element (views of the case builders are valid).
size_t reach_bytes(const TensorView& v) {
  int64_t last = v.offset;
  for (int i = 0; i < v.rank; ++i) last += (v.shape[i] - 1) * v.strides[i];
  return static_cast<size_t>(last + 1) * kvflash::dtype_size(v.dtype);
}

aclTensor* make_tensor(const TensorView& v, void* data) {
  return aclCreateTensor(v.shape.data(), static_cast<uint64_t>(v.rank),
                         static_cast<aclDataType>(v.dtype), v.strides.data(), v.offset,
                         ACL_FORMAT_ND, nullptr, 0, data);
}

// Device memory from aclrtMalloc, freed at the end.
struct DeviceBuffer {
  void* p = nullptr;
  size_t n = 0;
  explicit DeviceBuffer(size_t bytes) : n(bytes) {
    EXPECT_EQ(aclrtMalloc(&p, bytes, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  }
  ~DeviceBuffer() {
    if (p) {
      EXPECT_EQ(aclrtFree(p), ACL_SUCCESS);
    }
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

// One operator's shared inputs and its expected output bytes.
struct Workload {
  virtual ~Workload() = default;
  std::vector<std::byte> expected;
  size_t out_bytes = 0;
};

IfaCase ifa_case() {
  IfaCase c;
  c.layout = IfaLayout::kBsnd;
  c.q_dtype = c.kv_dtype = c.out_dtype = kvflash::DType::kBFloat16;
  c.batch = 3;
  c.num_heads = 8;
  c.num_kv_heads = 2;
  c.head_dim = 64;
  c.kv_lens = {37, 300, 129};
  c.paged = true;
  c.block_size = 32;
  c.mask = MaskShape::kB1S;
  c.tag = "stress";
  return c;
}

SfaCase sfa_case() {
  SfaCase c;
  c.kv_layout = SfaKvLayout::kPaBsnd;
  c.num_heads = 8;
  c.sparse_size = 16;
  c.q_lens = {2, 1};
  c.kv_lens = {40, 21};
  c.block_size = 16;
  c.sinks = true;
  c.lse = false;
  c.tag = "stress";
  return c;
}

std::vector<std::byte> bytes(const TensorView& v) {
  const auto* p = static_cast<const std::byte*>(v.data);
  return {p, p + v.numel() * static_cast<int64_t>(kvflash::dtype_size(v.dtype))};
}

// One queued call: its private device copies, tensors and host result.
struct Pending {
  std::unique_ptr<DeviceBuffer> query, table, out, ws;
  std::vector<aclTensor*> tensors;
  aclTensorList *keys = nullptr, *values = nullptr;
  aclIntArray* lengths = nullptr;
  std::vector<std::byte> host_out;
  bool sfa = false;
  ~Pending() {
    for (aclTensor* t : tensors) EXPECT_EQ(aclDestroyTensor(t), 0);
    EXPECT_EQ(aclDestroyTensorList(keys), 0);  // null is fine
    EXPECT_EQ(aclDestroyTensorList(values), 0);
    EXPECT_EQ(aclDestroyIntArray(lengths), 0);
  }
};

class Stress : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ifa_ = std::make_unique<IfaCaseData>(ifa_case());
    sfa_ = std::make_unique<SfaCaseData>(sfa_case());
    // Expected outputs through the C++ API, single-threaded.
    kvflash::IfaArgs ia = ifa_->args();
    ia.num_threads = 1;
    ASSERT_EQ(kvflash::incre_flash_attention(ia), kvflash::Status::kSuccess)
        << kvflash::last_error_message();
    ifa_expected_ = bytes(ia.attention_out);
    kvflash::SfaArgs sa = sfa_->args();
    sa.num_threads = 1;
    ASSERT_EQ(kvflash::sparse_flash_attention(sa), kvflash::Status::kSuccess)
        << kvflash::last_error_message();
    sfa_expected_ = bytes(sa.attention_out);
  }
  static void TearDownTestSuite() {
    ifa_.reset();
    sfa_.reset();
  }

  // Queues one IFA call on stream: poison + restore the private query and block table, run, copy
  // the output back. The caller synchronises and checks.
  static std::unique_ptr<Pending> queue_ifa(aclrtStream stream) {
    auto p = std::make_unique<Pending>();
    const kvflash::IfaArgs& a = ifa_->args();
    const size_t qn = reach_bytes(a.query), tn = reach_bytes(*a.block_table);
    p->query = std::make_unique<DeviceBuffer>(qn);
    p->table = std::make_unique<DeviceBuffer>(tn);
    const size_t on = reach_bytes(a.attention_out);
    p->out = std::make_unique<DeviceBuffer>(on);
    aclTensor* q = make_tensor(a.query, p->query->p);
    aclTensor* k = make_tensor(a.key[0], a.key[0].data);
    aclTensor* v = make_tensor(a.value[0], a.value[0].data);
    aclTensor* mask = make_tensor(*a.atten_mask, a.atten_mask->data);
    aclTensor* bt = make_tensor(*a.block_table, p->table->p);
    aclTensor* out = make_tensor(a.attention_out, p->out->p);
    p->tensors = {q, k, v, mask, bt, out};
    p->keys = aclCreateTensorList(&k, 1);
    p->values = aclCreateTensorList(&v, 1);
    p->lengths = aclCreateIntArray(a.actual_seq_lengths->data(), a.actual_seq_lengths->size());
    std::string layout = a.input_layout;
    uint64_t ws_size = 0;
    aclOpExecutor* exec = nullptr;
    EXPECT_EQ(aclnnIncreFlashAttentionV3GetWorkspaceSize(
                  q, p->keys, p->values, nullptr, mask, p->lengths, nullptr, nullptr, nullptr,
                  nullptr, nullptr, nullptr, nullptr, bt, a.num_heads, a.scale_value, layout.data(),
                  a.num_key_value_heads, a.block_size, a.inner_precise, out, &ws_size, &exec),
              0)
        << aclGetRecentErrMsg();
    p->ws = std::make_unique<DeviceBuffer>(ws_size ? ws_size : 1);
    EXPECT_EQ(aclrtMemsetAsync(p->query->p, qn, 0xFF, qn, stream), 0);
    EXPECT_EQ(aclrtMemsetAsync(p->table->p, tn, 0xFF, tn, stream), 0);  // ids -1: a fault
    EXPECT_EQ(
        aclrtMemcpyAsync(p->query->p, qn, a.query.data, qn, ACL_MEMCPY_HOST_TO_DEVICE, stream), 0);
    EXPECT_EQ(aclrtMemcpyAsync(p->table->p, tn, a.block_table->data, tn, ACL_MEMCPY_HOST_TO_DEVICE,
                               stream),
              0);
    EXPECT_EQ(aclnnIncreFlashAttentionV3(p->ws->p, ws_size, exec, stream), 0)
        << aclGetRecentErrMsg();
    p->host_out.assign(on, std::byte{0});
    EXPECT_EQ(
        aclrtMemcpyAsync(p->host_out.data(), on, p->out->p, on, ACL_MEMCPY_DEVICE_TO_HOST, stream),
        0);
    return p;
  }

  static std::unique_ptr<Pending> queue_sfa(aclrtStream stream) {
    auto p = std::make_unique<Pending>();
    p->sfa = true;
    const kvflash::SfaArgs& a = sfa_->args();
    const size_t qn = reach_bytes(a.query), in = reach_bytes(a.sparse_indices);
    const size_t on = reach_bytes(a.attention_out);
    p->query = std::make_unique<DeviceBuffer>(qn);
    p->table = std::make_unique<DeviceBuffer>(in);
    p->out = std::make_unique<DeviceBuffer>(on);
    aclTensor* q = make_tensor(a.query, p->query->p);
    aclTensor* k = make_tensor(a.key, a.key.data);
    aclTensor* si = make_tensor(a.sparse_indices, p->table->p);
    aclTensor* bt = make_tensor(*a.block_table, a.block_table->data);
    aclTensor* lkv = make_tensor(*a.actual_seq_lengths_kv, a.actual_seq_lengths_kv->data);
    aclTensor* lq = a.actual_seq_lengths_query
                        ? make_tensor(*a.actual_seq_lengths_query, a.actual_seq_lengths_query->data)
                        : nullptr;
    aclTensor* qr = make_tensor(a.query_rope, a.query_rope.data);
    aclTensor* kr = make_tensor(a.key_rope, a.key_rope.data);
    aclTensor* sinks = make_tensor(*a.sinks, a.sinks->data);
    aclTensor* out = make_tensor(a.attention_out, p->out->p);
    p->tensors = {q, k, si, bt, lkv, qr, kr, sinks, out};
    if (lq) p->tensors.push_back(lq);
    std::string lqs = a.layout_query, lks = a.layout_kv;
    uint64_t ws_size = 0;
    aclOpExecutor* exec = nullptr;
    EXPECT_EQ(aclnnSparseFlashAttentionV2GetWorkspaceSize(
                  q, k, nullptr, si, bt, lq, lkv, qr, kr, sinks, a.scale_value, a.sparse_block_size,
                  lqs.data(), lks.data(), a.sparse_mode, a.pre_tokens, a.next_tokens,
                  a.attention_mode, false, out, nullptr, nullptr, &ws_size, &exec),
              0)
        << aclGetRecentErrMsg();
    p->ws = std::make_unique<DeviceBuffer>(ws_size ? ws_size : 1);
    // Indices of INT32_MAX-ish garbage (0x7F bytes) select nothing: a wrong order shows as zeros.
    EXPECT_EQ(aclrtMemsetAsync(p->query->p, qn, 0xFF, qn, stream), 0);
    EXPECT_EQ(aclrtMemsetAsync(p->table->p, in, 0x7F, in, stream), 0);
    EXPECT_EQ(
        aclrtMemcpyAsync(p->query->p, qn, a.query.data, qn, ACL_MEMCPY_HOST_TO_DEVICE, stream), 0);
    EXPECT_EQ(aclrtMemcpyAsync(p->table->p, in, a.sparse_indices.data, in,
                               ACL_MEMCPY_HOST_TO_DEVICE, stream),
              0);
    EXPECT_EQ(aclnnSparseFlashAttentionV2(p->ws->p, ws_size, exec, stream), 0)
        << aclGetRecentErrMsg();
    p->host_out.assign(on, std::byte{0});
    EXPECT_EQ(
        aclrtMemcpyAsync(p->host_out.data(), on, p->out->p, on, ACL_MEMCPY_DEVICE_TO_HOST, stream),
        0);
    return p;
  }

  static void check(const Pending& p, const char* when) {
    const std::vector<std::byte>& want = p.sfa ? sfa_expected_ : ifa_expected_;
    ASSERT_EQ(p.host_out.size(), want.size());
    EXPECT_TRUE(p.host_out == want) << (p.sfa ? "SFA" : "IFA") << " result differs " << when;
  }

  static std::unique_ptr<IfaCaseData> ifa_;
  static std::unique_ptr<SfaCaseData> sfa_;
  static std::vector<std::byte> ifa_expected_, sfa_expected_;
};

std::unique_ptr<IfaCaseData> Stress::ifa_;
std::unique_ptr<SfaCaseData> Stress::sfa_;
std::vector<std::byte> Stress::ifa_expected_, Stress::sfa_expected_;

TEST_F(Stress, ManyThreadsManyStreams) {
  const int seconds = env_int("KVFLASH_STRESS_SECONDS", 3);
  const int threads = env_int("KVFLASH_STRESS_THREADS", 4);
  const int streams = env_int("KVFLASH_STRESS_STREAMS", 2);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  std::atomic<int64_t> calls{0}, syncs{0}, destroys{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      std::vector<aclrtStream> mine(streams);
      for (aclrtStream& s : mine) ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
      TestRng rng(0x57e55 + t);
      std::vector<std::vector<std::unique_ptr<Pending>>> queued(streams);
      while (std::chrono::steady_clock::now() < deadline) {
        const int si = static_cast<int>(rng.below(streams));
        // Up to three calls deep, mixing the operators.
        const int depth = 1 + static_cast<int>(rng.below(3));
        for (int d = 0; d < depth; ++d) {
          queued[si].push_back(rng.below(2) ? queue_ifa(mine[si]) : queue_sfa(mine[si]));
          calls.fetch_add(1);
        }
        if (rng.below(5) == 0) {
          // Destroy the stream with the work queued: destroy runs it first.
          ASSERT_EQ(aclrtDestroyStream(mine[si]), ACL_SUCCESS);
          ASSERT_EQ(aclrtCreateStream(&mine[si]), ACL_SUCCESS);
          destroys.fetch_add(1);
        } else {
          ASSERT_EQ(aclrtSynchronizeStream(mine[si]), ACL_SUCCESS) << aclGetRecentErrMsg();
          syncs.fetch_add(1);
        }
        for (const auto& p : queued[si]) check(*p, "after synchronisation or destroy");
        queued[si].clear();
      }
      for (aclrtStream s : mine) ASSERT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
    });
  }
  for (std::thread& th : pool) th.join();
  std::printf(
      "stress: %d threads x %d streams, %d s: %lld calls, %lld synchronisations, %lld "
      "streams destroyed with work queued\n",
      threads, streams, seconds, static_cast<long long>(calls.load()),
      static_cast<long long>(syncs.load()), static_cast<long long>(destroys.load()));
  EXPECT_GT(calls.load(), 0);
}

// The device can be reset while other threads' streams hold queued work: aclrtResetDevice waits
// only for the default stream, the others keep their work and results.
TEST_F(Stress, ResetDeviceWhileOtherStreamsWork) {
  std::vector<std::unique_ptr<Pending>> on_default;
  for (int i = 0; i < 3; ++i) on_default.push_back(queue_ifa(nullptr));
  std::thread other([] {
    aclrtStream s = nullptr;
    ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
    std::vector<std::unique_ptr<Pending>> q;
    for (int i = 0; i < 4; ++i) q.push_back(i % 2 ? queue_ifa(s) : queue_sfa(s));
    ASSERT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
    for (const auto& p : q) check(*p, "on a stream during a device reset");
    ASSERT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
  });
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  ASSERT_EQ(aclrtResetDevice(0), ACL_SUCCESS);  // drains the default stream's queued work
  for (const auto& p : on_default) check(*p, "on the default stream after a device reset");
  other.join();
}

}  // namespace
