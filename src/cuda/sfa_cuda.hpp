// The SFA CUDA backend's host interface (issue 10). Plain C++: no CUDA header, so the backend list
// (src/backends/lists.cpp) can name it in a build without nvcc-compiled callers.
//
// STATUS: compiled (nvcc, sm_80 / sm_90a), never run: no GPU was available when it was written.
// docs/gpu.md "SFA" lists what remains to verify.
#pragma once

#include <cstddef>

#include "core/sfa_problem.hpp"
#include "kvflash/sfa.hpp"
#include "kvflash/status.hpp"

namespace kvflash::cuda {

/// Device workspace bytes for p: the run-time lengths and row map, per-row fault flags and the
/// call's fault word. A function of p only.
size_t sfa_workspace_size(const core::SfaProblem& p);

/// Queues p on `stream` (a cudaStream_t; null = the legacy default stream): a one-thread prologue
/// that reads the actual-length tensors on the device (spec §3.3), then the attention kernel. No
/// host synchronisation, so it is CUDA-graph capturable. Bad device data is never dereferenced:
/// bad lengths make every output NaN, a bad block id makes its query row NaN, and the workspace's
/// fault word / row flags record it (read by the runtime at stream synchronisation). Returns
/// kRuntime (361001) only when a launch fails. Defined only in builds with the CUDA backend.
Status sfa_run(const core::SfaProblem& p, const SfaArgs& args, void* workspace, void* stream);

}  // namespace kvflash::cuda
