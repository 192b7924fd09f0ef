// What an IfaPlan holds, for the library's own use (the aclnn shim, the CLI and tests read it
// through IfaPlanAccess; it is not part of the public API).
#pragma once

#include "ops/ifa/ifa_problem.hpp"
#include "core/plan_state.hpp"
#include "kvflash/ifa.hpp"

namespace kvflash {

struct IfaPlan::Impl : core::PlanState<core::IfaProblem, IfaArgs> {};

struct IfaPlanAccess {
  static const IfaPlan::Impl& impl(const IfaPlan& plan) { return *plan.impl_; }
};

}  // namespace kvflash
