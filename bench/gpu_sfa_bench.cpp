// SFA decode on the CUDA backend at DeepSeek-V3.2 shapes (issue 10): 128 query heads (the full
// model) and 32 / 16-head tensor-parallel shards, 2048 selected tokens per query row, batch 1..128,
// KV 4k..128k, sparse block sizes 1 and 64 (64: 32 index entries of 64 tokens, the same 2048
// tokens), paged KV with blocks of 64 and 128, bf16. Each shape: one SfaPlan on device tensors,
// 3 warm-up runs, then the median of `iters` runs timed with CUDA events.
//
// Prints one JSON object per line: the shape, the kernel (mma / simt), the median time, TFLOP/s
// (2 * 576 + 2 * 512 flops per head and selected token) and the gathered bytes per second (576
// 16-bit values per row and selected token, counted once per query row; 128-head rows read them
// once per 64-head CTA, the second read mostly from L2). With --peak-tflops / --read-gbps (the
// measured bf16 GEMM peak and read ceiling) it adds the fractions the targets use (>= 50%
// of peak at 128 heads; >= 80% of the read ceiling at 16 heads). Exits 2 (with the reason)
// without a GPU. STATUS: compiled, never run.
//
//     kvflash_gpu_sfa_bench [--iters N] [--quick] [--simt] [--peak-tflops X] [--read-gbps Y]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "cuda/device.hpp"
#include "cuda/sfa/sfa_cuda.hpp"
#include "hooks/sfa_path.hpp"
#include "kvflash/sfa.hpp"
#include "ops/sfa/sfa_plan_impl.hpp"
#include "ops/sfa/sfa_problem.hpp"

namespace {

using namespace kvflash;

constexpr int64_t kTopK = 2048;  // selected tokens per query row (DeepSeek-V3.2's index_topk)

struct Shape {
  int64_t heads, batch, kv, sbs, block;
};

struct Options {
  int iters = 20;
  bool quick = false;
  bool simt = false;
  double peak_tflops = 0, read_gbps = 0;
};

// Device allocations of one shape, freed together.
struct Arena {
  std::vector<void*> ptrs;
  bool ok = true;
  void* get(size_t bytes) {
    void* p = nullptr;
    if (cudaMalloc(&p, std::max<size_t>(bytes, 16)) != cudaSuccess) {
      ok = false;
      return nullptr;
    }
    ptrs.push_back(p);
    return p;
  }
  ~Arena() {
    for (void* p : ptrs) cudaFree(p);
  }
};

TensorView dev_view(void* data, DType dt, std::initializer_list<int64_t> shape) {
  TensorView v = TensorView::contiguous(data, dt, shape);
  v.device = {DeviceType::kCuda, 0};
  return v;
}

// Runs one shape; false on a setup or run failure (printed).
bool run_shape(const Shape& s, const Options& o) {
  Arena a;
  const int64_t b = s.batch, n = s.heads, k = kTopK / s.sbs;
  const int64_t blocks_per_seq = (s.kv + s.block - 1) / s.block;
  const int64_t num_blocks = b * blocks_per_seq;
  const DType dt = DType::kBFloat16;
  void* q = a.get(size_t(b) * n * 512 * 2);
  void* qr = a.get(size_t(b) * n * 64 * 2);
  void* kc = a.get(size_t(num_blocks) * s.block * 512 * 2);
  void* kr = a.get(size_t(num_blocks) * s.block * 64 * 2);
  void* out = a.get(size_t(b) * n * 512 * 2);
  auto* idx = static_cast<int32_t*>(a.get(size_t(b) * k * 4));
  auto* bt = static_cast<int32_t*>(a.get(size_t(b) * blocks_per_seq * 4));
  auto* lkv = static_cast<int32_t*>(a.get(size_t(b) * 4));
  if (!a.ok) {
    std::fprintf(stderr, "gpu_sfa_bench: out of device memory for this shape\n");
    return false;
  }
  // 0x3c3c: a small finite bf16 (~0.0115) everywhere; the values do not change the work.
  cudaMemset(q, 0x3c, size_t(b) * n * 512 * 2);
  cudaMemset(qr, 0x3c, size_t(b) * n * 64 * 2);
  cudaMemset(kc, 0x3c, size_t(num_blocks) * s.block * 512 * 2);
  cudaMemset(kr, 0x3c, size_t(num_blocks) * s.block * 64 * 2);
  // Scattered selection and block placement: distinct random tokens (or 64-token blocks) of
  // each sequence, and each sequence's cache blocks a random permutation of the pool.
  std::mt19937_64 rng(1234);
  std::vector<int32_t> h_idx(static_cast<size_t>(b * k)), h_bt(static_cast<size_t>(b * blocks_per_seq)),
      h_lkv(static_cast<size_t>(b));
  const int64_t units = s.kv / s.sbs;
  std::vector<int32_t> perm(size_t(std::max<int64_t>(units, num_blocks)));
  for (int64_t i = 0; i < b; ++i) {
    std::iota(perm.begin(), perm.begin() + units, 0);
    std::shuffle(perm.begin(), perm.begin() + units, rng);
    for (int64_t j = 0; j < k; ++j) h_idx[size_t(i * k + j)] = j < units ? perm[size_t(j)] : -1;
    h_lkv[size_t(i)] = static_cast<int32_t>(s.kv);
  }
  std::iota(perm.begin(), perm.begin() + num_blocks, 0);
  std::shuffle(perm.begin(), perm.begin() + num_blocks, rng);
  std::copy(perm.begin(), perm.begin() + num_blocks, h_bt.begin());
  cudaMemcpy(idx, h_idx.data(), h_idx.size() * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(bt, h_bt.data(), h_bt.size() * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(lkv, h_lkv.data(), h_lkv.size() * 4, cudaMemcpyHostToDevice);

  SfaArgs args;
  args.query = dev_view(q, dt, {b, 1, n, 512});
  args.query_rope = dev_view(qr, dt, {b, 1, n, 64});
  args.key = dev_view(kc, dt, {num_blocks, s.block, 1, 512});
  args.key_rope = dev_view(kr, dt, {num_blocks, s.block, 1, 64});
  args.sparse_indices = dev_view(idx, DType::kInt32, {b, 1, 1, k});
  args.block_table = dev_view(bt, DType::kInt32, {b, blocks_per_seq});
  args.actual_seq_lengths_kv = dev_view(lkv, DType::kInt32, {b});
  args.attention_out = dev_view(out, dt, {b, 1, n, 512});
  args.scale_value = 1.0 / 24.0;
  args.sparse_block_size = s.sbs;
  args.layout_query = "BSND";
  args.layout_kv = "PA_BSND";
  args.sparse_mode = 3;

  std::unique_ptr<SfaPlan> plan;
  if (SfaPlan::create(args, &plan) != Status::kSuccess) {
    std::fprintf(stderr, "gpu_sfa_bench: create: %s\n", last_error_message());
    return false;
  }
  const core::SfaProblem& p = SfaPlanAccess::impl(*plan).problem;
  const cuda::SfaPathChoice path = cuda::sfa_path_for(p, args);
  void* ws = a.get(plan->workspace_size());
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  std::vector<float> ms;
  for (int it = 0; it < o.iters + 3; ++it) {
    cudaEventRecord(e0);
    if (plan->run(args, ws, plan->workspace_size(), nullptr) != Status::kSuccess) {
      std::fprintf(stderr, "gpu_sfa_bench: run: %s\n", last_error_message());
      return false;
    }
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float t = 0;
    cudaEventElapsedTime(&t, e0, e1);
    if (it >= 3) ms.push_back(t);
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  const Status fault = plan->status(ws, nullptr);
  std::sort(ms.begin(), ms.end());
  const double med = ms[ms.size() / 2] * 1e-3;
  const double flops = double(b) * n * kTopK * (2.0 * 576 + 2.0 * 512);
  const double bytes = double(b) * kTopK * 576 * 2;
  const double tflops = flops / med / 1e12, gbps = bytes / med / 1e9;
  std::printf(
      "{\"heads\": %lld, \"batch\": %lld, \"kv\": %lld, \"topk\": %lld, \"sparse_block_size\": %lld, "
      "\"block_size\": %lld, \"path\": \"%s\", \"m_tiles\": %d, \"median_us\": %.2f, "
      "\"tflops\": %.2f, \"gathered_gbps\": %.1f",
      (long long)n, (long long)b, (long long)s.kv, (long long)kTopK, (long long)s.sbs,
      (long long)s.block, path.path == cuda::SfaPath::kMma ? "mma" : "simt", path.layout.m_tiles,
      med * 1e6, tflops, gbps);
  if (o.peak_tflops > 0) std::printf(", \"of_peak\": %.3f", tflops / o.peak_tflops);
  if (o.read_gbps > 0) std::printf(", \"of_read_ceiling\": %.3f", gbps / o.read_gbps);
  std::printf(", \"fault_status\": %d}\n", static_cast<int>(fault));
  std::fflush(stdout);
  return fault == Status::kSuccess;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--iters" && i + 1 < argc) {
      o.iters = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--quick") {
      o.quick = true;
    } else if (a == "--simt") {
      o.simt = true;
    } else if (a == "--peak-tflops" && i + 1 < argc) {
      o.peak_tflops = std::atof(argv[++i]);
    } else if (a == "--read-gbps" && i + 1 < argc) {
      o.read_gbps = std::atof(argv[++i]);
    } else {
      std::fprintf(stderr,
                   "usage: kvflash_gpu_sfa_bench [--iters N] [--quick] [--simt] "
                   "[--peak-tflops X] [--read-gbps Y]\n");
      return 64;
    }
  }
  if (!cuda::device_present()) {
    std::fprintf(stderr, "gpu_sfa_bench: %s\n", cuda::device_info().reason.c_str());
    return 2;
  }
  cuda::set_sfa_force_simt(o.simt);
  std::vector<Shape> shapes;
  const std::vector<int64_t> batches = o.quick ? std::vector<int64_t>{1, 32}
                                               : std::vector<int64_t>{1, 8, 32, 128};
  const std::vector<int64_t> kvs = o.quick ? std::vector<int64_t>{131072}
                                           : std::vector<int64_t>{4096, 32768, 131072};
  for (int64_t heads : {128, 32, 16})
    for (int64_t b : batches)
      for (int64_t kv : kvs)
        for (int64_t sbs : {1, 64}) shapes.push_back({heads, b, kv, sbs, 64});
  for (int64_t heads : {128, 16}) shapes.push_back({heads, 32, 131072, 1, 128});  // paged 128
  bool ok = true;
  for (const Shape& s : shapes) ok = run_shape(s, o) && ok;
  return ok ? 0 : 1;
}
