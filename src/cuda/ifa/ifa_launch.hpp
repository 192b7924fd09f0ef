// The IFA CUDA kernels' entry points (defined in ifa_kernel.cu). Plain C++: ifa_cuda.cpp calls
// them with the plan's params, the run's bound data and the structs of ifa_cuda_layout.hpp. Each
// returns 0 or the cudaError_t of the failed launch; none synchronises.
#pragma once

#include "cuda/ifa/ifa_cuda_layout.hpp"
#include "ops/ifa/ifa_problem.hpp"

namespace kvflash::cuda {

/// Writes table entries [u.first, u.first + u.count) into the workspace's sequence table.
/// base: the 256-byte-aligned workspace base.
int ifa_cuda_upload(const IfaCudaSeqUpload& u, const IfaCudaLayout& l, void* base, void* stream);

/// Queues the run after the uploads: prologue (device data in stream order), chunk kernel, fault
/// report, merge.
int ifa_cuda_launch(const core::IfaParams& p, const core::IfaData& d, const IfaCudaLayout& l,
                    const IfaCudaGeometry& g, void* base, void* stream);

}  // namespace kvflash::cuda
