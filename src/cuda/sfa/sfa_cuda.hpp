// The SFA CUDA backend's host interface (issue 10). Plain C++: no CUDA header, so the backend list
// (src/backends/lists.cpp) can name it in a build without nvcc-compiled callers.
//
// STATUS: compiled (nvcc, sm_80 / sm_90a), never run: no GPU was available when it was written.
// docs/gpu-sfa.md lists what remains to verify.
#pragma once

#include <cstddef>

#include "core/backend.hpp"
#include "cuda/sfa/sfa_mma_geometry.hpp"
#include "kvflash/status.hpp"
#include "ops/sfa/sfa_problem.hpp"

namespace kvflash::cuda {

/// Device workspace bytes for p: the fault record, the run-time lengths and row map, per-row fault
/// flags, the fault word and the MMA path's position lists. A function of p only.
size_t sfa_workspace_size(const core::SfaProblem& p);

/// Queues p on the bound data d on ctx.stream (a cudaStream_t; null = the legacy default stream)
/// with ctx.workspace (device memory): a one-thread prologue that reads the actual-length tensors
/// on the device (docs/semantics.md §3.3), the attention kernel, then a one-thread fault report.
/// No host synchronisation, so it is CUDA-graph capturable. Bad device data is never
/// dereferenced: bad lengths make every output NaN, a bad block id makes its query row NaN, and
/// the workspace's fault record (core/device_fault.hpp) names the entry the CPU backend names
/// (SfaPlan::status and the aclnn CUDA runtime decode it with sfa::sfa_fault_status, the entry's
/// fault hook). Returns kRuntime (361001) only when a launch fails. Defined only in builds with
/// the CUDA backend.
Status sfa_run(const core::SfaProblem& p, const core::SfaData& d, const core::RunContext& ctx);

/// The kernel sfa_run queues for a run's bound data on the current device (host-side choice:
/// shapes, pointer alignment, device limits, the override below). Tests and benchmarks ask it for
/// given tensors through tests/hooks/sfa_path.hpp.
SfaPathChoice sfa_path_for(const core::SfaProblem& p, const core::SfaData& d);

/// Process-wide override for tests and A/B benchmarks: force the SIMT kernel (also set by the
/// environment variable KVFLASH_SFA_CUDA_PATH=simt, read once). Not for concurrent use with runs.
void set_sfa_force_simt(bool force);

}  // namespace kvflash::cuda
