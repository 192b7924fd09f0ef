// The SFA CUDA kernel choice for a call's tensors, for the GPU tests and benchmarks that report or
// force it (tests/cuda_sfa_test.cpp, bench/gpu_sfa_bench.cpp). A test hook, not part of
// libkvflash: the library chooses from a run's bound data (cuda::sfa_path_for in
// src/cuda/sfa/sfa_cuda.hpp). Built only with the CUDA backend.
#pragma once

#include "cuda/sfa/sfa_cuda.hpp"
#include "kvflash/sfa.hpp"

namespace kvflash::cuda {

/// The kernel a run of p on args (matched to the plan of p) queues on the current device.
SfaPathChoice sfa_path_for(const core::SfaProblem& p, const SfaArgs& args);

}  // namespace kvflash::cuda
