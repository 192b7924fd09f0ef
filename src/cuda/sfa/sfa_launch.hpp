// The SFA CUDA kernels' interface with the library: they read the plan's core::SfaProblem and the
// run's bound core::SfaData (device pointers) by value, as the CPU kernels read them by reference;
// sfa_cuda.cpp adds the workspace and the path.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ops/sfa/sfa_problem.hpp"

namespace kvflash::cuda {

/// What the kernels take by value: the plan's problem (core::SfaProblem is plain data, the same
/// struct the CPU kernels read) and three values the host derives from it once per run.
struct SfaLaunchProblem : core::SfaProblem {
  bool bf16 = false;     ///< dtype is bf16, else fp16
  bool out_f32 = false;  ///< attention_out is fp32 (kvflash extension), else dtype
  int64_t list_cap = 0;  ///< position-list entries per row (sfa_position_list_cap; 0: none)
};

/// The fault word's bits (the workspace's last 4 bytes before the 256-byte pad; see
/// sfa_fault_word_offset): bad actual-length data (every output NaN), a bad block id (its row NaN,
/// its row flag set).
constexpr uint32_t kSfaFaultLengths = 1u;
constexpr uint32_t kSfaFaultBlockId = 2u;

/// Alignment of the workspace base (a caller's pointer is moved up to it) and of its tables.
inline constexpr size_t kSfaCudaWorkspaceAlign = 256;

/// Workspace bytes for a problem of `batch` batches and `num_rows` query rows, with list_cap
/// position-list entries per row (the MMA path's; 0 for none).
size_t sfa_launch_workspace_size(int64_t batch, int64_t num_rows, int64_t list_cap);

/// Where the prologue's tables lie in the workspace, from its 256-byte aligned start: the per-row
/// fault flags (one byte per query row) and the fault word. sfa_fault_status reads them back.
struct SfaWsOffsets {
  size_t row_fault = 0, fault = 0;
};
SfaWsOffsets sfa_ws_offsets(int64_t batch, int64_t num_rows);

/// Which kernel sfa_launch queues (sfa_mma_geometry.hpp's choice, made on the host).
struct SfaLaunchPath {
  bool mma = false;
  int m_tiles = 1;  ///< MMA: 16-head tiles per CTA
};

/// Queues the prologue and the attention kernel on stream (a cudaStream_t). 0 on success, else the
/// cudaError_t of the failed launch.
int sfa_launch(const SfaLaunchProblem& p, const core::SfaData& d, void* workspace, void* stream,
               SfaLaunchPath path);

}  // namespace kvflash::cuda
