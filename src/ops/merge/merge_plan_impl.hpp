// What a MergePlan holds, for the library's own use (the plan handle, src/core/plan_handle.hpp,
// reaches it through MergePlanAccess; it is not part of the public API).
#pragma once

#include "core/plan_access.hpp"
#include "core/plan_state.hpp"
#include "kvflash/merge.hpp"
#include "ops/merge/merge_problem.hpp"

namespace kvflash {

struct MergePlan::Impl : core::PlanState<core::MergeProblem, MergeArgs> {};

using MergePlanAccess = core::PlanAccess<MergePlan>;

}  // namespace kvflash
