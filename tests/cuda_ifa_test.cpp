// IFA on the CUDA backend (issue 9): the shared case list (tests/support/ifa_case_list.cpp) copied
// to device memory, run through IfaPlan on CUDA tensors and compared element by element with the
// fp64 reference by the CPU tests' comparator; determinism (runs, batch composition); bad device
// data (block ids, left padding past the mask) -> NaN rows and the CPU's status and message;
// CUDA-graph capture and replay. Without a GPU the device tests skip with the reason
// (scripts/gpu-check.sh runs them where there is one); the plan-side checks run everywhere.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "cuda/device.hpp"
#include "ifa_reference.hpp"
#include "kvflash/ifa.hpp"
#include "support/compare.hpp"
#include "support/ifa_cases.hpp"
#include "support/ifa_slice.hpp"

#if defined(KVFLASH_HAVE_CUDA)
#include <cuda_runtime.h>

#include "cuda/ifa/ifa_cuda.hpp"
#endif

namespace kvflash::testing {
namespace {

#if defined(KVFLASH_HAVE_CUDA)

#define KVFLASH_REQUIRE_GPU()                                                \
  do {                                                                       \
    if (!cuda::device_present()) GTEST_SKIP() << cuda::device_info().reason; \
  } while (0)

#define CUDA_OK(expr) ASSERT_EQ((expr), cudaSuccess) << #expr

// Bytes from a view's data pointer to one past its last element (0 for an empty view).
size_t extent(const TensorView& v) {
  if (v.numel() == 0) return 0;
  int64_t last = v.offset;
  for (int i = 0; i < v.rank; ++i) last += (v.shape[i] - 1) * v.strides[i];
  return static_cast<size_t>(last + 1) * dtype_size(v.dtype);
}

// A device copy of a call's tensors: same dtypes, dims, strides and offsets, so the plan sees the
// same problem; every byte a view reaches (gaps and poison included) is copied.
class DeviceArgs {
 public:
  explicit DeviceArgs(const IfaArgs& host) : args_(host) {
    args_.query = copy(host.query);
    for (TensorView& t : args_.key) t = copy(t);
    for (TensorView& t : args_.value) t = copy(t);
    args_.attention_out = copy(host.attention_out);
    for (auto* t : {&args_.pse_shift, &args_.atten_mask, &args_.dequant_scale1,
                    &args_.quant_scale1, &args_.dequant_scale2, &args_.quant_scale2,
                    &args_.quant_offset2, &args_.antiquant_scale, &args_.antiquant_offset,
                    &args_.block_table, &args_.kv_padding_size, &args_.softmax_lse}) {
      if (*t) **t = copy(**t);
    }
  }
  ~DeviceArgs() {
    for (void* p : allocs_) cudaFree(p);
  }
  DeviceArgs(const DeviceArgs&) = delete;
  DeviceArgs& operator=(const DeviceArgs&) = delete;

  IfaArgs& args() { return args_; }

  // A fresh device buffer for view v (its extent), filled with 0xFF bytes (NaN / -1 patterns).
  TensorView fresh(TensorView v) {
    v.data = alloc(extent(v));
    v.device = {DeviceType::kCuda, 0};
    if (v.data != nullptr) cudaMemset(v.data, 0xFF, extent(v));
    return v;
  }

 private:
  void* alloc(size_t bytes) {
    if (bytes == 0) return nullptr;
    void* p = nullptr;
    if (cudaMalloc(&p, bytes) != cudaSuccess) return nullptr;
    allocs_.push_back(p);
    return p;
  }
  TensorView copy(TensorView v) {
    const size_t bytes = extent(v);
    void* d = alloc(bytes);
    if (d != nullptr && v.data != nullptr) cudaMemcpy(d, v.data, bytes, cudaMemcpyHostToDevice);
    v.data = d;
    v.device = {DeviceType::kCuda, 0};
    return v;
  }

  IfaArgs args_;
  std::vector<void*> allocs_;
};

std::vector<std::byte> download(const TensorView& v) {
  std::vector<std::byte> out(extent(v));
  if (!out.empty()) cudaMemcpy(out.data(), v.data, out.size(), cudaMemcpyDeviceToHost);
  return out;
}

// Copies a device view's bytes into the host view with the same layout.
void download_into(const TensorView& dev, const TensorView& host) {
  const std::vector<std::byte> b = download(dev);
  if (!b.empty()) std::memcpy(host.data, b.data(), b.size());
}

// A plan, a device workspace and a stream for one problem.
class DeviceRun {
 public:
  explicit DeviceRun(const IfaArgs& args) {
    status_ = IfaPlan::create(args, &plan_);
    if (status_ != Status::kSuccess) return;
    ws_size_ = plan_->workspace_size();
    if (cudaMalloc(&ws_, ws_size_) != cudaSuccess || cudaStreamCreate(&stream_) != cudaSuccess) {
      status_ = Status::kRuntime;
    }
  }
  ~DeviceRun() {
    if (ws_ != nullptr) cudaFree(ws_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }
  DeviceRun(const DeviceRun&) = delete;
  DeviceRun& operator=(const DeviceRun&) = delete;

  Status created() const { return status_; }
  /// Queues the run; returns its status (launch errors only).
  Status queue(const IfaArgs& args) { return plan_->run(args, ws_, ws_size_, stream_); }
  /// Queues the run and returns the device-data status read back after the stream ran it.
  Status run(const IfaArgs& args) {
    const Status s = queue(args);
    if (s != Status::kSuccess) return s;
    return plan_->status(ws_, stream_);
  }
  /// The device-data status of the last queued run (IfaPlan::status).
  Status status() const { return plan_->status(ws_, stream_); }
  cudaStream_t stream() const { return stream_; }

 private:
  Status status_ = Status::kRuntime;
  std::unique_ptr<IfaPlan> plan_;
  void* ws_ = nullptr;
  size_t ws_size_ = 0;
  cudaStream_t stream_ = nullptr;
};

// ---- the case list vs the fp64 reference -------------------------------------------------------

class CudaIfaCaseTest : public ::testing::TestWithParam<IfaCase> {};

TEST_P(CudaIfaCaseTest, MatchesReference) {
  KVFLASH_REQUIRE_GPU();
  const IfaCase& c = GetParam();
  IfaCaseData data(c);
  const reference::IfaReference ref = reference::ifa_reference(data.args());
  DeviceArgs dev(data.args());
  DeviceRun run(dev.args());
  ASSERT_EQ(run.created(), Status::kSuccess) << last_error_message();
  ASSERT_EQ(run.run(dev.args()), Status::kSuccess) << c.name() << ": " << last_error_message();
  data.poison_outputs();
  download_into(dev.args().attention_out, data.args().attention_out);
  if (data.args().softmax_lse) download_into(*dev.args().softmax_lse, *data.args().softmax_lse);
  IfaCompareOptions options;
  options.allow_mostly_empty = c.expect_mostly_empty;
  ASSERT_TRUE(compare_ifa_output(c.name(), data.args(), ref, options));
}

INSTANTIATE_TEST_SUITE_P(Cases, CudaIfaCaseTest, ::testing::ValuesIn(ifa_cases_for_run()),
                         [](const ::testing::TestParamInfo<IfaCase>& info) {
                           return info.param.test_name();
                         });

// ---- determinism -------------------------------------------------------------------------------

std::vector<IfaCase> determinism_cases() {
  std::vector<IfaCase> picked;
  for (const IfaCase& c : ifa_cases_for_run()) {
    if (c.batch > 1 || c.max_len() >= 1000 || c.paged || c.list_mode) picked.push_back(c);
  }
  return picked;
}

class CudaIfaDeterminismTest : public ::testing::TestWithParam<IfaCase> {};

// Same bits on every run, and each sequence alone gives the bits it has in the batch.
TEST_P(CudaIfaDeterminismTest, BitsIndependentOfRunsAndBatch) {
  KVFLASH_REQUIRE_GPU();
  const IfaCase& c = GetParam();
  IfaCaseData data(c);
  DeviceArgs dev(data.args());
  DeviceRun run(dev.args());
  ASSERT_EQ(run.created(), Status::kSuccess) << last_error_message();
  ASSERT_EQ(run.run(dev.args()), Status::kSuccess) << last_error_message();
  const std::vector<std::byte> out = download(dev.args().attention_out);
  const std::vector<std::byte> lse =
      dev.args().softmax_lse ? download(*dev.args().softmax_lse) : std::vector<std::byte>{};
  for (int rep = 0; rep < 2; ++rep) {
    cudaMemset(dev.args().attention_out.data, 0xFF, extent(dev.args().attention_out));
    ASSERT_EQ(run.run(dev.args()), Status::kSuccess) << last_error_message();
    ASSERT_TRUE(download(dev.args().attention_out) == out) << c.name() << ": rerun " << rep;
    if (!lse.empty()) {
      ASSERT_TRUE(download(*dev.args().softmax_lse) == lse) << c.name();
    }
  }
  // The output rows of batch b: attention_out is batch-major (contiguous, dim 0 = batch).
  const TensorView& o = dev.args().attention_out;
  const size_t per_batch = static_cast<size_t>(o.strides[0]) * dtype_size(o.dtype);
  for (int64_t b = 0; b < c.batch; ++b) {
    IfaArgs x = batch_inputs(dev.args(), b);
    x.attention_out = dev.fresh(x.attention_out);
    if (x.softmax_lse) x.softmax_lse = dev.fresh(*x.softmax_lse);
    DeviceRun alone(x);
    ASSERT_EQ(alone.created(), Status::kSuccess) << last_error_message();
    ASSERT_EQ(alone.run(x), Status::kSuccess) << last_error_message();
    // Batch b's bytes: from its element 0 (offset + b * stride 0) for one batch's extent.
    const size_t skip = static_cast<size_t>(o.offset) * dtype_size(o.dtype);
    const std::vector<std::byte> got = download(x.attention_out);
    const size_t at = skip + static_cast<size_t>(b) * per_batch;
    ASSERT_LE(at + got.size() - skip, out.size());
    ASSERT_EQ(std::memcmp(got.data() + skip, out.data() + at, got.size() - skip), 0)
        << c.name() << ": batch " << b << " alone differs from batch " << b << " in the batch";
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, CudaIfaDeterminismTest, ::testing::ValuesIn(determinism_cases()),
                         [](const ::testing::TestParamInfo<IfaCase>& info) {
                           return info.param.test_name();
                         });

// ---- bad device data ---------------------------------------------------------------------------

IfaCase paged_case() {
  IfaCase c;
  c.layout = IfaLayout::kBsh;
  c.batch = 3;
  c.num_heads = 8;
  c.num_kv_heads = 2;
  c.head_dim = 64;
  c.kv_lens = {40, 1100, 70};
  c.paged = true;
  c.block_size = 16;
  c.lse = true;
  return c;
}

bool nan16(const std::byte* p, DType dtype) {
  uint16_t h;
  std::memcpy(&h, p, sizeof(h));
  return dtype == DType::kFloat16 ? (h & 0x7C00) == 0x7C00 && (h & 0x03FF) != 0
                                  : (h & 0x7F80) == 0x7F80 && (h & 0x007F) != 0;
}

// The CPU backend's status message for the same host data.
std::string cpu_message(const IfaArgs& host) {
  std::unique_ptr<IfaPlan> plan;
  if (IfaPlan::create(host, &plan) != Status::kSuccess) return "create failed";
  std::vector<std::byte> ws(plan->workspace_size());
  if (plan->run(host, ws.data(), ws.size()) != Status::kInvalid) return "the CPU run did not fail";
  return last_error_message();
}

// A referenced block id outside the cache: the batch's rows NaN and LSE NaN, every other batch
// bit-identical to the good run, 161002 with the CPU's message (the batch's lowest bad slot, found
// by the chunk CTAs of a 3-chunk sequence, whichever chunk runs first).
TEST(CudaIfaFault, BadBlockIdFaultsItsBatchWithTheCpusMessage) {
  KVFLASH_REQUIRE_GPU();
  IfaCaseData data(paged_case());
  DeviceArgs dev(data.args());
  DeviceRun run(dev.args());
  ASSERT_EQ(run.created(), Status::kSuccess) << last_error_message();
  ASSERT_EQ(run.run(dev.args()), Status::kSuccess) << last_error_message();
  const std::vector<std::byte> good = download(dev.args().attention_out);
  const std::vector<std::byte> good_lse = download(*dev.args().softmax_lse);
  const TensorView& t = *data.args().block_table;
  for (const int64_t slot : {int64_t{5}, int64_t{40}}) {  // chunk 0 and chunk 1 of batch 1
    for (const int32_t id : {int32_t{-1}, static_cast<int32_t>(data.num_blocks())}) {
      int32_t* host_id = static_cast<int32_t*>(t.data) + t.offset + 1 * t.strides[0] +
                         slot * t.strides[1];
      const int32_t saved = *host_id;
      *host_id = id;
      // A second bad id later in the same batch: the message names the first.
      int32_t* later = static_cast<int32_t*>(t.data) + t.offset + t.strides[0] + 60 * t.strides[1];
      const int32_t saved_later = *later;
      *later = -9;
      const std::string want = cpu_message(data.args());
      const TensorView& dt = *dev.args().block_table;
      CUDA_OK(cudaMemcpy(dt.data, t.data, extent(t), cudaMemcpyHostToDevice));
      cudaMemset(dev.args().attention_out.data, 0, extent(dev.args().attention_out));
      EXPECT_EQ(run.run(dev.args()), Status::kInvalid);
      EXPECT_EQ(std::string(last_error_message()), want);
      const std::vector<std::byte> out = download(dev.args().attention_out);
      const std::vector<std::byte> lse = download(*dev.args().softmax_lse);
      const TensorView& o = data.args().attention_out;
      const size_t es = dtype_size(o.dtype), row = static_cast<size_t>(o.strides[0]) * es;
      for (int64_t b = 0; b < 3; ++b) {
        for (size_t i = 0; i < row; i += es) {
          const size_t at = static_cast<size_t>(b) * row + i;
          if (b == 1) {
            ASSERT_TRUE(nan16(&out[at], o.dtype)) << "slot " << slot << " element " << i / es;
          } else {
            ASSERT_EQ(std::memcmp(&out[at], &good[at], es), 0) << "batch " << b;
          }
        }
        for (int64_t h = 0; h < 8; ++h) {
          float x;
          std::memcpy(&x, &lse[static_cast<size_t>(b * 8 + h) * 4], 4);
          if (b == 1) {
            EXPECT_TRUE(std::isnan(x));
          } else {
            EXPECT_EQ(std::memcmp(&x, &good_lse[static_cast<size_t>(b * 8 + h) * 4], 4), 0);
          }
        }
      }
      *host_id = saved;
      *later = saved_later;
      CUDA_OK(cudaMemcpy(dt.data, t.data, extent(t), cudaMemcpyHostToDevice));
    }
  }
  // Good data again: the record of the last run is cleared.
  EXPECT_EQ(run.run(dev.args()), Status::kSuccess) << last_error_message();
  EXPECT_TRUE(download(dev.args().attention_out) == good);
}

// Left padding (device data) that moves the attended range past a mask narrower than S: every
// batch faults (NaN), with the CPU's message.
TEST(CudaIfaFault, LeftPaddingPastTheMaskFaults) {
  KVFLASH_REQUIRE_GPU();
  IfaCase c;
  c.layout = IfaLayout::kBsh;
  c.batch = 2;
  c.num_heads = 4;
  c.num_kv_heads = 4;
  c.head_dim = 32;
  c.kv_lens = {20, 20};
  c.kv_slack = 30;
  c.kv_padding = 0;
  c.mask = MaskShape::kBS;
  IfaCaseData data(c);
  IfaArgs& host = data.mutable_args();
  host.atten_mask->shape[host.atten_mask->rank - 1] = 22;  // covers the lengths, not S - pad
  const std::string want = cpu_message(host);
  ASSERT_NE(want.find("beyond the atten_mask's last dim (22)"), std::string::npos) << want;
  DeviceArgs dev(host);
  DeviceRun run(dev.args());
  ASSERT_EQ(run.created(), Status::kSuccess) << last_error_message();
  EXPECT_EQ(run.run(dev.args()), Status::kInvalid);
  EXPECT_EQ(std::string(last_error_message()), want);
  const std::vector<std::byte> out = download(dev.args().attention_out);
  for (size_t i = 0; i < out.size(); i += 2) ASSERT_TRUE(nan16(&out[i], host.attention_out.dtype));
}

// ---- CUDA graphs -------------------------------------------------------------------------------

// A run captured in a graph and replayed gives the direct run's bits: no host synchronisation or
// allocation inside run, a fixed launch configuration.
TEST(CudaIfaGraph, CaptureAndReplayMatchDirectRun) {
  KVFLASH_REQUIRE_GPU();
  IfaCase c = paged_case();
  c.kv_lens = {3000, 1, 700};
  IfaCaseData data(c);
  DeviceArgs dev(data.args());
  DeviceRun run(dev.args());
  ASSERT_EQ(run.created(), Status::kSuccess) << last_error_message();
  ASSERT_EQ(run.run(dev.args()), Status::kSuccess) << last_error_message();
  const std::vector<std::byte> direct = download(dev.args().attention_out);
  cudaMemset(dev.args().attention_out.data, 0xFF, extent(dev.args().attention_out));
  CUDA_OK(cudaStreamSynchronize(run.stream()));
  cudaGraph_t graph = nullptr;
  CUDA_OK(cudaStreamBeginCapture(run.stream(), cudaStreamCaptureModeThreadLocal));
  const Status queued = run.queue(dev.args());
  CUDA_OK(cudaStreamEndCapture(run.stream(), &graph));
  ASSERT_EQ(queued, Status::kSuccess) << last_error_message();
  cudaGraphExec_t exec = nullptr;
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  for (int rep = 0; rep < 3; ++rep) {
    cudaMemset(dev.args().attention_out.data, 0xFF, extent(dev.args().attention_out));
    CUDA_OK(cudaGraphLaunch(exec, run.stream()));
    EXPECT_EQ(run.status(), Status::kSuccess);
    ASSERT_TRUE(download(dev.args().attention_out) == direct) << "replay " << rep;
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

#endif  // KVFLASH_HAVE_CUDA

// Runs on every machine: CUDA tensors plan (with the CUDA backend in the build) and the run's
// host-side checks come before any device work.
TEST(CudaIfaPlanOnly, RunChecksComeBeforeTheDevice) {
  IfaCaseData data(IfaCase{});
  IfaArgs a = data.args();
  for (TensorView* t : {&a.query, &a.key[0], &a.value[0], &a.attention_out}) {
    t->device = {DeviceType::kCuda, 0};
  }
  std::unique_ptr<IfaPlan> plan;
  const Status created = IfaPlan::create(a, &plan);
#if defined(KVFLASH_HAVE_CUDA)
  ASSERT_EQ(created, Status::kSuccess) << last_error_message();
  std::vector<std::byte> ws(plan->workspace_size());
  EXPECT_EQ(plan->run(a, ws.data(), ws.size() - 1), Status::kInvalid);
  EXPECT_NE(std::string(last_error_message()).find("smaller than required"), std::string::npos)
      << last_error_message();
#else
  EXPECT_EQ(created, Status::kRuntime);
#endif
}

}  // namespace
}  // namespace kvflash::testing
