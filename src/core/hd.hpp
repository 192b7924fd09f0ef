// KVFLASH_HD marks a function that host code and CUDA device code both call (index arithmetic the
// CUDA kernels share with the host-side plan, and which the CPU tests run). Without nvcc it is
// empty, so these headers stay plain C++.
#pragma once

#if defined(__CUDACC__)
#define KVFLASH_HD __host__ __device__
#else
#define KVFLASH_HD
#endif
