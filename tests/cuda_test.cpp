// CUDA backend tests. They build wherever the library does; without a CUDA device (or without a
// CUDA build) the device tests skip and print why, so `ctest` passes on the CPU-only CI machines.
// scripts/gpu-check.sh runs them on a GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "cuda/device.hpp"

#if defined(KVFLASH_HAVE_CUDA)
#include <cuda_runtime.h>

#include "hooks/read_probe.hpp"
#endif

namespace kvflash {
namespace {

#define KVFLASH_REQUIRE_GPU()                                                     \
  do {                                                                            \
    if (!cuda::device_present()) GTEST_SKIP() << cuda::device_info().reason;      \
  } while (0)

TEST(CudaDevice, AnswerIsConsistent) {
  const cuda::DeviceInfo& d = cuda::device_info();
  // Either a device with its properties, or none with a reason to print: never both or neither.
  if (d.present) {
    EXPECT_GT(d.count, 0);
    EXPECT_GT(d.sm_count, 0);
    EXPECT_GE(d.major, 8) << d.name << ": kvflash's CUDA code is built for sm_80 and sm_90a";
    EXPECT_TRUE(d.reason.empty());
  } else {
    EXPECT_FALSE(d.reason.empty());
    std::printf("no CUDA device: %s\n", d.reason.c_str());
  }
  EXPECT_EQ(&d, &cuda::device_info()) << "queried once per process";
}

#if defined(KVFLASH_HAVE_CUDA)
// The read probe must read every word exactly once: its checksum equals the host's sum, for sizes
// that are not multiples of the grid (tails) and one larger than the grid's one pass.
TEST(CudaReadProbe, SumsEveryWordOnce) {
  KVFLASH_REQUIRE_GPU();
  for (const size_t n : {size_t{0}, size_t{4}, size_t{4 * 513}, size_t{1} << 24}) {
    std::vector<uint32_t> host(n);
    unsigned long long expect = 0;
    for (size_t i = 0; i < n; ++i) {
      host[i] = static_cast<uint32_t>(i * 2654435761u) ^ 0x9e3779b9u;
      expect += host[i];
    }
    uint32_t* dev = nullptr;
    unsigned long long* sum = nullptr;
    ASSERT_EQ(cudaMalloc(&dev, (n + 4) * sizeof(uint32_t)), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&sum, sizeof(*sum)), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(dev, host.data(), n * sizeof(uint32_t), cudaMemcpyHostToDevice),
              cudaSuccess);
    ASSERT_EQ(cuda::read_probe(dev, n, sum, nullptr), Status::kSuccess);
    unsigned long long got = 1;
    ASSERT_EQ(cudaMemcpy(&got, sum, sizeof(got), cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(got, expect) << "n = " << n;
    cudaFree(dev);
    cudaFree(sum);
  }
}

TEST(CudaReadProbe, RejectsMisalignedInput) {
  // Checked on the host before anything touches the device: runs without a GPU.
  unsigned long long* sum = reinterpret_cast<unsigned long long*>(uintptr_t{64});
  EXPECT_EQ(cuda::read_probe(nullptr, 4, sum, nullptr), Status::kInvalid);
  EXPECT_EQ(cuda::read_probe(reinterpret_cast<const uint32_t*>(uintptr_t{16}), 3, sum, nullptr),
            Status::kInvalid);
  EXPECT_EQ(cuda::read_probe(reinterpret_cast<const uint32_t*>(uintptr_t{20}), 4, sum, nullptr),
            Status::kInvalid);
}
#endif

}  // namespace
}  // namespace kvflash
