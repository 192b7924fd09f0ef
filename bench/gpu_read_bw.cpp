// The GPU benchmark's ceiling: the device read bandwidth of cuda::read_probe (one pass over a
// buffer far larger than L2), best of several timed passes with CUDA events. Prints one JSON
// object; scripts/gpu-check.sh stores it in its summary. Exits 2 (with the reason) without a GPU.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "cuda/device.hpp"
#include "hooks/read_probe.hpp"

int main(int argc, char** argv) {
  using namespace kvflash;
  if (!cuda::device_present()) {
    std::fprintf(stderr, "gpu_read_bw: %s\n", cuda::device_info().reason.c_str());
    return 2;
  }
  // 4 GiB by default: > 30x the H200's L2, so the reads come from HBM.
  const size_t bytes = (argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 4ull << 30) & ~size_t{15};
  const int reps = 20;
  uint32_t* buf = nullptr;
  unsigned long long* sum = nullptr;
  cudaEvent_t start, stop;
  if (cudaMalloc(&buf, bytes) != cudaSuccess || cudaMalloc(&sum, sizeof(*sum)) != cudaSuccess ||
      cudaMemset(buf, 1, bytes) != cudaSuccess || cudaEventCreate(&start) != cudaSuccess ||
      cudaEventCreate(&stop) != cudaSuccess) {
    std::fprintf(stderr, "gpu_read_bw: setup failed: %s\n", cudaGetErrorString(cudaGetLastError()));
    return 1;
  }
  float best_ms = 1e30f;
  for (int r = 0; r < reps + 2; ++r) {  // the first two passes warm up (clocks, TLB)
    cudaEventRecord(start);
    if (cuda::read_probe(buf, bytes / 4, sum, nullptr) != Status::kSuccess) {
      std::fprintf(stderr, "gpu_read_bw: %s\n", last_error_message());
      return 1;
    }
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    if (r >= 2) best_ms = std::min(best_ms, ms);
  }
  unsigned long long got = 0;
  cudaMemcpy(&got, sum, sizeof(got), cudaMemcpyDeviceToHost);
  // memset(1) makes every word 0x01010101: the checksum proves every word was read.
  const unsigned long long expect = (bytes / 4) * 0x01010101ull;
  const cuda::DeviceInfo& d = cuda::device_info();
  std::printf(
      "{\"device\": \"%s\", \"sms\": %d, \"bytes\": %zu, \"best_ms\": %.4f, "
      "\"read_gbps\": %.1f, \"checksum_ok\": %s}\n",
      d.name.c_str(), d.sm_count, bytes, best_ms, bytes / (best_ms * 1e-3) / 1e9,
      got == expect ? "true" : "false");
  cudaFree(buf);
  cudaFree(sum);
  return got == expect ? 0 : 1;
}
