// The plain device read kernel: the HBM read-bandwidth ceiling that the GPU benchmark
// (bench/gpu_read_bw.cpp) measures the IFA kernels against (issue 9's targets are fractions of
// it). A test hook, not part of libkvflash. It reads every 16-byte word once
// and folds it into a checksum, so the compiler cannot drop the loads and a test can check that
// every byte was read.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kvflash/status.hpp"

namespace kvflash::cuda {

/// Sums the 32-bit words of the device buffer `words` (`n` of them, n % 4 == 0, 16-byte aligned)
/// modulo 2^64 into *sum (device memory), asynchronously on `stream` (a cudaStream_t; null = the
/// legacy default stream). *sum is overwritten, not accumulated. No host synchronisation.
Status read_probe(const uint32_t* words, size_t n, unsigned long long* sum, void* stream);

}  // namespace kvflash::cuda
