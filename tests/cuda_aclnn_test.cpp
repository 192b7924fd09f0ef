// The aclnn runtime on CUDA (KVFLASH_ACL_BACKEND=cuda, src/aclnn/runtime_cuda.*): memory and copy
// round trips, stream order, faults reported at stream synchronisation (507015), and IFA through
// the aclnn API compared with the CPU. The variable is set before main, so this whole program runs
// the CUDA runtime. Every test but the first needs a GPU and skips (printing the reason) without
// one; the first checks the start-up answer on both kinds of machine.
//
// STATUS: the GPU tests have never run (no GPU was available when they were written);
// scripts/gpu-check.sh runs them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnn/acl_backend.hpp"
#include "aclnn/acl_meta.h"
#include "aclnn/acl_objects.hpp"
#include "aclnn/opdev/fp16_t.h"
#include "aclnnop/aclnn_incre_flash_attention_v3.h"
#include "aclnnop/aclnn_sparse_flash_attention.h"
#include "core/device_fault.hpp"
#include "core/error.hpp"
#include "cuda/device.hpp"
#include "kvflash/ifa.hpp"
#include "kvflash/sfa.hpp"

#if defined(KVFLASH_HAVE_CUDA)
#include <cuda_runtime_api.h>
#endif

namespace {

using kvflash::Status;

// Before main and before any acl call reads it (the library reads it once, on first use).
const bool kCudaChosen = [] { return setenv("KVFLASH_ACL_BACKEND", "cuda", 1) == 0; }();

std::string recent() { return aclGetRecentErrMsg(); }

// aclInit + aclrtSetDevice(0) once per process; the codes of that first attempt.
struct Start {
  aclError init = -1, set_device = -1;
  std::string init_message, set_device_message;
};
const Start& start() {
  static const Start s = [] {
    Start r;
    r.init = aclInit(nullptr);
    r.init_message = recent();
    r.set_device = aclrtSetDevice(0);
    r.set_device_message = recent();
    return r;
  }();
  return s;
}

#define REQUIRE_GPU()                                                          \
  do {                                                                         \
    if (!kvflash::cuda::device_present())                                      \
      GTEST_SKIP() << kvflash::cuda::device_info().reason;                     \
    ASSERT_EQ(start().init, ACL_SUCCESS) << start().init_message;              \
    ASSERT_EQ(start().set_device, ACL_SUCCESS) << start().set_device_message;  \
  } while (0)

// Never skips: on a GPU machine the CUDA runtime starts; elsewhere aclInit and aclrtSetDevice
// refuse with the documented code and CUDA's reason.
TEST(CudaAclRuntime, StartsExactlyWhenAGpuIsUsable) {
  ASSERT_TRUE(kCudaChosen);
  if (kvflash::cuda::device_present()) {
    EXPECT_EQ(start().init, ACL_SUCCESS) << start().init_message;
    EXPECT_EQ(start().set_device, ACL_SUCCESS) << start().set_device_message;
    EXPECT_TRUE(kvflash::aclnn::cuda_runtime());
    return;
  }
#if defined(KVFLASH_HAVE_CUDA)
  const aclError want = ACL_ERROR_INVALID_DEVICE;
  const std::string reason = kvflash::cuda::device_info().reason;
#else
  const aclError want = ACL_ERROR_API_NOT_SUPPORT;
  const std::string reason = "built without CUDA";
#endif
  EXPECT_EQ(start().init, want);
  EXPECT_NE(start().init_message.find(reason), std::string::npos) << start().init_message;
  EXPECT_EQ(start().set_device, want);
  EXPECT_NE(start().set_device_message.find(reason), std::string::npos)
      << start().set_device_message;
  EXPECT_FALSE(kvflash::aclnn::cuda_runtime());
}

// ---- memory and copies --------------------------------------------------------------------------

TEST(CudaAclRuntime, MemcpyRoundTripsEveryKind) {
  REQUIRE_GPU();
  const size_t n = 1000;
  std::vector<uint8_t> host(n), back(n, 0);
  for (size_t i = 0; i < n; ++i) host[i] = static_cast<uint8_t>(i * 7 + 3);
  void *d1 = nullptr, *d2 = nullptr, *pinned = nullptr;
  ASSERT_EQ(aclrtMalloc(&d1, n, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  ASSERT_EQ(aclrtMalloc(&d2, n, ACL_MEM_MALLOC_NORMAL_ONLY), ACL_SUCCESS);
  ASSERT_EQ(aclrtMallocHost(&pinned, n), ACL_SUCCESS);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(d1) % 64, 0u);
  ASSERT_EQ(aclrtMemcpy(d1, n, host.data(), n, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemcpy(d2, n, d1, n, ACL_MEMCPY_DEVICE_TO_DEVICE), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemcpy(back.data(), n, d2, n, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  EXPECT_EQ(back, host);
  ASSERT_EQ(aclrtMemcpy(pinned, n, host.data(), n, ACL_MEMCPY_HOST_TO_HOST), ACL_SUCCESS);
  EXPECT_EQ(std::memcmp(pinned, host.data(), n), 0);
  // Memset of part of a device buffer, then of host memory.
  ASSERT_EQ(aclrtMemset(d2, n, 0x5a, n / 2), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemcpy(back.data(), n, d2, n, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(back[i], i < n / 2 ? 0x5a : host[i]) << i;
  ASSERT_EQ(aclrtMemset(pinned, n, 0, n), ACL_SUCCESS);
  EXPECT_EQ(static_cast<uint8_t*>(pinned)[n - 1], 0);

  // Misuse is refused before CUDA sees it: a kind that contradicts the pointers, a range past the
  // allocation's end, pointers that are not allocations.
  EXPECT_EQ(aclrtMemcpy(d1, n, host.data(), n, ACL_MEMCPY_HOST_TO_HOST), ACL_ERROR_INVALID_PARAM);
  EXPECT_NE(recent().find("is device memory"), std::string::npos) << recent();
  EXPECT_EQ(aclrtMemcpy(host.data(), n, d1, n, ACL_MEMCPY_HOST_TO_DEVICE),
            ACL_ERROR_INVALID_PARAM);
  std::vector<uint8_t> big(2 * n);
  EXPECT_EQ(aclrtMemcpy(d1, 2 * n, big.data(), 2 * n, ACL_MEMCPY_HOST_TO_DEVICE),
            ACL_ERROR_INVALID_PARAM);
  EXPECT_NE(recent().find("not within one aclrtMalloc allocation"), std::string::npos) << recent();
  EXPECT_EQ(aclrtMemcpy(static_cast<char*>(d1) + 900, 200, host.data(), 200,
                        ACL_MEMCPY_HOST_TO_DEVICE),
            ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtMemcpy(static_cast<char*>(d1) + 900, 100, host.data(), 100,
                        ACL_MEMCPY_HOST_TO_DEVICE),
            ACL_SUCCESS);  // the last 100 bytes: inside
  EXPECT_EQ(aclrtMemset(static_cast<char*>(d1) + 1, n, 0, n), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtFree(static_cast<char*>(d1) + 1), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtFreeHost(d1), ACL_ERROR_INVALID_PARAM);

  // Tensors on this memory are CUDA tensors of the current device.
  const int64_t dims[] = {10, 100};
  const int64_t strides[] = {100, 1};
  aclTensor* t = aclCreateTensor(dims, 2, ACL_UINT8, strides, 0, ACL_FORMAT_ND, dims, 2, d1);
  ASSERT_NE(t, nullptr) << recent();
  EXPECT_EQ(t->view.device.type, kvflash::DeviceType::kCuda);
  EXPECT_EQ(t->view.device.index, 0);
  EXPECT_EQ(aclDestroyTensor(t), ACLNN_SUCCESS);

  EXPECT_EQ(aclrtFree(d1), ACL_SUCCESS);
  EXPECT_EQ(aclrtFree(d1), ACL_ERROR_INVALID_PARAM);  // twice
  EXPECT_EQ(aclrtFree(d2), ACL_SUCCESS);
  EXPECT_EQ(aclrtFreeHost(pinned), ACL_SUCCESS);
  EXPECT_EQ(aclrtFreeHost(pinned), ACL_ERROR_INVALID_PARAM);
}

// Copies and memsets queued on a stream run in order: each round's result depends on all four
// steps having run in sequence. Two streams at once, each on its own buffers.
TEST(CudaAclRuntime, AsyncWorkRunsInStreamOrder) {
  REQUIRE_GPU();
  const size_t n = 1 << 20;
  aclrtStream streams[2] = {nullptr, nullptr};
  void *src[2], *dst[2], *a[2], *b[2];
  for (int s = 0; s < 2; ++s) {
    ASSERT_EQ(aclrtCreateStream(&streams[s]), ACL_SUCCESS);
    ASSERT_EQ(aclrtMallocHost(&src[s], n), ACL_SUCCESS);
    ASSERT_EQ(aclrtMallocHost(&dst[s], n), ACL_SUCCESS);
    ASSERT_EQ(aclrtMalloc(&a[s], n, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    ASSERT_EQ(aclrtMalloc(&b[s], n, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  }
  for (int round = 0; round < 8; ++round) {
    for (int s = 0; s < 2; ++s) {
      std::memset(src[s], round * 2 + s + 1, n);
      ASSERT_EQ(aclrtMemcpyAsync(a[s], n, src[s], n, ACL_MEMCPY_HOST_TO_DEVICE, streams[s]),
                ACL_SUCCESS);
      ASSERT_EQ(aclrtMemsetAsync(a[s], n, 0xee, n / 3, streams[s]), ACL_SUCCESS);
      ASSERT_EQ(aclrtMemcpyAsync(b[s], n, a[s], n, ACL_MEMCPY_DEVICE_TO_DEVICE, streams[s]),
                ACL_SUCCESS);
      ASSERT_EQ(aclrtMemcpyAsync(dst[s], n, b[s], n, ACL_MEMCPY_DEVICE_TO_HOST, streams[s]),
                ACL_SUCCESS);
    }
    for (int s = 0; s < 2; ++s) {
      ASSERT_EQ(aclrtSynchronizeStream(streams[s]), ACL_SUCCESS) << recent();
      const auto* out = static_cast<const uint8_t*>(dst[s]);
      for (size_t i = 0; i < n; i += 4093)
        ASSERT_EQ(out[i], i < n / 3 ? 0xee : round * 2 + s + 1) << "round " << round << " i " << i;
      ASSERT_EQ(out[n - 1], round * 2 + s + 1);
    }
  }
  EXPECT_EQ(aclrtSynchronizeDevice(), ACL_SUCCESS);
  // A copy from pageable host memory on the default stream, then a synchronous copy back.
  std::vector<uint8_t> host(n, 0x42), back(n, 0);
  ASSERT_EQ(aclrtMemcpyAsync(a[0], n, host.data(), n, ACL_MEMCPY_HOST_TO_DEVICE, nullptr),
            ACL_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemcpy(back.data(), n, a[0], n, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  EXPECT_EQ(back, host);
  // Dead stream handles.
  EXPECT_EQ(aclrtMemsetAsync(a[0], n, 0, 1, streams), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtMemsetAsync(host.data(), n, 0, 1, streams[0]), ACL_ERROR_INVALID_PARAM);
  for (int s = 0; s < 2; ++s) {
    EXPECT_EQ(aclrtDestroyStream(streams[s]), ACL_SUCCESS);
    EXPECT_EQ(aclrtSynchronizeStream(streams[s]), ACL_ERROR_INVALID_PARAM);
    EXPECT_EQ(aclrtDestroyStream(streams[s]), ACL_ERROR_INVALID_PARAM);
    EXPECT_EQ(aclrtFree(a[s]), ACL_SUCCESS);
    EXPECT_EQ(aclrtFree(b[s]), ACL_SUCCESS);
    EXPECT_EQ(aclrtFreeHost(src[s]), ACL_SUCCESS);
    EXPECT_EQ(aclrtFreeHost(dst[s]), ACL_SUCCESS);
  }
}

// Events: stream b waits for a's record after a large write; b's copy sees the write, the host
// waits for the event, and the elapsed time is measured.
TEST(CudaAclRuntime, EventsOrderStreamsAndTime) {
  REQUIRE_GPU();
  const size_t n = 64 << 20;
  aclrtStream a = nullptr, b = nullptr;
  ASSERT_EQ(aclrtCreateStream(&a), ACL_SUCCESS);
  ASSERT_EQ(aclrtCreateStream(&b), ACL_SUCCESS);
  aclrtEvent start = nullptr, written = nullptr;
  ASSERT_EQ(aclrtCreateEvent(&start), ACL_SUCCESS);
  ASSERT_EQ(aclrtCreateEvent(&written), ACL_SUCCESS);
  void *x = nullptr, *y = nullptr, *host = nullptr;
  ASSERT_EQ(aclrtMalloc(&x, n, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  ASSERT_EQ(aclrtMalloc(&y, n, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  ASSERT_EQ(aclrtMallocHost(&host, n), ACL_SUCCESS);
  for (int round = 1; round <= 4; ++round) {
    ASSERT_EQ(aclrtMemset(y, n, 0, n), ACL_SUCCESS);
    ASSERT_EQ(aclrtRecordEvent(start, a), ACL_SUCCESS);
    ASSERT_EQ(aclrtMemsetAsync(x, n, round, n, a), ACL_SUCCESS);
    ASSERT_EQ(aclrtRecordEvent(written, a), ACL_SUCCESS);
    ASSERT_EQ(aclrtStreamWaitEvent(b, written), ACL_SUCCESS);
    ASSERT_EQ(aclrtMemcpyAsync(y, n, x, n, ACL_MEMCPY_DEVICE_TO_DEVICE, b), ACL_SUCCESS);
    ASSERT_EQ(aclrtMemcpyAsync(host, n, y, n, ACL_MEMCPY_DEVICE_TO_HOST, b), ACL_SUCCESS);
    ASSERT_EQ(aclrtSynchronizeStream(b), ACL_SUCCESS) << recent();
    const auto* h = static_cast<const uint8_t*>(host);
    for (size_t i = 0; i < n; i += 65521) ASSERT_EQ(h[i], round) << i;
    ASSERT_EQ(h[n - 1], round);
    ASSERT_EQ(aclrtSynchronizeEvent(written), ACL_SUCCESS);
    aclrtEventStatus status = ACL_EVENT_STATUS_RESERVED;
    EXPECT_EQ(aclrtQueryEvent(written, &status), ACL_SUCCESS);
    EXPECT_EQ(status, ACL_EVENT_STATUS_COMPLETE);
    float ms = -1;
    ASSERT_EQ(aclrtEventElapsedTime(&ms, start, written), ACL_SUCCESS) << recent();
    EXPECT_GT(ms, 0.0f);
  }
  int not_an_event = 0;
  EXPECT_EQ(aclrtRecordEvent(&not_an_event, a), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtDestroyEvent(start), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyEvent(written), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyEvent(written), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtDestroyStream(a), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(b), ACL_SUCCESS);
  EXPECT_EQ(aclrtFree(x), ACL_SUCCESS);
  EXPECT_EQ(aclrtFree(y), ACL_SUCCESS);
  EXPECT_EQ(aclrtFreeHost(host), ACL_SUCCESS);
}

// ---- faults: reported at synchronisation, never by the aclnn call --------------------------------

#if defined(KVFLASH_HAVE_CUDA)
// An operator whose run writes a fault record at the start of its workspace on the device, as a
// CUDA backend does (core/device_fault.hpp): a bad block id when device_fault, else "no fault";
// or whose run itself fails with run_status.
aclOpExecutor* fault_executor(bool device_fault, Status run_status = Status::kSuccess) {
  kvflash::aclnn::ExecutorWork w;
  w.op = "fault_op";
  w.workspace_size = 512;
  w.run = [device_fault, run_status](void* ws, uint64_t, void* stream) -> Status {
    if (run_status != Status::kSuccess)
      return kvflash::core::fail(run_status, "fault_op", "the run itself failed");
    kvflash::core::FaultRecord r;
    if (device_fault) {
      r = kvflash::core::fault_of(kvflash::core::kFaultOpIfa, kvflash::core::kFaultBlockId, 0);
      r.slot = 1;
      r.value = 99;
    }
    // From pageable memory: CUDA stages r before the call returns.
    if (cudaMemcpyAsync(kvflash::core::fault_record_at(ws), &r, sizeof r, cudaMemcpyHostToDevice,
                        static_cast<cudaStream_t>(stream)) != cudaSuccess)
      return kvflash::core::fail(Status::kRuntime, "fault_op", "cudaMemcpyAsync failed");
    return Status::kSuccess;
  };
  w.decode_fault = [](const kvflash::core::FaultRecord& r) {
    if (r.status == 0) return Status::kSuccess;
    return kvflash::core::fail(Status::kInvalid, "fault_op",
                               "block_table[0][" + std::to_string(r.slot) + "] (" +
                                   std::to_string(r.value) + ") is not a valid block id");
  };
  return kvflash::aclnn::make_executor(std::move(w));
}
#endif

TEST(CudaAclRuntime, DeviceFaultSurfacesAtSynchronisationAs507015) {
  REQUIRE_GPU();
#if defined(KVFLASH_HAVE_CUDA)
  using kvflash::aclnn::launch;
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
  void* ws = nullptr;
  ASSERT_EQ(aclrtMalloc(&ws, 512, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);

  // A fault: the call succeeds, the synchronisation reports it once.
  ASSERT_EQ(launch("fault_op", ws, 512, fault_executor(true), s), ACLNN_SUCCESS) << recent();
  EXPECT_EQ(aclrtSynchronizeStream(s), ACL_ERROR_RT_AICORE_EXCEPTION);
  EXPECT_NE(recent().find("is not a valid block id"), std::string::npos) << recent();
  EXPECT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);

  // The next call reuses the workspace and clears the word before anyone synchronises: the
  // first call's fault was copied in stream order and is still reported.
  ASSERT_EQ(launch("fault_op", ws, 512, fault_executor(true), s), ACLNN_SUCCESS);
  ASSERT_EQ(launch("fault_op", ws, 512, fault_executor(false), s), ACLNN_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(s), ACL_ERROR_RT_AICORE_EXCEPTION);
  EXPECT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);

  // Clean runs: nothing to report.
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(launch("fault_op", ws, 512, fault_executor(false), s), ACLNN_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);

  // A run that fails on the launching thread: reported at synchronisation too, as on the CPU.
  ASSERT_EQ(launch("fault_op", ws, 512, fault_executor(false, Status::kInvalid), s), ACLNN_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(s), ACL_ERROR_RT_AICORE_EXCEPTION);
  EXPECT_NE(recent().find("the run itself failed"), std::string::npos) << recent();
  ASSERT_EQ(launch("fault_op", ws, 512, fault_executor(false, Status::kRuntime), s), ACLNN_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(s), ACL_ERROR_INTERNAL_ERROR);

  // aclrtSynchronizeDevice reports faults of every stream, the default one included.
  ASSERT_EQ(launch("fault_op", ws, 512, fault_executor(true), nullptr), ACLNN_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeDevice(), ACL_ERROR_RT_AICORE_EXCEPTION);
  EXPECT_EQ(aclrtSynchronizeDevice(), ACL_SUCCESS);

  // Phase 2 on a dead stream is refused and leaves the executor usable.
  aclOpExecutor* e = fault_executor(false);
  int not_a_stream = 0;
  EXPECT_EQ(launch("fault_op", ws, 512, e, &not_a_stream), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(launch("fault_op", ws, 512, e, s), ACLNN_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);

  EXPECT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
  EXPECT_EQ(aclrtFree(ws), ACL_SUCCESS);
#endif
}

// ---- IncreFlashAttention through the aclnn API on CUDA vs the CPU --------------------------------

struct IfaProblem {
  int64_t B = 2, N = 8, KVN = 2, D = 64, S = 300;  // dense: key (B, S, KVN*D)
  std::vector<int64_t> lengths = {300, 123};
  // Paged (block_size > 0): key (num_blocks, block_size, KVN*D), table (B, max_blocks).
  int64_t block_size = 0, num_blocks = 0, max_blocks = 0;
  std::vector<int32_t> table;
  std::vector<op::fp16_t> q, k, v;

  int64_t kv_rows() const { return block_size > 0 ? num_blocks * block_size : B * S; }
  std::vector<int64_t> kv_shape() const {
    return block_size > 0 ? std::vector<int64_t>{num_blocks, block_size, KVN * D}
                          : std::vector<int64_t>{B, S, KVN * D};
  }
  void fill() {
    uint32_t state = 12345;
    const auto next = [&state] {
      state = state * 1664525u + 1013904223u;
      return static_cast<float>((state >> 8) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
    };
    q.resize(static_cast<size_t>(B * N * D));
    k.resize(static_cast<size_t>(kv_rows() * KVN * D));
    v.resize(k.size());
    for (auto& x : q) x = op::fp16_t(next());
    for (auto& x : k) x = op::fp16_t(next());
    for (auto& x : v) x = op::fp16_t(2.0f * next());
  }
};

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}

// The CPU result through the C++ API on host views.
std::vector<op::fp16_t> ifa_on_cpu(IfaProblem p, Status want = Status::kSuccess) {
  std::vector<op::fp16_t> out(p.q.size());
  kvflash::IfaArgs a;
  a.query = kvflash::TensorView::contiguous(p.q.data(), kvflash::DType::kFloat16,
                                            {p.B, 1, p.N * p.D});
  const auto kv = p.kv_shape();
  a.key = {kvflash::TensorView::contiguous(p.k.data(), kvflash::DType::kFloat16, kv)};
  a.value = {kvflash::TensorView::contiguous(p.v.data(), kvflash::DType::kFloat16, kv)};
  if (p.block_size > 0) {
    a.block_table = kvflash::TensorView::contiguous(p.table.data(), kvflash::DType::kInt32,
                                                    {p.B, p.max_blocks});
    a.block_size = p.block_size;
  }
  a.actual_seq_lengths = p.lengths;
  a.num_heads = p.N;
  a.num_key_value_heads = p.KVN;
  a.scale_value = 1.0 / std::sqrt(static_cast<double>(p.D));
  a.input_layout = "BSH";
  a.attention_out = kvflash::TensorView::contiguous(out.data(), kvflash::DType::kFloat16,
                                                    {p.B, 1, p.N * p.D});
  EXPECT_EQ(kvflash::incre_flash_attention(a), want) << kvflash::last_error_message();
  return out;
}

struct DeviceBuffer {
  void* addr = nullptr;
  aclTensor* tensor = nullptr;
  DeviceBuffer(const void* host, size_t bytes, const std::vector<int64_t>& shape, aclDataType dt) {
    EXPECT_EQ(aclrtMalloc(&addr, bytes, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    EXPECT_EQ(aclrtMemcpy(addr, bytes, host, bytes, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
    const auto strides = contiguous_strides(shape);
    tensor = aclCreateTensor(shape.data(), shape.size(), dt, strides.data(), 0, ACL_FORMAT_ND,
                             shape.data(), shape.size(), addr);
    EXPECT_NE(tensor, nullptr) << recent();
  }
  ~DeviceBuffer() {
    aclDestroyTensor(tensor);
    aclrtFree(addr);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

struct AclnnResult {
  aclnnStatus phase1 = 0, phase2 = 0;
  aclError sync = 0;
  std::string message;
  std::vector<op::fp16_t> out;
};

// After phase 1 (its status in r.phase1): the workspace, phase 2, stream sync and the copy of the
// n fp16 outputs back to r.out, as a CANN program does them.
void finish_through_aclnn(AclnnResult& r, uint64_t ws_size, aclOpExecutor* executor,
                          aclnnStatus (*phase2)(void*, uint64_t, aclOpExecutor*, aclrtStream),
                          aclrtStream stream, const DeviceBuffer& out, size_t n) {
  r.message = recent();
  if (r.phase1 != ACLNN_SUCCESS) return;
  void* ws = nullptr;
  if (ws_size > 0) {
    EXPECT_EQ(aclrtMalloc(&ws, ws_size, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  }
  r.phase2 = phase2(ws, ws_size, executor, stream);
  r.sync = aclrtSynchronizeStream(stream);
  r.message = recent();
  r.out.resize(n);
  EXPECT_EQ(aclrtMemcpy(r.out.data(), n * 2, out.addr, n * 2, ACL_MEMCPY_DEVICE_TO_HOST),
            ACL_SUCCESS);
  if (ws) {
    EXPECT_EQ(aclrtFree(ws), ACL_SUCCESS);
  }
}

// The CANN program's sequence on the CUDA runtime: buffers, tensors, the two phases, sync, copy.
AclnnResult ifa_through_aclnn(const IfaProblem& p) {
  AclnnResult r;
  aclrtStream stream = nullptr;
  EXPECT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  const std::vector<int64_t> qshape = {p.B, 1, p.N * p.D};
  DeviceBuffer q(p.q.data(), p.q.size() * 2, qshape, ACL_FLOAT16);
  DeviceBuffer k(p.k.data(), p.k.size() * 2, p.kv_shape(), ACL_FLOAT16);
  DeviceBuffer v(p.v.data(), p.v.size() * 2, p.kv_shape(), ACL_FLOAT16);
  std::vector<op::fp16_t> poison(p.q.size(), op::fp16_t(-7.0f));
  DeviceBuffer out(poison.data(), poison.size() * 2, qshape, ACL_FLOAT16);
  std::unique_ptr<DeviceBuffer> table;
  if (p.block_size > 0)
    table = std::make_unique<DeviceBuffer>(p.table.data(), p.table.size() * 4,
                                           std::vector<int64_t>{p.B, p.max_blocks}, ACL_INT32);
  aclTensor* keys[] = {k.tensor};
  aclTensor* values[] = {v.tensor};
  aclTensorList* key_list = aclCreateTensorList(keys, 1);
  aclTensorList* value_list = aclCreateTensorList(values, 1);
  aclIntArray* lengths = aclCreateIntArray(p.lengths.data(), p.lengths.size());
  char layout[] = "BSH";
  uint64_t ws_size = 0;
  aclOpExecutor* executor = nullptr;
  r.phase1 = aclnnIncreFlashAttentionV3GetWorkspaceSize(
      q.tensor, key_list, value_list, nullptr, nullptr, lengths, nullptr, nullptr, nullptr,
      nullptr, nullptr, nullptr, nullptr, table ? table->tensor : nullptr, p.N,
      1.0 / std::sqrt(static_cast<double>(p.D)), layout, p.KVN, p.block_size, 1, out.tensor,
      &ws_size, &executor);
  finish_through_aclnn(r, ws_size, executor, aclnnIncreFlashAttentionV3, stream, out, p.q.size());
  aclDestroyTensorList(key_list);
  aclDestroyTensorList(value_list);
  aclDestroyIntArray(lengths);
  EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
  return r;
}

// Until src/backends/lists.cpp has the IFA CUDA entry, phase 1 says so (a clear status, no crash).
#define SKIP_WITHOUT_IFA_CUDA_ENTRY(r)                                                   \
  do {                                                                                   \
    if ((r).phase1 == ACLNN_ERR_RUNTIME_ERROR &&                                         \
        (r).message.find("no backend runs on cuda") != std::string::npos)                \
      GTEST_SKIP() << "the IFA CUDA backend entry is not in this build: " << (r).message; \
  } while (0)

// CPU and GPU results are each within the spec's fp16 bound of the exact value (rtol 2^-10 of
// max|V| + |want|), so they are within twice that of each other.
void expect_close(const std::vector<op::fp16_t>& got, const std::vector<op::fp16_t>& cpu,
                  double v_absmax) {
  ASSERT_EQ(got.size(), cpu.size());
  const double rtol = 1.0 / 1024;
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = static_cast<float>(got[i]), c = static_cast<float>(cpu[i]);
    if (!(std::fabs(g - c) <= 2 * rtol * (v_absmax + std::fabs(c))) && bad++ < 5)
      ADD_FAILURE() << "element " << i << ": cuda " << g << ", cpu " << c;
  }
  EXPECT_EQ(bad, 0);
}

TEST(CudaAclnnIfa, DenseGqaMatchesTheCpu) {
  REQUIRE_GPU();
  IfaProblem p;
  p.fill();
  const AclnnResult r = ifa_through_aclnn(p);
  SKIP_WITHOUT_IFA_CUDA_ENTRY(r);
  ASSERT_EQ(r.phase1, ACLNN_SUCCESS) << r.message;
  EXPECT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
  ASSERT_EQ(r.sync, ACL_SUCCESS) << r.message;
  expect_close(r.out, ifa_on_cpu(p), 2.0);
}

IfaProblem paged_problem(int32_t bad_id) {
  IfaProblem p;
  p.block_size = 16;
  p.max_blocks = (p.S + p.block_size - 1) / p.block_size;
  p.num_blocks = p.B * p.max_blocks;
  // Blocks in a scrambled order, so the table is really read.
  for (int64_t i = 0; i < p.num_blocks; ++i)
    p.table.push_back(static_cast<int32_t>((i * 7 + 3) % p.num_blocks));
  if (bad_id != 0) p.table[1] = bad_id;  // batch 0, slot 1: inside its 300 positions
  p.fill();
  return p;
}

TEST(CudaAclnnIfa, PagedMatchesTheCpu) {
  REQUIRE_GPU();
  const IfaProblem p = paged_problem(0);
  const AclnnResult r = ifa_through_aclnn(p);
  SKIP_WITHOUT_IFA_CUDA_ENTRY(r);
  ASSERT_EQ(r.phase1, ACLNN_SUCCESS) << r.message;
  ASSERT_EQ(r.sync, ACL_SUCCESS) << r.message;
  expect_close(r.out, ifa_on_cpu(p), 2.0);
}

// A bad block id in device memory: the aclnn call succeeds, the synchronisation reports 507015
// with the CPU backend's message, batch 0's rows are NaN and batch 1's are exact.
TEST(CudaAclnnIfa, BadBlockIdIs507015AtSynchronisation) {
  REQUIRE_GPU();
  const IfaProblem p = paged_problem(999);
  const AclnnResult r = ifa_through_aclnn(p);
  SKIP_WITHOUT_IFA_CUDA_ENTRY(r);
  ASSERT_EQ(r.phase1, ACLNN_SUCCESS) << r.message;
  EXPECT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
  EXPECT_EQ(r.sync, ACL_ERROR_RT_AICORE_EXCEPTION)
      << "the IFA CUDA run must leave its fault record (core/device_fault.hpp): " << r.message;
  EXPECT_NE(r.message.find("block_table[0][1] (999)"), std::string::npos) << r.message;
  const size_t row = static_cast<size_t>(p.N * p.D);
  for (size_t i = 0; i < row; ++i)
    ASSERT_TRUE(std::isnan(static_cast<float>(r.out[i]))) << "batch 0 element " << i;
  IfaProblem good = p;
  good.table[1] = 0;  // batch 1 reads nothing of batch 0's table row
  const auto cpu = ifa_on_cpu(good);
  expect_close(std::vector<op::fp16_t>(r.out.begin() + static_cast<std::ptrdiff_t>(row), r.out.end()),
               std::vector<op::fp16_t>(cpu.begin() + static_cast<std::ptrdiff_t>(row), cpu.end()),
               2.0);
}

// ---- SparseFlashAttention through the aclnn API on CUDA vs the CPU ------------------------------

// The shape of examples/sfa_v1.cpp: DeepSeek-V3.2-like sparse MLA decode, 2 query rows per batch,
// a paged cache (PA_BSND) with a scrambled table, token-wise indices, mode 3.
struct SfaProblem {
  static constexpr int64_t B = 2, S1 = 2, N1 = 8, D = 512, DR = 64, K = 16, BLOCKS = 6, BS = 16,
                           M = 3;
  std::vector<int32_t> kv_lens = {40, 25};
  std::vector<int32_t> table = {4, 0, 2, 5, 1, -1};
  std::vector<int32_t> indices;
  std::vector<op::fp16_t> q, qr, kv, kr;
  SfaProblem() {
    uint32_t state = 777;
    const auto next = [&state] {
      state = state * 1664525u + 1013904223u;
      return static_cast<float>((state >> 8) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
    };
    for (auto* v : {&q, &qr, &kv, &kr}) {
      const int64_t n = v == &q    ? B * S1 * N1 * D
                        : v == &qr ? B * S1 * N1 * DR
                        : v == &kv ? BLOCKS * BS * D
                                   : BLOCKS * BS * DR;
      v->resize(static_cast<size_t>(n));
      for (auto& x : *v) x = op::fp16_t(next());
    }
    indices.resize(static_cast<size_t>(B * S1 * K));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t i = 0; i < S1; ++i)
        for (int64_t k = 0; k < K; ++k)
          indices[static_cast<size_t>((b * S1 + i) * K + k)] =
              static_cast<int32_t>(kv_lens[static_cast<size_t>(b)] - 1 - 2 * k);
  }
  double scale() const { return 1.0 / std::sqrt(static_cast<double>(D + DR)); }
};

std::vector<op::fp16_t> sfa_on_cpu(SfaProblem p, Status want = Status::kSuccess) {
  using kvflash::DType;
  using kvflash::TensorView;
  std::vector<op::fp16_t> out(p.q.size());
  kvflash::SfaArgs a;
  a.query = TensorView::contiguous(p.q.data(), DType::kFloat16, {p.B, p.S1, p.N1, p.D});
  a.key = TensorView::contiguous(p.kv.data(), DType::kFloat16, {p.BLOCKS, p.BS, 1, p.D});
  a.sparse_indices = TensorView::contiguous(p.indices.data(), DType::kInt32, {p.B, p.S1, 1, p.K});
  a.block_table = TensorView::contiguous(p.table.data(), DType::kInt32, {p.B, p.M});
  a.actual_seq_lengths_kv = TensorView::contiguous(p.kv_lens.data(), DType::kInt32, {p.B});
  a.query_rope = TensorView::contiguous(p.qr.data(), DType::kFloat16, {p.B, p.S1, p.N1, p.DR});
  a.key_rope = TensorView::contiguous(p.kr.data(), DType::kFloat16, {p.BLOCKS, p.BS, 1, p.DR});
  a.scale_value = p.scale();
  a.layout_kv = "PA_BSND";
  a.attention_out = TensorView::contiguous(out.data(), DType::kFloat16, {p.B, p.S1, p.N1, p.D});
  EXPECT_EQ(kvflash::sparse_flash_attention(a), want) << kvflash::last_error_message();
  return out;
}

AclnnResult sfa_through_aclnn(const SfaProblem& p) {
  AclnnResult r;
  aclrtStream stream = nullptr;
  EXPECT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  const std::vector<int64_t> qshape = {p.B, p.S1, p.N1, p.D};
  DeviceBuffer q(p.q.data(), p.q.size() * 2, qshape, ACL_FLOAT16);
  DeviceBuffer qr(p.qr.data(), p.qr.size() * 2, {p.B, p.S1, p.N1, p.DR}, ACL_FLOAT16);
  DeviceBuffer kv(p.kv.data(), p.kv.size() * 2, {p.BLOCKS, p.BS, 1, p.D}, ACL_FLOAT16);
  DeviceBuffer kr(p.kr.data(), p.kr.size() * 2, {p.BLOCKS, p.BS, 1, p.DR}, ACL_FLOAT16);
  DeviceBuffer idx(p.indices.data(), p.indices.size() * 4, {p.B, p.S1, 1, p.K}, ACL_INT32);
  DeviceBuffer bt(p.table.data(), p.table.size() * 4, {p.B, p.M}, ACL_INT32);
  DeviceBuffer lens(p.kv_lens.data(), p.kv_lens.size() * 4, {p.B}, ACL_INT32);
  std::vector<op::fp16_t> poison(p.q.size(), op::fp16_t(-7.0f));
  DeviceBuffer out(poison.data(), poison.size() * 2, qshape, ACL_FLOAT16);
  char layout_q[] = "BSND";
  char layout_kv[] = "PA_BSND";
  uint64_t ws_size = 0;
  aclOpExecutor* executor = nullptr;
  r.phase1 = aclnnSparseFlashAttentionGetWorkspaceSize(
      q.tensor, kv.tensor, nullptr, idx.tensor, bt.tensor, nullptr, lens.tensor, qr.tensor,
      kr.tensor, p.scale(), 1, layout_q, layout_kv, 3, std::numeric_limits<int64_t>::max(),
      std::numeric_limits<int64_t>::max(), 2, false, out.tensor, nullptr, nullptr, &ws_size,
      &executor);
  finish_through_aclnn(r, ws_size, executor, aclnnSparseFlashAttention, stream, out, p.q.size());
  EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
  return r;
}

#define SKIP_WITHOUT_SFA_CUDA_ENTRY(r)                                                   \
  do {                                                                                   \
    if ((r).phase1 == ACLNN_ERR_RUNTIME_ERROR &&                                         \
        (r).message.find("no backend runs on cuda") != std::string::npos)                \
      GTEST_SKIP() << "the SFA CUDA backend entry is not in this build: " << (r).message; \
  } while (0)

TEST(CudaAclnnSfa, PagedMatchesTheCpu) {
  REQUIRE_GPU();
  const SfaProblem p;
  const AclnnResult r = sfa_through_aclnn(p);
  SKIP_WITHOUT_SFA_CUDA_ENTRY(r);
  ASSERT_EQ(r.phase1, ACLNN_SUCCESS) << r.message;
  EXPECT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
  ASSERT_EQ(r.sync, ACL_SUCCESS) << r.message;
  expect_close(r.out, sfa_on_cpu(p), 1.0);  // the key cache is the value: |V| <= 1
}

// A block id outside the cache in a block that batch 0 reads: 507015 at synchronisation.
TEST(CudaAclnnSfa, BadBlockIdIs507015AtSynchronisation) {
  REQUIRE_GPU();
  SfaProblem p;
  p.table[1] = 99;  // batch 0, slot 1: tokens 16..31, which its indices select
  const AclnnResult r = sfa_through_aclnn(p);
  SKIP_WITHOUT_SFA_CUDA_ENTRY(r);
  ASSERT_EQ(r.phase1, ACLNN_SUCCESS) << r.message;
  EXPECT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
  EXPECT_EQ(r.sync, ACL_ERROR_RT_AICORE_EXCEPTION)
      << "the SFA CUDA run must leave its fault record (core/device_fault.hpp): " << r.message;
  EXPECT_NE(r.message.find("block_table[0][1] (99) is used by query row"), std::string::npos)
      << r.message;
}

// The problems above are valid: their CPU sides run here, on any machine (so a GPU run fails only
// for what the GPU does).
TEST(CudaAclnnProblems, CpuSidesRun) {
  IfaProblem dense;
  dense.fill();
  for (const IfaProblem& p : {dense, paged_problem(0)}) {
    const auto out = ifa_on_cpu(p);
    ASSERT_EQ(out.size(), p.q.size());
    for (const auto& x : out) ASSERT_TRUE(std::isfinite(static_cast<float>(x)));
  }
  const auto sfa = sfa_on_cpu(SfaProblem{});
  for (const auto& x : sfa) ASSERT_TRUE(std::isfinite(static_cast<float>(x)));
  // The faults the GPU tests expect, with the messages they look for.
  (void)ifa_on_cpu(paged_problem(999), Status::kInvalid);
  EXPECT_NE(std::string(kvflash::last_error_message()).find("block_table[0][1] (999)"),
            std::string::npos)
      << kvflash::last_error_message();
  SfaProblem bad;
  bad.table[1] = 99;
  (void)sfa_on_cpu(bad, Status::kInvalid);
  EXPECT_NE(std::string(kvflash::last_error_message()).find("block_table[0][1]"),
            std::string::npos)
      << kvflash::last_error_message();
}

}  // namespace
