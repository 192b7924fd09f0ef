// The SFA CPU backend entry: derives the lengths from the device data, runs one instruction set's
// task function (the entry's SfaKernels) on the parallel loop and reports bad device data. No
// validation beyond the device data, no allocation, no I/O.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/backend.hpp"
#include "kvflash/status.hpp"
#include "ops/sfa/sfa_problem.hpp"

namespace kvflash::cpu {

/// Selected KV tokens gathered and processed together (the N dimension of the per-tile GEMMs).
inline constexpr int64_t kSfaTile = 64;
/// At most this many workers run one SFA call: each needs its own scratch lane in the workspace,
/// and the workspace is a function of the problem only, never of the thread count.
inline constexpr int kSfaMaxLanes = 64;

/// How one call is split among P participants: tasks are (query row, block of head_block heads).
/// Every head's arithmetic is the same whatever the split, so the output bits depend neither on P
/// nor on head_block; only the speed does.
struct SfaSchedule {
  int participants = 1;
  int64_t head_block = 1;
  int64_t num_tasks = 0;
};
/// The split for `threads` workers (>= 1), capped by the plan's lanes.
SfaSchedule sfa_schedule(const core::SfaProblem& p, int threads);

/// One participant's scratch: its tile buffers and the state of its current task's heads.
struct SfaScratch {
  float* q;      ///< head_block x 576
  float* kt;     ///< kSfaTile x 576
  float* vt;     ///< kSfaTile x 512 (unused when V aliases K)
  float* s;      ///< head_block x kSfaTile
  float* acc;    ///< head_block x 512
  float* st;     ///< head_block x (max, sum)
  int64_t* pos;  ///< 2 x kSfaTile: the current tile's positions and the next one's
};

/// One instruction set's SFA kernels, compiled in its own translation unit (sfa_kernel_<isa>.cpp)
/// and named by its entry of the backend list (src/backends/lists.cpp).
struct SfaKernels {
  /// Runs task `task` of schedule s (query row task / blocks, head block task % blocks) with the
  /// participant's scratch w. A row whose selected positions use a bad block id is not read: its
  /// outputs become NaN and row_fault[row] is set.
  void (*task)(const core::SfaProblem& p, const core::SfaData& d, const SfaSchedule& s,
               const SfaScratch& w, uint8_t* row_fault, int64_t task);
};

/// Bytes of workspace sfa_run needs for p: lanes of scratch and the run-time lengths and row
/// map. A function of p only (not of the ISA or the thread count).
size_t sfa_workspace_size(const core::SfaProblem& p);

/// Computes attention_out (and the softmax outputs) of p for the bound data d with kernels k (whose
/// instruction set the CPU must support) on ctx.num_threads workers (0 = default).
/// ctx.workspace: at least sfa_workspace_size(p) bytes, any alignment. Returns kInvalid when
/// device data was bad (see SfaPlan::run).
Status sfa_run(const core::SfaProblem& p, const core::SfaData& d, const core::RunContext& ctx,
               const SfaKernels& k);

/// The status of a run whose per-row fault flags (1 = the row used a bad block id) are row_fault:
/// kInvalid naming the first such row's first bad block_table entry (d's pointers, batches and
/// rows readable on the host), else kSuccess. The record is core::sfa_row_fault_record's, the one
/// the CUDA kernels write, so both devices report the same message (ops/sfa/sfa_fault.hpp).
Status sfa_report_faults(const core::SfaProblem& p, const core::SfaData& d,
                         const uint8_t* row_fault);

}  // namespace kvflash::cpu
