// Resource faults: every allocation a call makes, failed in turn. This executable replaces the
// global allocation functions (as no_alloc_test.cpp does, nothrow variants included) so that the
// k-th allocation made by the calling thread after arming fails, for k = 1, 2, ... until the call
// no longer reaches a k-th allocation. Each failed call must return the documented code (361001
// for planning and the aclnn phases, ACL_ERROR_BAD_ALLOC for runtime calls, null for the create
// functions) with a message, must not throw, crash or leak (LeakSanitizer in the ASan pass), and
// the same call made again without a failure must succeed and give the right output: the library
// stays usable. aclrtMalloc's own aligned_alloc is failed with an address-space limit in a child
// process. Absurd sizes (element counts past 2^63, workspaces past memory) are refused with 161002
// before anything is allocated.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "aclnnop/aclnn_incre_flash_attention_v4.h"
#include "aclnnop/aclnn_sparse_flash_attention_v2.h"
#include "kvflash/fia.hpp"
#include "kvflash/ifa.hpp"
#include "kvflash/sfa.hpp"
#include "support/fia_cases.hpp"
#include "support/ifa_cases.hpp"
#include "support/sfa_cases.hpp"

namespace {

thread_local int64_t t_fail_at = 0;  // 0: off; else the allocation number that fails
thread_local int64_t t_count = 0;
thread_local bool t_failed = false;

void* alloc(std::size_t n, std::size_t align) {
  if (t_fail_at > 0 && ++t_count == t_fail_at) {
    t_failed = true;
    return nullptr;
  }
  if (n == 0) n = 1;
  return align > alignof(std::max_align_t)
             ? std::aligned_alloc(align, (n + align - 1) / align * align)
             : std::malloc(n);
}
void* alloc_or_throw(std::size_t n, std::size_t align) {
  void* p = alloc(n, align);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

}  // namespace

void* operator new(std::size_t n) { return alloc_or_throw(n, 0); }
void* operator new[](std::size_t n) { return alloc_or_throw(n, 0); }
void* operator new(std::size_t n, std::align_val_t a) {
  return alloc_or_throw(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a) {
  return alloc_or_throw(n, static_cast<std::size_t>(a));
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return alloc(n, 0); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return alloc(n, 0); }
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return alloc(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return alloc(n, static_cast<std::size_t>(a));
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }

namespace kvflash::testing {
namespace {

// Runs call() with its k-th allocation on this thread failing, for k = 1.. until a call completes
// without reaching the k-th allocation. failed(result) checks a call whose allocation failed;
// ok(result) one that completed. Returns the number of allocation points tried.
template <typename R>
int64_t sweep(const std::function<R()>& call, const std::function<void(R, int64_t)>& failed,
              const std::function<void(R)>& ok) {
  for (int64_t k = 1; k < 100000; ++k) {
    t_count = 0;
    t_failed = false;
    t_fail_at = k;
    R r = call();
    t_fail_at = 0;
    if (!t_failed) {
      ok(r);
      std::printf("  %lld allocation point(s) failed in turn\n", static_cast<long long>(k - 1));
      return k - 1;
    }
    failed(r, k);
    if (::testing::Test::HasFatalFailure()) return k;
  }
  ADD_FAILURE() << "the call never completed";
  return 0;
}

std::string message() { return last_error_message(); }

std::vector<IfaCase> ifa_fault_cases() {
  std::vector<IfaCase> out;
  IfaCase c;
  c.batch = 2;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 16;
  c.kv_lens = {5, 9};
  c.mask = MaskShape::kB1S;
  c.pse = PseShape::kBatch;
  c.tag = "fault";
  out.push_back(c);
  IfaCase p = c;  // paged int8 KV, int8 output, left padding ignored, LSE
  p.layout = IfaLayout::kBnsd;
  p.paged = true;
  p.block_size = 32;
  p.kv_dtype = DType::kInt8;
  p.antiquant = QuantMode::kPerChannel;
  p.out_dtype = DType::kInt8;
  p.out_quant = QuantMode::kPerChannel;
  p.lse = true;
  out.push_back(p);
  IfaCase l = c;  // tensor list, strided
  l.list_mode = true;
  l.strided = true;
  l.kv_padding = 1;
  out.push_back(l);
  return out;
}

SfaCase sfa_fault_case() {
  SfaCase c;
  c.kv_layout = SfaKvLayout::kPaBsnd;
  c.num_heads = 4;
  c.sparse_size = 8;
  c.q_lens = {2, 1};
  c.kv_lens = {20, 9};
  c.sinks = true;
  c.lse = true;
  c.tag = "fault";
  return c;
}

std::vector<std::byte> output_of(const TensorView& v) {
  const auto* p = static_cast<const std::byte*>(v.data);
  return {p, p + v.numel() * static_cast<int64_t>(dtype_size(v.dtype))};
}

TEST(Faults, IfaPlanCreate) {
  for (const IfaCase& c : ifa_fault_cases()) {
    IfaCaseData data(c);
    std::unique_ptr<IfaPlan> plan;
    const int64_t points =
        sweep<Status>([&] { return IfaPlan::create(data.args(), &plan); },
                      [&](Status s, int64_t k) {
                        ASSERT_EQ(s, Status::kRuntime) << c.name() << ": allocation " << k;
                        ASSERT_FALSE(plan) << c.name() << ": allocation " << k;
                        ASSERT_NE(message().find("out of memory"), std::string::npos) << message();
                      },
                      [&](Status s) { ASSERT_EQ(s, Status::kSuccess) << message(); });
    EXPECT_GT(points, 0) << c.name();
    // The plan made after all those failures runs and is right.
    std::vector<std::byte> ws(plan->workspace_size());
    ASSERT_EQ(plan->run(data.args(), ws.data(), ws.size()), Status::kSuccess) << message();
  }
}

TEST(Faults, SfaPlanCreate) {
  SfaCaseData data(sfa_fault_case());
  std::unique_ptr<SfaPlan> plan;
  EXPECT_GT(sweep<Status>([&] { return SfaPlan::create(data.args(), &plan); },
                          [&](Status s, int64_t k) {
                            ASSERT_EQ(s, Status::kRuntime) << "allocation " << k;
                            ASSERT_FALSE(plan);
                            ASSERT_FALSE(message().empty());
                          },
                          [&](Status s) { ASSERT_EQ(s, Status::kSuccess) << message(); }),
            0);
  std::vector<std::byte> ws(plan->workspace_size());
  ASSERT_EQ(plan->run(data.args(), ws.data(), ws.size()), Status::kSuccess) << message();
}

// FIA: a paged causal prefill and a decode-branch call (planned on IFA's kernels, D4).
TEST(Faults, FiaPlanCreate) {
  FiaCase pre;
  pre.num_heads = 4, pre.num_kv_heads = 2, pre.head_dim = 64;
  pre.q_lens = {5, 3}, pre.kv_lens = {9, 7};
  pre.paged = true, pre.sparse_mode = 3, pre.mask = FiaMask::kCompressed, pre.lse = true;
  FiaCase dec = pre;
  dec.paged = false, dec.lse = false, dec.q_lens = {1, 1}, dec.sparse_mode = 0;
  dec.mask = FiaMask::kNone;
  for (const FiaCase& c : {pre, dec}) {
    FiaCaseData data(c);
    const FiaArgs args = data.call();
    std::unique_ptr<FiaPlan> plan;
    const int64_t points =
        sweep<Status>([&] { return FiaPlan::create(args, &plan); },
                      [&](Status s, int64_t k) {
                        ASSERT_EQ(s, Status::kRuntime) << c.name() << ": allocation " << k;
                        ASSERT_FALSE(plan) << c.name() << ": allocation " << k;
                        ASSERT_NE(message().find("out of memory"), std::string::npos) << message();
                      },
                      [&](Status s) { ASSERT_EQ(s, Status::kSuccess) << message(); });
    EXPECT_GT(points, 0) << c.name();
    std::vector<std::byte> ws(plan->workspace_size());
    ASSERT_EQ(plan->run(args, ws.data(), ws.size()), Status::kSuccess) << message();
  }
}

// FIA: zero-stride K/V of 2^40 positions with lengths to match is refused while planning, and
// planning allocates nothing in proportion to the lengths.
TEST(AbsurdSizes, FiaLengthsPastMemory) {
  FiaCase c;
  c.num_heads = 4, c.num_kv_heads = 2, c.head_dim = 64;
  c.q_lens = {5, 3}, c.kv_lens = {9, 7};
  c.sparse_mode = 3, c.mask = FiaMask::kCompressed;
  FiaCaseData data(c);
  FiaArgs a = data.call();
  for (auto* list : {&a.key, &a.value}) {
    TensorView& t = (*list)[0];
    t.shape[1] = int64_t{1} << 40;  // BSND (B, S, KV_N, D): S = 2^40 positions of stride 0
    t.strides[1] = 0;
  }
  a.actual_seq_lengths_kv = std::vector<int64_t>{int64_t{1} << 40, int64_t{1} << 40};
  std::unique_ptr<FiaPlan> plan;
  t_count = 0;
  t_fail_at = std::numeric_limits<int64_t>::max();
  const Status s = FiaPlan::create(a, &plan);
  t_fail_at = 0;
  EXPECT_EQ(s, Status::kInvalid) << message();
  EXPECT_LT(t_count, 1000) << "planning allocated in proportion to the lengths";
}

// A refused run whose message cannot be allocated still returns (it never throws).
TEST(Faults, RefusedRunMessage) {
  IfaCaseData data(ifa_fault_cases()[0]);
  std::unique_ptr<IfaPlan> plan;
  ASSERT_EQ(IfaPlan::create(data.args(), &plan), Status::kSuccess);
  IfaArgs other = data.args();
  other.query.strides[0] += 1;
  std::vector<std::byte> ws(plan->workspace_size());
  sweep<Status>([&] { return plan->run(other, ws.data(), ws.size()); },
                [&](Status s, int64_t) { ASSERT_EQ(s, Status::kRuntime); },
                [&](Status s) { ASSERT_EQ(s, Status::kInvalid); });
  t_fail_at = 1;  // the very first allocation of the message
  t_count = 0;
  EXPECT_NE(plan->run(other, ws.data(), ws.size()), Status::kSuccess);
  t_fail_at = 0;
  EXPECT_EQ(plan->run(data.args(), ws.data(), ws.size()), Status::kSuccess);
}

// ---- the aclnn API ----------------------------------------------------------------------------

aclTensor* tensor_of(const TensorView& v) {
  return aclCreateTensor(v.shape.data(), static_cast<uint64_t>(v.rank),
                         static_cast<aclDataType>(v.dtype), v.strides.data(), v.offset,
                         ACL_FORMAT_ND, nullptr, 0, v.data);
}

// The handles of one IFA V4 call of a case (made without faults).
struct IfaHandles {
  std::vector<aclTensor*> tensors;
  aclTensorList *keys = nullptr, *values = nullptr;
  aclIntArray* lengths = nullptr;
  aclTensor* get(const std::optional<TensorView>& v) {
    if (!v) return nullptr;
    tensors.push_back(tensor_of(*v));
    return tensors.back();
  }
  aclTensor* get(const TensorView& v) { return get(std::optional<TensorView>(v)); }
  aclTensorList* list(const std::vector<TensorView>& vs) {
    std::vector<aclTensor*> items;
    for (const TensorView& v : vs) items.push_back(get(v));
    return aclCreateTensorList(items.data(), items.size());
  }
  ~IfaHandles() {
    for (aclTensor* t : tensors) aclDestroyTensor(t);
    aclDestroyTensorList(keys);
    aclDestroyTensorList(values);
    aclDestroyIntArray(lengths);
  }
};

struct IfaAclCall {
  explicit IfaAclCall(const IfaArgs& a) : args(a) {
    q = h.get(a.query);
    h.keys = h.list(a.key);
    h.values = h.list(a.value);
    pse = h.get(a.pse_shift);
    mask = h.get(a.atten_mask);
    if (a.actual_seq_lengths)
      h.lengths = aclCreateIntArray(a.actual_seq_lengths->data(), a.actual_seq_lengths->size());
    qs2 = h.get(a.quant_scale2);
    qo2 = h.get(a.quant_offset2);
    aqs = h.get(a.antiquant_scale);
    aqo = h.get(a.antiquant_offset);
    bt = h.get(a.block_table);
    pad = h.get(a.kv_padding_size);
    out = h.get(a.attention_out);
    layout = a.input_layout;
  }
  aclnnStatus phase1(uint64_t* ws, aclOpExecutor** exec) {
    return aclnnIncreFlashAttentionV4GetWorkspaceSize(
        q, h.keys, h.values, pse, mask, h.lengths, nullptr, nullptr, nullptr, qs2, qo2, aqs, aqo,
        bt, pad, args.num_heads, args.scale_value, layout.data(), args.num_key_value_heads,
        args.block_size, args.inner_precise, out, ws, exec);
  }
  IfaArgs args;
  IfaHandles h;
  aclTensor *q, *pse, *mask, *qs2, *qo2, *aqs, *aqo, *bt, *pad, *out;
  std::string layout;
};

TEST(Faults, AclnnIfaPhase1AndPhase2) {
  IfaCase c = ifa_fault_cases()[0];
  IfaCaseData data(c);
  IfaArgs expected_args = data.args();
  ASSERT_EQ(incre_flash_attention(expected_args), Status::kSuccess);
  const std::vector<std::byte> expected = output_of(expected_args.attention_out);
  data.poison_outputs();
  IfaAclCall call(data.args());
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);

  uint64_t ws_size = 0;
  aclOpExecutor* exec = nullptr;
  EXPECT_GT(sweep<aclnnStatus>(
                [&] { return call.phase1(&ws_size, &exec); },
                [&](aclnnStatus s, int64_t k) {
                  ASSERT_EQ(s, ACLNN_ERR_RUNTIME_ERROR) << "allocation " << k;
                  ASSERT_EQ(exec, nullptr);
                  ASSERT_FALSE(std::string(aclGetRecentErrMsg()).empty());
                },
                [&](aclnnStatus s) { ASSERT_EQ(s, ACLNN_SUCCESS) << aclGetRecentErrMsg(); }),
            0);
  std::vector<std::byte> ws(ws_size);
  // Phase 2 failing at each allocation: 361001, and the executor is still usable.
  EXPECT_GT(sweep<aclnnStatus>(
                [&] { return aclnnIncreFlashAttentionV4(ws.data(), ws_size, exec, stream); },
                [&](aclnnStatus s, int64_t k) {
                  ASSERT_EQ(s, ACLNN_ERR_RUNTIME_ERROR) << "allocation " << k;
                  ASSERT_FALSE(std::string(aclGetRecentErrMsg()).empty());
                },
                [&](aclnnStatus s) { ASSERT_EQ(s, ACLNN_SUCCESS) << aclGetRecentErrMsg(); }),
            0);
  ASSERT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS) << aclGetRecentErrMsg();
  EXPECT_TRUE(output_of(data.args().attention_out) == expected);
  ASSERT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
}

TEST(Faults, AclnnSfaPhase1) {
  SfaCaseData data(sfa_fault_case());
  const SfaArgs& a = data.args();
  std::vector<aclTensor*> ts;
  const auto get = [&](const std::optional<TensorView>& v) -> aclTensor* {
    if (!v) return nullptr;
    ts.push_back(tensor_of(*v));
    return ts.back();
  };
  aclTensor *q = get(a.query), *k = get(a.key), *si = get(a.sparse_indices),
            *bt = get(a.block_table), *lq = get(a.actual_seq_lengths_query),
            *lkv = get(a.actual_seq_lengths_kv), *qr = get(a.query_rope), *kr = get(a.key_rope),
            *sinks = get(a.sinks), *out = get(a.attention_out), *smax = get(a.softmax_max),
            *ssum = get(a.softmax_sum);
  std::string lqs = a.layout_query, lks = a.layout_kv;
  uint64_t ws_size = 0;
  aclOpExecutor* exec = nullptr;
  sweep<aclnnStatus>(
      [&] {
        return aclnnSparseFlashAttentionV2GetWorkspaceSize(
            q, k, nullptr, si, bt, lq, lkv, qr, kr, sinks, a.scale_value, a.sparse_block_size,
            lqs.data(), lks.data(), a.sparse_mode, a.pre_tokens, a.next_tokens, a.attention_mode,
            a.return_softmax_lse, out, smax, ssum, &ws_size, &exec);
      },
      [&](aclnnStatus s, int64_t k) {
        ASSERT_EQ(s, ACLNN_ERR_RUNTIME_ERROR) << "allocation " << k;
        ASSERT_EQ(exec, nullptr);
      },
      [&](aclnnStatus s) { ASSERT_EQ(s, ACLNN_SUCCESS) << aclGetRecentErrMsg(); });
  EXPECT_EQ(aclDestroyAclOpExecutor(exec), ACLNN_SUCCESS);
  for (aclTensor* t : ts) EXPECT_EQ(aclDestroyTensor(t), ACLNN_SUCCESS);
}

TEST(Faults, AclMetaObjects) {
  const int64_t dims[] = {2, 3}, strides[] = {3, 1}, values[] = {1, 2, 3};
  float data[6] = {};
  aclTensor* t = nullptr;
  sweep<aclTensor*>(
      [&] { return aclCreateTensor(dims, 2, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, dims, 2, data); },
      [&](aclTensor* r, int64_t) {
        ASSERT_EQ(r, nullptr);
        ASSERT_FALSE(std::string(aclGetRecentErrMsg()).empty());
      },
      [&](aclTensor* r) {
        ASSERT_NE(r, nullptr);
        t = r;
      });
  sweep<aclTensorList*>([&] { return aclCreateTensorList(&t, 1); },
                        [&](aclTensorList* r, int64_t) { ASSERT_EQ(r, nullptr); },
                        [&](aclTensorList* r) {
                          ASSERT_NE(r, nullptr);
                          EXPECT_EQ(aclDestroyTensorList(r), ACLNN_SUCCESS);
                        });
  sweep<aclIntArray*>([&] { return aclCreateIntArray(values, 3); },
                      [&](aclIntArray* r, int64_t) { ASSERT_EQ(r, nullptr); },
                      [&](aclIntArray* r) {
                        ASSERT_NE(r, nullptr);
                        EXPECT_EQ(aclDestroyIntArray(r), ACLNN_SUCCESS);
                      });
  // A failing destroy of a dead handle (its message allocates) still returns a code.
  sweep<aclnnStatus>([&] { return aclDestroyTensor(reinterpret_cast<aclTensor*>(data)); },
                     [&](aclnnStatus s, int64_t) { ASSERT_NE(s, ACLNN_SUCCESS); },
                     [&](aclnnStatus s) { ASSERT_EQ(s, ACLNN_ERR_PARAM_INVALID); });
  EXPECT_EQ(aclDestroyTensor(t), ACLNN_SUCCESS);
}

TEST(Faults, AclRuntime) {
  aclrtStream s = nullptr;
  sweep<aclError>([&] { return aclrtCreateStream(&s); },
                  [&](aclError e, int64_t k) {
                    ASSERT_EQ(e, ACL_ERROR_BAD_ALLOC) << "allocation " << k;
                    ASSERT_EQ(s, nullptr);
                  },
                  [&](aclError e) { ASSERT_EQ(e, ACL_SUCCESS); });
  ASSERT_NE(s, nullptr);
  void* dev = nullptr;
  sweep<aclError>([&] { return aclrtMalloc(&dev, 256, ACL_MEM_MALLOC_HUGE_FIRST); },
                  [&](aclError e, int64_t) {
                    ASSERT_EQ(e, ACL_ERROR_BAD_ALLOC);
                    ASSERT_EQ(dev, nullptr);
                  },
                  [&](aclError e) { ASSERT_EQ(e, ACL_SUCCESS); });
  char host[256] = {1};
  sweep<aclError>(
      [&] { return aclrtMemcpyAsync(dev, 256, host, 256, ACL_MEMCPY_HOST_TO_DEVICE, s); },
      [&](aclError e, int64_t) { ASSERT_EQ(e, ACL_ERROR_BAD_ALLOC); },
      [&](aclError e) { ASSERT_EQ(e, ACL_SUCCESS); });
  sweep<aclError>([&] { return aclrtMemsetAsync(dev, 256, 7, 16, s); },
                  [&](aclError e, int64_t) { ASSERT_EQ(e, ACL_ERROR_BAD_ALLOC); },
                  [&](aclError e) { ASSERT_EQ(e, ACL_SUCCESS); });
  ASSERT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
  EXPECT_EQ(static_cast<char*>(dev)[0], 7);
  EXPECT_EQ(static_cast<char*>(dev)[16], 0);
  // Reporting a failure allocates its message: a free of a foreign pointer, failed at each point.
  sweep<aclError>([&] { return aclrtFree(host); },
                  [&](aclError e, int64_t) { ASSERT_NE(e, ACL_SUCCESS); },
                  [&](aclError e) { ASSERT_EQ(e, ACL_ERROR_INVALID_PARAM); });
  EXPECT_EQ(aclrtFree(dev), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
}

// aclrtMalloc's memory comes from aligned_alloc, not operator new: a child process with a small
// address-space limit makes it fail for real. (Not under sanitizers: they reserve terabytes of
// address space for their shadow memory.)
TEST(Faults, AclrtMallocOutOfMemory) {
  if (under_sanitizer()) GTEST_SKIP() << "RLIMIT_AS and sanitizer shadow memory do not mix";
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // a fresh process, not a fork of this one
  EXPECT_EXIT(
      {
        rlimit lim{};
        lim.rlim_cur = lim.rlim_max = rlim_t{1} << 30;  // 1 GiB of address space
        if (setrlimit(RLIMIT_AS, &lim) != 0) _exit(10);
        void* p = reinterpret_cast<void*>(0x1);
        if (aclrtMalloc(&p, size_t{2} << 30, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_ERROR_BAD_ALLOC)
          _exit(11);
        if (p != nullptr) _exit(12);
        if (std::string(aclGetRecentErrMsg()).find("out of memory") == std::string::npos) _exit(13);
        if (aclrtMalloc(&p, 4096, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) _exit(14);  // usable
        if (aclrtFree(p) != ACL_SUCCESS) _exit(15);
        _exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

// ---- absurd sizes: refused with 161002 before anything is allocated -----------------------------

TEST(AbsurdSizes, ElementCountsPast2To63) {
  IfaCaseData data(ifa_fault_cases()[0]);
  for (int which = 0; which < 3; ++which) {
    IfaArgs a = data.args();
    TensorView& v = which == 0 ? a.query : which == 1 ? a.key[0] : *a.atten_mask;
    v.shape[0] = int64_t{1} << 40;  // with the other dims, the count passes 2^63
    v.shape[v.rank - 1] = int64_t{1} << 40;
    std::unique_ptr<IfaPlan> plan;
    t_count = 0;
    t_fail_at = std::numeric_limits<int64_t>::max();  // count only
    const Status s = IfaPlan::create(a, &plan);
    t_fail_at = 0;
    EXPECT_EQ(s, Status::kInvalid) << which;
    EXPECT_NE(message().find("overflows int64"), std::string::npos) << message();
  }
  SfaCaseData sfa(sfa_fault_case());
  SfaArgs s = sfa.args();
  s.actual_seq_lengths_query = s.actual_seq_lengths_kv;  // a tensor the view checks meet late
  s.actual_seq_lengths_query->rank = 3;
  s.actual_seq_lengths_query->shape = {int64_t{1} << 40, int64_t{1} << 40, int64_t{1} << 40};
  s.actual_seq_lengths_query->strides = {0, 0, 0};
  s.layout_query = "TND";
  std::unique_ptr<SfaPlan> plan;
  EXPECT_EQ(SfaPlan::create(s, &plan), Status::kInvalid);
}

// Zero strides describe sequences of any length in a few bytes: a batch of long sequences whose
// workspace exceeds the machine's memory is refused at planning (it could never run).
TEST(AbsurdSizes, WorkspacePastMemory) {
  IfaCase c = ifa_fault_cases()[0];
  c.kv_lens = {5, 5};
  IfaCaseData data(c);
  IfaArgs a = data.args();
  a.atten_mask.reset();  // a mask would have to be as wide as the lengths
  a.pse_shift.reset();
  for (auto* list : {&a.key, &a.value}) {
    TensorView& t = (*list)[0];
    t.shape[1] = int64_t{1} << 40;  // BSH (B, S, KV_N * D): S = 2^40 positions of stride 0
    t.strides[1] = 0;
  }
  a.actual_seq_lengths = std::vector<int64_t>{int64_t{1} << 40, int64_t{1} << 40};
  std::unique_ptr<IfaPlan> plan;
  t_count = 0;
  t_fail_at = std::numeric_limits<int64_t>::max();
  const Status s = IfaPlan::create(a, &plan);
  t_fail_at = 0;
  EXPECT_EQ(s, Status::kInvalid);
  EXPECT_NE(message().find("more than the"), std::string::npos) << message();
  EXPECT_LT(t_count, 1000) << "planning allocated in proportion to the lengths";
  // The same through aclnn phase 1.
  IfaAclCall call(a);
  uint64_t ws = 0;
  aclOpExecutor* exec = nullptr;
  EXPECT_EQ(call.phase1(&ws, &exec), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(exec, nullptr);
}

}  // namespace
}  // namespace kvflash::testing
