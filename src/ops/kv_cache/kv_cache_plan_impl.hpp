// What a ScatterPaKvCachePlan holds, for the library's own use (the plan handle,
// src/core/plan_handle.hpp, reaches it through ScatterPaKvCachePlanAccess; it is not part of the
// public API).
#pragma once

#include "core/plan_access.hpp"
#include "core/plan_state.hpp"
#include "kvflash/kv_cache.hpp"
#include "ops/kv_cache/kv_cache_problem.hpp"

namespace kvflash {

struct ScatterPaKvCachePlan::Impl : core::PlanState<core::KvCacheProblem, ScatterPaKvCacheArgs> {};

using ScatterPaKvCachePlanAccess = core::PlanAccess<ScatterPaKvCachePlan>;

}  // namespace kvflash
