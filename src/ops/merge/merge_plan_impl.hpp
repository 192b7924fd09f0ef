// What a MergePlan holds, for the library's own use (tests read it through MergePlanAccess; it is
// not part of the public API).
#pragma once

#include "ops/merge/merge_problem.hpp"
#include "core/plan_state.hpp"
#include "kvflash/merge.hpp"

namespace kvflash {

struct MergePlan::Impl : core::PlanState<core::MergeProblem, MergeArgs> {};

struct MergePlanAccess {
  static const MergePlan::Impl& impl(const MergePlan& plan) { return *plan.impl_; }
};

}  // namespace kvflash
