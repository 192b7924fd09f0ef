// SFA on the CUDA backend vs the fp64 oracle, element by element with the CPU's comparator: the
// shared case list (tests/support/sfa_cases.cpp) through both kernels (mma.sync where the tensors
// allow it, and the SIMT fallback forced), bad device data (bad block ids, bad lengths: the CPU's
// NaN rows and, through SfaPlan::status, its status and message), determinism, and
// CUDA-graph capture / replay. Every test skips without a usable GPU (printing why).
//
// STATUS: compiled; never run on a GPU (none was available when it was written).
#include <gtest/gtest.h>

#include "cuda/device.hpp"

#if defined(KVFLASH_HAVE_CUDA)
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cuda/sfa/sfa_cuda.hpp"
#include "hooks/sfa_path.hpp"
#include "kvflash/sfa.hpp"
#include "ops/sfa/sfa_plan_impl.hpp"
#include "ops/sfa/sfa_problem.hpp"
#include "sfa_reference.hpp"
#include "support/sfa_cases.hpp"
#include "support/sfa_compare.hpp"

namespace kvflash::testing {
namespace {

using cuda::SfaPath;

#define SKIP_WITHOUT_GPU()                                                       \
  do {                                                                           \
    if (!cuda::device_present()) GTEST_SKIP() << cuda::device_info().reason;     \
  } while (0)

#define CUDA_OK(expr) ASSERT_EQ((expr), cudaSuccess) << #expr

// Bytes a strided view spans from its data pointer (as SfaCaseData::alloc lays it out).
size_t span_bytes(const TensorView& v) {
  int64_t elems = v.offset + 1;
  for (int i = 0; i < v.rank; ++i) elems += std::max<int64_t>(v.shape[i] - 1, 0) * v.strides[i];
  return static_cast<size_t>(elems) * dtype_size(v.dtype);
}

// A device mirror of an SfaCaseData's tensors (same offsets and strides) and its SfaArgs.
class DeviceCase {
 public:
  explicit DeviceCase(const SfaArgs& host) : host_(host), args_(host) {
    mirror(host_.query, &args_.query);
    mirror(host_.key, &args_.key);
    mirror(host_.sparse_indices, &args_.sparse_indices);
    mirror(host_.query_rope, &args_.query_rope);
    mirror(host_.key_rope, &args_.key_rope);
    mirror(host_.attention_out, &args_.attention_out);
    mirror_opt(host_.value, &args_.value);
    mirror_opt(host_.block_table, &args_.block_table);
    mirror_opt(host_.actual_seq_lengths_query, &args_.actual_seq_lengths_query);
    mirror_opt(host_.actual_seq_lengths_kv, &args_.actual_seq_lengths_kv);
    mirror_opt(host_.sinks, &args_.sinks);
    mirror_opt(host_.softmax_max, &args_.softmax_max);
    mirror_opt(host_.softmax_sum, &args_.softmax_sum);
  }
  ~DeviceCase() {
    for (void* p : allocs_) (void)cudaFree(p);
  }
  DeviceCase(const DeviceCase&) = delete;
  DeviceCase& operator=(const DeviceCase&) = delete;

  bool ok() const { return ok_; }
  const SfaArgs& args() const { return args_; }
  /// Copies the device outputs into the host case's buffers (for the comparator).
  bool outputs_to_host() const {
    bool ok = back(args_.attention_out, host_.attention_out);
    if (host_.softmax_max) ok = ok && back(*args_.softmax_max, *host_.softmax_max);
    if (host_.softmax_sum) ok = ok && back(*args_.softmax_sum, *host_.softmax_sum);
    return ok;
  }
  /// Re-uploads one input after the test changed its host copy.
  bool upload(const TensorView& dev, const TensorView& host) const {
    return cudaMemcpy(dev.data, host.data, span_bytes(host), cudaMemcpyHostToDevice) == cudaSuccess;
  }
  /// Fills the device outputs with 0xFF bytes (NaN in every float format).
  bool poison() const {
    bool ok = cudaMemset(args_.attention_out.data, 0xFF, span_bytes(args_.attention_out)) ==
              cudaSuccess;
    if (args_.softmax_max) {
      ok = ok && cudaMemset(args_.softmax_max->data, 0xFF, span_bytes(*args_.softmax_max)) ==
                     cudaSuccess;
      ok = ok && cudaMemset(args_.softmax_sum->data, 0xFF, span_bytes(*args_.softmax_sum)) ==
                     cudaSuccess;
    }
    return ok;
  }

 private:
  void mirror(const TensorView& h, TensorView* d) {
    const size_t bytes = span_bytes(h);
    void* p = nullptr;
    if (cudaMalloc(&p, std::max<size_t>(bytes, 16)) != cudaSuccess ||
        cudaMemcpy(p, h.data, bytes, cudaMemcpyHostToDevice) != cudaSuccess) {
      ok_ = false;
      return;
    }
    allocs_.push_back(p);
    d->data = p;
    d->device = {DeviceType::kCuda, 0};
  }
  void mirror_opt(const std::optional<TensorView>& h, std::optional<TensorView>* d) {
    if (h) mirror(*h, &d->value());
  }
  static bool back(const TensorView& dev, const TensorView& host) {
    return cudaMemcpy(host.data, dev.data, span_bytes(host), cudaMemcpyDeviceToHost) ==
           cudaSuccess;
  }

  SfaArgs host_;
  SfaArgs args_;
  std::vector<void*> allocs_;
  bool ok_ = true;
};

struct DeviceBuffer {
  void* p = nullptr;
  explicit DeviceBuffer(size_t n) {
    if (cudaMalloc(&p, std::max<size_t>(n, 16)) != cudaSuccess) p = nullptr;
  }
  ~DeviceBuffer() { (void)cudaFree(p); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

// Restores the automatic kernel choice when a test ends.
struct ForceSimt {
  explicit ForceSimt(bool on) { cuda::set_sfa_force_simt(on); }
  ~ForceSimt() { cuda::set_sfa_force_simt(false); }
};

// Plans and runs the device case on `stream`, then asks for the device-side fault status.
Status run_on_device(const DeviceCase& dc, cudaStream_t stream, SfaPath* path = nullptr) {
  std::unique_ptr<SfaPlan> plan;
  if (Status s = SfaPlan::create(dc.args(), &plan); s != Status::kSuccess) return s;
  if (path != nullptr) {
    *path = cuda::sfa_path_for(SfaPlanAccess::impl(*plan).problem, dc.args()).path;
  }
  DeviceBuffer ws(plan->workspace_size());
  if (ws.p == nullptr) return Status::kRuntime;
  if (Status s = plan->run(dc.args(), ws.p, plan->workspace_size(), stream); s != Status::kSuccess)
    return s;
  return plan->status(ws.p, stream);
}

class CudaSfaCaseTest : public ::testing::TestWithParam<SfaCase> {};

// Both kernels: the automatic choice (mma.sync for contiguous, aligned rows) and SIMT forced.
TEST_P(CudaSfaCaseTest, MatchesReferenceOnBothKernels) {
  SKIP_WITHOUT_GPU();
  const SfaCase& c = GetParam();
  SfaCaseData data(c);
  const reference::SfaReference ref = reference::sfa_reference(data.args());
  for (bool simt : {false, true}) {
    ForceSimt force(simt);
    data.poison_outputs();
    DeviceCase dc(data.args());
    ASSERT_TRUE(dc.ok());
    ASSERT_TRUE(dc.poison());
    SfaPath path = SfaPath::kSimt;
    ASSERT_EQ(run_on_device(dc, nullptr, &path), Status::kSuccess) << last_error_message();
    if (simt) {
      EXPECT_EQ(path, SfaPath::kSimt);
    }
    SCOPED_TRACE(path == SfaPath::kMma ? "mma.sync" : "simt");
    ASSERT_TRUE(dc.outputs_to_host());
    EXPECT_TRUE(compare_sfa_output(c.name(), data.args(), ref, c.expect_mostly_empty));
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, CudaSfaCaseTest, ::testing::ValuesIn(sfa_cases_for_run()),
                         [](const ::testing::TestParamInfo<SfaCase>& info) {
                           return std::to_string(info.index) + "_" + info.param.test_name();
                         });

// A decode case at DeepSeek-V3.2's head count that the MMA path must take (128 heads: two CTAs of
// 64 per row), with sinks and softmax outputs.
SfaCase mla_case(DType dtype) {
  SfaCase c;
  c.kv_layout = SfaKvLayout::kPaBsnd;
  c.dtype = dtype;
  c.num_heads = 128;
  c.sparse_size = 256;
  c.q_lens = {1, 2};
  c.kv_lens = {300, 700};
  c.block_size = 64;
  c.sinks = true;
  c.lse = true;
  c.indices = SfaIndexPattern::kMixed;
  return c;
}

TEST(CudaSfa, MmaPathTakesAlignedMlaShapes) {
  SKIP_WITHOUT_GPU();
  for (DType dt : {DType::kBFloat16, DType::kFloat16}) {
    const SfaCase c = mla_case(dt);
    SfaCaseData data(c);
    const reference::SfaReference ref = reference::sfa_reference(data.args());
    DeviceCase dc(data.args());
    ASSERT_TRUE(dc.ok());
    SfaPath path = SfaPath::kSimt;
    ASSERT_EQ(run_on_device(dc, nullptr, &path), Status::kSuccess) << last_error_message();
    const cuda::DeviceInfo& info = cuda::device_info();
    if (info.major >= 8) {
      EXPECT_EQ(path, SfaPath::kMma) << info.name;
    }
    ASSERT_TRUE(dc.outputs_to_host());
    EXPECT_TRUE(compare_sfa_output(c.name(), data.args(), ref));
  }
}

// Two runs, and the same run after unrelated work on the device: the same bits.
TEST(CudaSfa, Deterministic) {
  SKIP_WITHOUT_GPU();
  for (bool simt : {false, true}) {
    ForceSimt force(simt);
    SfaCaseData data(mla_case(DType::kBFloat16));
    DeviceCase dc(data.args());
    ASSERT_TRUE(dc.ok());
    std::vector<std::byte> first;
    for (int i = 0; i < 3; ++i) {
      ASSERT_TRUE(dc.poison());
      ASSERT_EQ(run_on_device(dc, nullptr), Status::kSuccess) << last_error_message();
      ASSERT_TRUE(dc.outputs_to_host());
      if (i == 0) {
        first = data.output_bytes();
      } else {
        ASSERT_EQ(data.output_bytes(), first) << (simt ? "simt" : "mma") << " run " << i;
      }
    }
  }
}

// Capture one run into a CUDA graph, replay it twice into poisoned outputs: the bits of a direct
// run each time (nothing in run() synchronises or reads device data on the host).
TEST(CudaSfa, GraphCaptureAndReplay) {
  SKIP_WITHOUT_GPU();
  SfaCaseData data(mla_case(DType::kBFloat16));
  DeviceCase dc(data.args());
  ASSERT_TRUE(dc.ok());
  std::unique_ptr<SfaPlan> plan;
  ASSERT_EQ(SfaPlan::create(dc.args(), &plan), Status::kSuccess) << last_error_message();
  DeviceBuffer ws(plan->workspace_size());
  ASSERT_NE(ws.p, nullptr);
  cudaStream_t stream = nullptr;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  ASSERT_EQ(plan->run(dc.args(), ws.p, plan->workspace_size(), stream), Status::kSuccess);
  CUDA_OK(cudaStreamSynchronize(stream));
  ASSERT_TRUE(dc.outputs_to_host());
  const std::vector<std::byte> direct = data.output_bytes();

  cudaGraph_t graph = nullptr;
  CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  const Status captured = plan->run(dc.args(), ws.p, plan->workspace_size(), stream);
  CUDA_OK(cudaStreamEndCapture(stream, &graph));
  ASSERT_EQ(captured, Status::kSuccess) << last_error_message();
  cudaGraphExec_t exec = nullptr;
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(dc.poison());
    CUDA_OK(cudaGraphLaunch(exec, stream));
    CUDA_OK(cudaStreamSynchronize(stream));
    ASSERT_TRUE(dc.outputs_to_host());
    EXPECT_EQ(data.output_bytes(), direct) << "replay " << i;
  }
  EXPECT_EQ(plan->status(ws.p, stream), Status::kSuccess);
  (void)cudaGraphExecDestroy(exec);
  (void)cudaGraphDestroy(graph);
  (void)cudaStreamDestroy(stream);
}

// PA_BSND case with two batches; batch 1's rows select from its block slot 0.
SfaCase fault_case() {
  SfaCase c;
  c.kv_layout = SfaKvLayout::kPaBsnd;
  c.dtype = DType::kFloat16;
  c.num_heads = 32;
  c.sparse_size = 64;
  c.q_lens = {2, 2};
  c.kv_lens = {40, 20};
  c.block_size = 16;
  c.indices = SfaIndexPattern::kClean;
  c.lse = true;
  return c;
}

bool is_nan16(uint16_t x) { return (x & 0x7c00) == 0x7c00 && (x & 0x3ff) != 0; }

// A bad block id used by a selected range: that batch's rows NaN, the others bit-identical to a
// clean run, and SfaPlan::status = the CPU's status and message, on both kernels.
TEST(CudaSfa, BadBlockIdFaultsItsRowsOnly) {
  SKIP_WITHOUT_GPU();
  for (bool simt : {false, true}) {
    ForceSimt force(simt);
    SfaCaseData data(fault_case());
    const SfaArgs& host = data.args();
    DeviceCase dc(host);
    ASSERT_TRUE(dc.ok());
    ASSERT_EQ(run_on_device(dc, nullptr), Status::kSuccess) << last_error_message();
    ASSERT_TRUE(dc.outputs_to_host());
    const std::vector<std::byte> good = data.output_bytes();
    int32_t* e = data.block_table_entry(1, 0);
    const int32_t saved = *e;
    for (int32_t bad : {-1, static_cast<int32_t>(data.num_blocks())}) {
      *e = bad;
      // The CPU's verdict on the same data.
      data.poison_outputs();
      std::unique_ptr<SfaPlan> cpu_plan;
      ASSERT_EQ(SfaPlan::create(host, &cpu_plan), Status::kSuccess);
      std::vector<std::byte> cpu_ws(cpu_plan->workspace_size());
      ASSERT_EQ(cpu_plan->run(host, cpu_ws.data(), cpu_ws.size()), Status::kInvalid);
      const std::string cpu_message = last_error_message();
      const std::vector<std::byte> cpu_out = data.output_bytes();

      ASSERT_TRUE(dc.upload(*dc.args().block_table, *host.block_table));
      ASSERT_TRUE(dc.poison());
      EXPECT_EQ(run_on_device(dc, nullptr), Status::kInvalid);
      EXPECT_EQ(std::string(last_error_message()), cpu_message);
      EXPECT_NE(cpu_message.find("block_table[1][0]"), std::string::npos) << cpu_message;
      ASSERT_TRUE(dc.outputs_to_host());
      const auto* out = static_cast<const uint16_t*>(host.attention_out.data);
      const auto* ref = reinterpret_cast<const uint16_t*>(good.data());
      const int64_t rows = host.attention_out.shape[0] * host.attention_out.shape[1];
      const int64_t row_elems = host.attention_out.numel() / rows;
      const int64_t s1 = host.attention_out.shape[1];
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t i = 0; i < row_elems; ++i) {
          const uint16_t x = out[r * row_elems + i];
          if (r / s1 == 1) {
            ASSERT_TRUE(is_nan16(x)) << "row " << r << " element " << i;
          } else {
            ASSERT_EQ(x, ref[r * row_elems + i]) << "row " << r << " element " << i;
          }
        }
      }
      // Which rows are NaN matches the CPU exactly.
      const auto* cpu16 = reinterpret_cast<const uint16_t*>(cpu_out.data());
      for (int64_t r = 0; r < rows; ++r) {
        EXPECT_EQ(is_nan16(out[r * row_elems]), is_nan16(cpu16[r * row_elems])) << "row " << r;
      }
    }
    *e = saved;
    ASSERT_TRUE(dc.upload(*dc.args().block_table, *host.block_table));
    ASSERT_EQ(run_on_device(dc, nullptr), Status::kSuccess) << last_error_message();
    ASSERT_TRUE(dc.outputs_to_host());
    EXPECT_EQ(data.output_bytes(), good);
  }
}

// A bad actual_seq_lengths_kv entry: every output NaN, the CPU's status and message.
TEST(CudaSfa, BadLengthsMakeEverythingNan) {
  SKIP_WITHOUT_GPU();
  for (bool simt : {false, true}) {
    ForceSimt force(simt);
    SfaCaseData data(fault_case());
    const SfaArgs& host = data.args();
    const TensorView& lk = *host.actual_seq_lengths_kv;
    auto* first = static_cast<int32_t*>(lk.data) + lk.offset;
    *first = -1;
    std::unique_ptr<SfaPlan> cpu_plan;
    ASSERT_EQ(SfaPlan::create(host, &cpu_plan), Status::kSuccess);
    std::vector<std::byte> cpu_ws(cpu_plan->workspace_size());
    const Status cpu_status = cpu_plan->run(host, cpu_ws.data(), cpu_ws.size());
    ASSERT_NE(cpu_status, Status::kSuccess);
    const std::string cpu_message = last_error_message();

    DeviceCase dc(host);
    ASSERT_TRUE(dc.ok());
    ASSERT_TRUE(dc.poison());
    EXPECT_EQ(run_on_device(dc, nullptr), cpu_status);
    EXPECT_EQ(std::string(last_error_message()), cpu_message);
    data.poison_outputs();
    std::memset(host.attention_out.data, 0, span_bytes(host.attention_out));
    ASSERT_TRUE(dc.outputs_to_host());
    const auto* out = static_cast<const uint16_t*>(host.attention_out.data);
    for (int64_t i = 0; i < host.attention_out.numel(); ++i) ASSERT_TRUE(is_nan16(out[i])) << i;
  }
}

}  // namespace
}  // namespace kvflash::testing
#else   // KVFLASH_HAVE_CUDA

TEST(CudaSfa, BuiltWithoutCuda) {
  GTEST_SKIP() << "this build has no CUDA backend (KVFLASH_CUDA=OFF or no nvcc)";
}

#endif  // KVFLASH_HAVE_CUDA
