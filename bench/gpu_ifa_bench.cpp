// kvflash IFA on CUDA for the decode shapes of issue 9: Llama-3-8B, Qwen2.5-7B and a Llama-3-70B
// tensor-parallel-8 shard, batch 1..256, KV 1k..128k, bf16 / fp16 / int8 KV (bf16 query, per-channel
// antiquant), contiguous BNSD and paged caches (block size 16 and 128, blocks in a scattered
// order). Median time of a few runs (CUDA events) and the effective KV read bandwidth (K + V bytes
// / time); with --ceiling GBPS (kvflash_gpu_read_bw's read_gbps) also the fraction of it. One JSON
// line per case; scripts/gpu-check.sh runs it (--quick keeps it near a minute). Exits 2 (with the
// reason) without a GPU.
//     kvflash_gpu_ifa_bench [--quick] [--iters N] [--ceiling GBPS]
#include <cuda_runtime.h>

#include <algorithm>
#include <numeric>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "cuda/device.hpp"
#include "cuda/ifa/ifa_cuda.hpp"
#include "kvflash/ifa.hpp"

namespace {

using kvflash::DType;
using kvflash::TensorView;

struct Model {
  const char* name;
  int64_t heads, kv_heads, dim;
};
constexpr Model kModels[] = {{"llama3-8b", 32, 8, 128},
                             {"qwen2.5-7b", 28, 4, 128},
                             {"llama3-70b-tp8", 8, 1, 128}};
struct Shape {
  int64_t batch, kv_len;
};
constexpr Shape kShapes[] = {{1, 4096}, {1, 131072}, {8, 4096}, {32, 8192}, {64, 4096},
                             {256, 1024}};
constexpr Shape kQuick[] = {{1, 4096}, {1, 131072}, {32, 8192}, {256, 1024}};

// Device buffers of one case, freed together.
class Buffers {
 public:
  ~Buffers() {
    for (void* p : ptrs_) cudaFree(p);
  }
  // A device tensor of the given dims, filled with `byte` in every byte (finite values of every
  // dtype used here: bf16/fp16 0x3C3C ~ 0.01 / 1.06, int8 60).
  TensorView make(DType dt, std::vector<int64_t> dims, int byte = 0x3C) {
    TensorView v = TensorView::contiguous(nullptr, dt, dims);
    const size_t bytes = static_cast<size_t>(v.numel()) * kvflash::dtype_size(dt);
    void* p = nullptr;
    if (cudaMalloc(&p, std::max<size_t>(bytes, 1)) != cudaSuccess) {
      ok_ = false;
      return v;
    }
    ptrs_.push_back(p);
    cudaMemset(p, byte, bytes);
    v.data = p;
    v.device = {kvflash::DeviceType::kCuda, 0};
    return v;
  }
  bool ok() const { return ok_; }

 private:
  std::vector<void*> ptrs_;
  bool ok_ = true;
};

struct Result {
  bool ok = false;
  double ms = 0, kv_bytes = 0;
  std::string error;
};

Result run_case(const Model& m, const Shape& s, DType kv, int64_t block, int iters) {
  Result r;
  Buffers buf;
  kvflash::IfaArgs a;
  const int64_t b = s.batch, n = m.heads, kvn = m.kv_heads, d = m.dim, len = s.kv_len;
  a.num_heads = n;
  a.num_key_value_heads = kvn;
  a.scale_value = 1.0 / std::sqrt(static_cast<double>(d));
  a.actual_seq_lengths = std::vector<int64_t>(static_cast<size_t>(b), len);
  if (block == 0) {  // contiguous BNSD, the layout SDPA reads
    a.input_layout = "BNSD";
    a.query = buf.make(DType::kBFloat16, {b, n, 1, d});
    a.key = {buf.make(kv, {b, kvn, len, d})};
    a.value = {buf.make(kv, {b, kvn, len, d})};
    a.attention_out = buf.make(DType::kBFloat16, {b, n, 1, d});
  } else {  // paged BSH cache, blocks of a sequence scattered over the cache
    a.input_layout = "BSH";
    a.block_size = block;
    const int64_t per_seq = (len + block - 1) / block, blocks = b * per_seq;
    a.query = buf.make(DType::kBFloat16, {b, 1, n * d});
    a.key = {buf.make(kv, {blocks, block, kvn * d})};
    a.value = {buf.make(kv, {blocks, block, kvn * d})};
    a.attention_out = buf.make(DType::kBFloat16, {b, 1, n * d});
    std::vector<int32_t> ids(static_cast<size_t>(blocks));
    for (int64_t i = 0; i < blocks; ++i) {
      // A fixed permutation (multiplier coprime with the count): neighbours are far apart.
      int64_t mul = 7919;
      while (std::gcd(mul, blocks) != 1) ++mul;
      ids[static_cast<size_t>(i)] = static_cast<int32_t>((i * mul) % blocks);
    }
    a.block_table = buf.make(DType::kInt32, {b, per_seq}, 0);
    cudaMemcpy(a.block_table->data, ids.data(), ids.size() * 4, cudaMemcpyHostToDevice);
  }
  if (kv == DType::kInt8) a.antiquant_scale = buf.make(DType::kBFloat16, {2, kvn, 1, d});
  if (!buf.ok()) {
    r.error = "out of device memory";
    return r;
  }
  std::unique_ptr<kvflash::IfaPlan> plan;
  if (kvflash::IfaPlan::create(a, &plan) != kvflash::Status::kSuccess) {
    r.error = kvflash::last_error_message();
    return r;
  }
  void* ws = nullptr;
  cudaStream_t st = nullptr;
  cudaEvent_t e0 = nullptr, e1 = nullptr;
  if (cudaMalloc(&ws, plan->workspace_size()) != cudaSuccess || cudaStreamCreate(&st) != cudaSuccess ||
      cudaEventCreate(&e0) != cudaSuccess || cudaEventCreate(&e1) != cudaSuccess) {
    r.error = "CUDA setup failed";
    return r;
  }
  std::vector<float> times;
  for (int i = 0; i < iters + 2; ++i) {  // two warm-up runs
    cudaEventRecord(e0, st);
    if (plan->run(a, ws, plan->workspace_size(), st) != kvflash::Status::kSuccess) {
      r.error = kvflash::last_error_message();
      break;
    }
    cudaEventRecord(e1, st);
    cudaEventSynchronize(e1);
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    if (i >= 2) times.push_back(ms);
  }
  if (r.error.empty()) {
    const kvflash::Status fault = plan->status(ws, st);
    if (fault != kvflash::Status::kSuccess) r.error = kvflash::last_error_message();
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cudaStreamDestroy(st);
  cudaFree(ws);
  if (!r.error.empty() || times.empty()) return r;
  std::sort(times.begin(), times.end());
  r.ok = true;
  r.ms = times[times.size() / 2];
  r.kv_bytes = 2.0 * static_cast<double>(b * kvn * len * d) *
               static_cast<double>(kvflash::dtype_size(kv));
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace kvflash;
  bool quick = false;
  int iters = 10;
  double ceiling = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--quick") {
      quick = true;
    } else if (arg == "--iters" && i + 1 < argc) {
      iters = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--ceiling" && i + 1 < argc) {
      ceiling = std::atof(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--quick] [--iters N] [--ceiling GBPS]\n", argv[0]);
      return 2;
    }
  }
  if (!cuda::device_present()) {
    std::fprintf(stderr, "gpu_ifa_bench: %s\n", cuda::device_info().reason.c_str());
    return 2;
  }
  int failures = 0;
  const std::vector<Shape> shapes = quick ? std::vector<Shape>(std::begin(kQuick), std::end(kQuick))
                                          : std::vector<Shape>(std::begin(kShapes), std::end(kShapes));
  for (const Model& m : kModels) {
    for (const Shape& s : shapes) {
      for (const DType kv : {DType::kBFloat16, DType::kFloat16, DType::kInt8}) {
        for (const int64_t block : {int64_t{0}, int64_t{16}, int64_t{128}}) {
          if (quick && kv == DType::kFloat16 && block != 0) continue;
          const Result r = run_case(m, s, kv, block, iters);
          std::printf("{\"op\": \"kvflash_ifa\", \"model\": \"%s\", \"batch\": %lld, \"kv_len\": %lld, "
                      "\"heads\": %lld, \"kv_heads\": %lld, \"dim\": %lld, \"kv_dtype\": \"%s\", "
                      "\"cache\": \"%s\"",
                      m.name, static_cast<long long>(s.batch), static_cast<long long>(s.kv_len),
                      static_cast<long long>(m.heads), static_cast<long long>(m.kv_heads),
                      static_cast<long long>(m.dim), dtype_name(kv),
                      block == 0 ? "contiguous" : (block == 16 ? "paged16" : "paged128"));
          if (!r.ok) {
            ++failures;
            std::printf(", \"error\": \"%s\"}\n", r.error.c_str());
          } else {
            const double gbps = r.kv_bytes / (r.ms * 1e-3) / 1e9;
            std::printf(", \"median_ms\": %.4f, \"kv_read_gbps\": %.1f", r.ms, gbps);
            if (ceiling > 0) std::printf(", \"of_ceiling\": %.3f", gbps / ceiling);
            std::printf("}\n");
          }
          std::fflush(stdout);
        }
      }
    }
  }
  return failures == 0 ? 0 : 1;
}
