// The IFA CUDA backend (issue 9): the functions of its core::Backend entry ("cuda" in
// src/backends/lists.cpp; its fault hook, cuda::ifa_cuda_decode_fault, is plain C++ in
// ifa_cuda_plan.hpp). Plain C++ header.
//
// STATUS: compiled (nvcc, sm_80 / sm_90a), never run: no GPU was available when it was written.
// docs/gpu.md lists what remains to verify.
//
// Status contract on a device stream. ifa_run only queues work (no host synchronisation, so a run
// can be captured in a CUDA graph): it returns kSuccess once everything is queued, or kRuntime
// (361001) when a launch fails. Bad device data (a block id outside [0, num_blocks) in a batch's
// attended range, left padding past the mask) is found by the kernels on the device: the batch's
// rows get the fault result (NaN, int8 0, LSE NaN) and the workspace's fault record
// (core/device_fault.hpp) names the first faulted batch. IfaPlan::status reads it back after the
// stream has run the work and returns the CPU backend's status for the same data (161002, the same
// message); the aclnn CUDA runtime decodes the same record at stream synchronisation (507015, as on
// the CPU runtime).
#pragma once

#include <cstddef>

#include "core/backend.hpp"
#include "kvflash/status.hpp"
#include "ops/ifa/ifa_problem.hpp"

namespace kvflash::cuda {

/// Device workspace bytes for p: a function of p only.
size_t ifa_workspace_size(const core::IfaProblem& p);

/// Queues p on the bound data d on ctx.stream (a cudaStream_t; null = the legacy default stream)
/// with ctx.workspace (device memory). Defined only in builds with the CUDA backend
/// (KVFLASH_HAVE_CUDA).
Status ifa_run(const core::IfaProblem& p, const core::IfaData& d, const core::RunContext& ctx);

}  // namespace kvflash::cuda
