// The SFA CUDA kernels' interface with the library: they read the plan's core::SfaProblem and the
// run's bound core::SfaData (device pointers) by value, as the CPU kernels read them by reference;
// sfa_cuda.cpp adds the workspace and the path.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/device_fault.hpp"
#include "ops/sfa/sfa_problem.hpp"

namespace kvflash::cuda {

/// What the kernels take by value: the plan's problem (core::SfaProblem is plain data, the same
/// struct the CPU kernels read) and three values the host derives from it once per run.
struct SfaLaunchProblem : core::SfaProblem {
  bool bf16 = false;     ///< dtype is bf16, else fp16
  bool out_f32 = false;  ///< attention_out is fp32 (kvflash extension), else dtype
  int64_t list_cap = 0;  ///< position-list entries per row (sfa_position_list_cap; 0: none)
};

/// Alignment of the workspace base (a caller's pointer is moved up to it) and of its tables: the
/// fault record's, which comes first, so core::fault_record_at finds it.
inline constexpr size_t kSfaCudaWorkspaceAlign = core::kFaultRecordAlign;

/// Workspace bytes for a problem of `batch` batches and `num_rows` query rows, with list_cap
/// position-list entries per row (the MMA path's; 0 for none).
size_t sfa_launch_workspace_size(int64_t batch, int64_t num_rows, int64_t list_cap);

/// Which kernel sfa_launch queues (sfa_mma_geometry.hpp's choice, made on the host).
struct SfaLaunchPath {
  bool mma = false;
  int m_tiles = 1;  ///< MMA: 16-head tiles per CTA
};

/// Queues the prologue, the attention kernel and the fault report on stream (a cudaStream_t): the
/// workspace's core::FaultRecord then holds the first bad entry, the one the CPU backend names
/// (core::sfa_resolve_lengths, core::sfa_row_fault_record). 0 on success, else the cudaError_t of
/// the failed launch.
int sfa_launch(const SfaLaunchProblem& p, const core::SfaData& d, void* workspace, void* stream,
               SfaLaunchPath path);

}  // namespace kvflash::cuda
