#include <cuda_runtime.h>

#include "cuda/cuda_check.hpp"
#include "hooks/read_probe.hpp"

namespace kvflash::cuda {
namespace {

constexpr int kThreads = 512;

// Grid-stride over 16-byte vectors (one LDG.128 per iteration), a warp reduction, then one 64-bit
// atomic per warp. Integer addition is associative, so the sum is exact whatever the order.
__global__ void read_probe_kernel(const uint4* __restrict__ v, size_t nvec,
                                  unsigned long long* __restrict__ sum) {
  unsigned long long acc = 0;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < nvec;
       i += stride) {
    const uint4 x = __ldg(v + i);
    acc += static_cast<unsigned long long>(x.x) + x.y + x.z + x.w;
  }
  for (int off = 16; off > 0; off >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, off);
  if ((threadIdx.x & 31) == 0 && acc != 0) atomicAdd(sum, acc);
}

}  // namespace

Status read_probe(const uint32_t* words, size_t n, unsigned long long* sum, void* stream) {
  static constexpr const char* kOp = "read_probe";
  if (words == nullptr || sum == nullptr || n % 4 != 0 ||
      reinterpret_cast<uintptr_t>(words) % 16 != 0) {
    return core::fail(Status::kInvalid, kOp,
                      "words and sum must be non-null, words 16-byte aligned and n a multiple "
                      "of 4");
  }
  auto* s = static_cast<cudaStream_t>(stream);
  KVFLASH_CUDA_TRY(kOp, cudaMemsetAsync(sum, 0, sizeof(*sum), s));
  const size_t nvec = n / 4;
  if (nvec == 0) return Status::kSuccess;
  int device = 0, sms = 0;
  KVFLASH_CUDA_TRY(kOp, cudaGetDevice(&device));
  KVFLASH_CUDA_TRY(kOp, cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  // 4 blocks of 512 threads per SM keep enough loads in flight to saturate HBM; never more blocks
  // than there are vectors.
  const size_t want = static_cast<size_t>(sms) * 4;
  const size_t need = (nvec + kThreads - 1) / kThreads;
  const unsigned blocks = static_cast<unsigned>(want < need ? want : need);
  read_probe_kernel<<<blocks, kThreads, 0, s>>>(reinterpret_cast<const uint4*>(words), nvec, sum);
  KVFLASH_CUDA_TRY(kOp, cudaGetLastError());
  return Status::kSuccess;
}

}  // namespace kvflash::cuda
