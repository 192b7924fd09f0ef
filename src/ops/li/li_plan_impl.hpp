// What a LightningIndexerPlan holds, for the library's own use (tests and tools read it through
// LightningIndexerPlanAccess; it is not part of the public API).
#pragma once

#include <memory>
#include <new>
#include <utility>

#include "core/plan_state.hpp"
#include "kvflash/li.hpp"
#include "ops/li/li_problem.hpp"

namespace kvflash {

struct LightningIndexerPlan::Impl : core::PlanState<core::LiProblem, LightningIndexerArgs> {};

struct LightningIndexerPlanAccess {
  using Impl = LightningIndexerPlan::Impl;
  static const Impl& impl(const LightningIndexerPlan& plan) { return *plan.impl_; }
  /// The plan over impl, or null when out of memory (core/plan_handle.hpp).
  static LightningIndexerPlan* make(std::unique_ptr<Impl> impl) {
    return new (std::nothrow) LightningIndexerPlan(std::move(impl));
  }
};

}  // namespace kvflash
