// The merge_attention_states CPU backend: one portable kernel, no instruction-set variants.
//
// The merge reads K partial rows of D values and does a multiply and an add per value: it is
// bound by memory bandwidth, not arithmetic, and the compiler's baseline SSE2 vectorisation of
// the inner loop keeps up with memory. It is deliberately compiled for baseline x86-64 (no FMA,
// kvflash's own exp): the output bits are then the same on every x86-64 CPU, so ranks of a
// context-parallel group on different hardware merge identically.
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
