// What an IfaPlan holds, for the library's own use (the aclnn shim, the CLI and tests read it
// through IfaPlanAccess; it is not part of the public API).
#pragma once

#include <memory>
#include <new>
#include <utility>

#include "ops/ifa/ifa_problem.hpp"
#include "core/plan_state.hpp"
#include "kvflash/ifa.hpp"

namespace kvflash {

struct IfaPlan::Impl : core::PlanState<core::IfaProblem, IfaArgs> {};

struct IfaPlanAccess {
  using Impl = IfaPlan::Impl;
  static const Impl& impl(const IfaPlan& plan) { return *plan.impl_; }
  /// The plan over impl, or null when out of memory (core/plan_handle.hpp).
  static IfaPlan* make(std::unique_ptr<Impl> impl) {
    return new (std::nothrow) IfaPlan(std::move(impl));
  }
};

}  // namespace kvflash
