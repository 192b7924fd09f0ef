#include "cuda/device.hpp"

#if defined(KVFLASH_HAVE_CUDA)
#include <cuda_runtime_api.h>

#include "cuda/cuda_check.hpp"
#endif

namespace kvflash::cuda {
namespace {

DeviceInfo query() {
  DeviceInfo info;
#if defined(KVFLASH_HAVE_CUDA)
  // cudaGetDeviceCount is the documented probe: without a driver it returns
  // cudaErrorInsufficientDriver / cudaErrorNoDevice instead of failing the process.
  const cudaError_t e = cudaGetDeviceCount(&info.count);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    info.count = 0;
    info.reason = std::string("no usable CUDA device: ") + cudaGetErrorName(e) + " (" +
                  cudaGetErrorString(e) + ")";
    return info;
  }
  if (info.count == 0) {
    info.reason = "no CUDA device";
    return info;
  }
  cudaDeviceProp prop{};
  const cudaError_t pe = cudaGetDeviceProperties(&prop, 0);
  if (pe != cudaSuccess) {
    (void)cudaGetLastError();
    info.reason = std::string("cudaGetDeviceProperties failed: ") + cudaGetErrorName(pe);
    return info;
  }
  info.present = true;
  info.sm_count = prop.multiProcessorCount;
  info.major = prop.major;
  info.minor = prop.minor;
  info.name = prop.name;
#else
  info.reason = "kvflash was built without CUDA (KVFLASH_CUDA=OFF or no nvcc)";
#endif
  return info;
}

}  // namespace

const DeviceInfo& device_info() {
  static const DeviceInfo info = query();  // magic static: one query, thread-safe
  return info;
}

#if defined(KVFLASH_HAVE_CUDA)
Status copy_to_host(const char* op, void* dst, const void* src, size_t n, void* stream) {
  const auto st = static_cast<cudaStream_t>(stream);
  KVFLASH_CUDA_TRY(op, cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToHost, st));
  KVFLASH_CUDA_TRY(op, cudaStreamSynchronize(st));
  return Status::kSuccess;
}
#endif

}  // namespace kvflash::cuda
