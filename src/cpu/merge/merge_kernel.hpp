// The merge_attention_states CPU backend: one entry whose bits do not depend on the CPU.
//
// The merge reads K partial rows of D values and does a multiply and an add per value: it is
// bound by memory bandwidth, not arithmetic. The statistics (max, weights, L, LSE, kvflash's own
// exp) are computed in baseline x86-64 code (no FMA); the weighted sum of contiguous rows runs the
// active level's vector row kernel (merge_rows.hpp: AVX2 or AVX-512, compiled without FMA
// contraction, the same fp32 operations in the same order), other layouts and the scalar level
// the portable loop. The output bits are the same on every x86-64 CPU (Merge tests'
// EveryIsaLevelGivesThePortableBits), so ranks of a context-parallel group on different hardware
// merge identically.
#pragma once

#include "core/backend.hpp"
#include "kvflash/status.hpp"
#include "ops/merge/merge_problem.hpp"

namespace kvflash::cpu {

/// Merges the bound data d on ctx.num_threads workers (0 = default); no workspace. Never fails on
/// data: non-finite values follow IEEE arithmetic (kvflash/merge.hpp).
Status merge_run(const core::MergeProblem& p, const core::MergeData& d,
                 const core::RunContext& ctx);

}  // namespace kvflash::cpu
