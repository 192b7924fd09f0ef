// The ScatterPaKvCache CPU backend: one portable kernel (a copy is bound by memory bandwidth, not
// instructions). Two passes: slot_mapping is read and checked whole first (a slot outside the
// cache, or one given twice, fails the call before anything is written), then the tokens' rows
// are copied in parallel, each destination row by exactly one token, so the result does not
// depend on the thread count.
#pragma once

#include "core/backend.hpp"
#include "kvflash/status.hpp"
#include "ops/kv_cache/kv_cache_problem.hpp"

namespace kvflash::cpu {

/// Writes the bound data d on ctx.num_threads workers (0 = default); ctx.workspace holds the
/// duplicate-check table (kv_cache::workspace_size). kInvalid, naming the entries, for a bad
/// slot_mapping; the caches are then unchanged.
Status kv_cache_run(const core::KvCacheProblem& p, const core::KvCacheData& d,
                    const core::RunContext& ctx);

}  // namespace kvflash::cpu
