// The SFA CPU backend entry: binds a run's tensors, derives the lengths from the device data,
// runs the per-ISA task function on the parallel loop and reports bad device data. No validation
// beyond the device data, no allocation, no I/O.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/sfa_problem.hpp"
#include "cpu/isa.hpp"
#include "kvflash/sfa.hpp"
#include "kvflash/status.hpp"

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
/// hp = head_block rounded up to 16 (the bf16 path keeps 16 heads per vector).
struct SfaScratch {
  float* q;      ///< head_block x 576
  float* kt;     ///< kSfaTile x 576
  float* vt;     ///< kSfaTile x 512 (unused when V aliases K)
  float* s;      ///< head_block x kSfaTile
  float* acc;    ///< head_block x 512
  float* st;     ///< head_block x (max, sum)
  int64_t* pos;  ///< 2 x kSfaTile (the bf16 path gathers the next tile's positions ahead)
  // The AVX512-BF16 path (sfa_kernel_bf16-inl.h):
  uint32_t* qp;   ///< 288 x hp: the query as bf16 pairs, heads innermost
  float* st_t;    ///< kSfaTile x hp: scores with heads innermost, before the transpose into s
  uint16_t* pp;   ///< head_block x kSfaTile: the weights P rounded to bf16
  uint32_t* vp;   ///< kSfaTile/2 x 512: V as bf16 pairs of consecutive tokens
  float* alpha;   ///< head_block: the tile's rescale factor of each head
};

/// Whether a call runs the AVX512-BF16 path (when the ISA is kAvx512Bf16): bf16 in and out, unit
/// stride along every head dim. A function of the call only, never of the thread count.
bool sfa_bf16_path(const core::SfaProblem& p, const core::SfaData& d);

/// Bytes of workspace sfa_run needs for p: lanes of scratch and the run-time lengths and row
/// map. A function of p only (not of the ISA or the thread count).
size_t sfa_workspace_size(const core::SfaProblem& p);

/// Computes attention_out (and the softmax outputs) of p for args' tensors with isa's kernels (isa
/// must be supported) on num_threads workers (0 = default). ws: at least sfa_workspace_size(p)
/// bytes, any alignment. Returns kInvalid when device data was bad (see SfaPlan::run).
Status sfa_run(const core::SfaProblem& p, const SfaArgs& args, Isa isa, int num_threads, void* ws);

}  // namespace kvflash::cpu
