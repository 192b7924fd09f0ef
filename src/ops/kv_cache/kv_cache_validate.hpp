// ScatterPaKvCache: argument validation (the only place that rejects a cache write), the plan's
// copy of the arguments, the match of a run against it, and the binding of its pointers.
#pragma once

#include <cstddef>

#include "kvflash/kv_cache.hpp"
#include "kvflash/status.hpp"
#include "ops/kv_cache/kv_cache_problem.hpp"

namespace kvflash::kv_cache {

inline constexpr const char* kOpName = "scatter_pa_kv_cache";

/// Checks the arguments' metadata (required tensors, what is out of scope, dtypes, shapes,
/// devices, view geometry) and fills *problem. Reads no tensor.
Status validate(const ScatterPaKvCacheArgs& args, core::KvCacheProblem* problem);

/// args with every data pointer cleared: what a plan keeps of its creation arguments.
ScatterPaKvCacheArgs strip_data(const ScatterPaKvCacheArgs& args,
                                const core::KvCacheProblem& problem);

/// kInvalid unless args has plan's metadata; kNullPtr if a tensor holding elements has no data.
Status check_matches_plan(const ScatterPaKvCacheArgs& plan, const ScatterPaKvCacheArgs& args);

/// The pointers of one (matched) run.
void bind_data(const core::KvCacheProblem& p, const ScatterPaKvCacheArgs& args,
               core::KvCacheData* d);

/// "T=5 KV_N=8 Dk=128 Dv=128 slots=4096 fp16": p's shape for KVFLASH_VERBOSE=dispatch, into buf
/// (size bytes, truncated; no allocation).
void describe(const core::KvCacheProblem& p, char* buf, size_t size);

/// Bytes of workspace of p (the duplicate-check table).
size_t workspace_size(const core::KvCacheProblem& p);

}  // namespace kvflash::kv_cache
