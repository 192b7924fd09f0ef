// The library's access to a public plan class's state: Plan::Impl (defined in each operator's
// plan-impl header, e.g. src/ops/ifa/ifa_plan_impl.hpp) behind the plan's private impl_ pointer.
// Each public plan class befriends PlanAccess; the plan wrapper (core/plan_handle.hpp), tests and
// tools reach the state through it. Not part of the public API.
#pragma once

#include <memory>
#include <new>
#include <utility>

namespace kvflash::core {

template <class Plan>
struct PlanAccess {
  using Impl = typename Plan::Impl;
  static const Impl& impl(const Plan& plan) { return *plan.impl_; }
  /// The plan over impl, or null when out of memory (core/plan_handle.hpp).
  static Plan* make(std::unique_ptr<Impl> impl) { return new (std::nothrow) Plan(std::move(impl)); }
};

}  // namespace kvflash::core
