// The SFA CUDA backend's host interface (issue 10). Plain C++: no CUDA header, so the backend list
// (src/backends/lists.cpp) can name it in a build without nvcc-compiled callers.
//
// STATUS: compiled (nvcc, sm_80 / sm_90a), never run: no GPU was available when it was written.
// docs/gpu-sfa.md lists what remains to verify.
#pragma once

#include <cstddef>

#include "core/backend.hpp"
#include "cuda/sfa/sfa_mma_geometry.hpp"
#include "kvflash/sfa.hpp"
#include "kvflash/status.hpp"
#include "ops/sfa/sfa_problem.hpp"

namespace kvflash::cuda {

/// Device workspace bytes for p: the run-time lengths and row map, per-row fault flags and the
/// call's fault word. A function of p only.
size_t sfa_workspace_size(const core::SfaProblem& p);

/// Queues p on the bound data d on ctx.stream (a cudaStream_t; null = the legacy default stream)
/// with ctx.workspace (device memory): a one-thread prologue
/// that reads the actual-length tensors on the device (docs/semantics.md §3.3), then the attention kernel. No
/// host synchronisation, so it is CUDA-graph capturable. Bad device data is never dereferenced:
/// bad lengths make every output NaN, a bad block id makes its query row NaN, and the workspace's
/// fault word / row flags record it (read by the runtime at stream synchronisation). Returns
/// kRuntime (361001) only when a launch fails. Defined only in builds with the CUDA backend.
Status sfa_run(const core::SfaProblem& p, const core::SfaData& d, const core::RunContext& ctx);

/// The device-stream fault contract (the core's Backend::run returns before the device has read
/// anything): after a successful sfa_run, the run's fault word and per-row flags sit in its
/// workspace until the next run with that workspace. sfa_fault_status synchronises `stream`, reads
/// them back and returns what the CPU backend's run returns for the same data: kSuccess, or
/// kInvalid (161002) with the CPU's message (the bad actual-length entry, or the first row's bad
/// block_table[b][slot]); the outputs are already NaN as on the CPU. It copies the few device
/// tensors it needs to name the entry (lengths, indices, block table) only when a fault is set.
/// Callers: the tests and C++ API users on CUDA. The aclnn CUDA runtime instead gets the fault word
/// that sfa_run posts (core/device_fault.hpp) and reports 507015 at stream synchronisation.
Status sfa_fault_status(const core::SfaProblem& p, const SfaArgs& args, const void* workspace,
                        void* stream);

/// The kernel sfa_run queues for these tensors on the current device (host-side choice: shapes,
/// pointer alignment, device limits, the override below).
SfaPathChoice sfa_path_for(const core::SfaProblem& p, const SfaArgs& args);
/// The same for a run's bound data.
SfaPathChoice sfa_path_for(const core::SfaProblem& p, const core::SfaData& d);

/// Process-wide override for tests and A/B benchmarks: force the SIMT kernel (also set by the
/// environment variable KVFLASH_SFA_CUDA_PATH=simt, read once). Not for concurrent use with runs.
void set_sfa_force_simt(bool force);

}  // namespace kvflash::cuda
