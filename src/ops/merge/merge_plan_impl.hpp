// What a MergePlan holds, for the library's own use (the plan handle, src/core/plan_handle.hpp,
// reaches it through MergePlanAccess; it is not part of the public API).
#pragma once

#include <memory>
#include <new>
#include <utility>

#include "ops/merge/merge_problem.hpp"
#include "core/plan_state.hpp"
#include "kvflash/merge.hpp"

namespace kvflash {

struct MergePlan::Impl : core::PlanState<core::MergeProblem, MergeArgs> {};

struct MergePlanAccess {
  using Impl = MergePlan::Impl;
  static const Impl& impl(const MergePlan& plan) { return *plan.impl_; }
  /// The plan over impl, or null when out of memory (core/plan_handle.hpp).
  static MergePlan* make(std::unique_ptr<Impl> impl) {
    return new (std::nothrow) MergePlan(std::move(impl));
  }
};

}  // namespace kvflash
