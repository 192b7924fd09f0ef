// What an SfaPlan holds, for the library's own use (tests and tools read it through
// SfaPlanAccess; it is not part of the public API).
#pragma once

#include "core/plan_state.hpp"
#include "ops/sfa/sfa_problem.hpp"
#include "kvflash/sfa.hpp"

namespace kvflash {

struct SfaPlan::Impl : core::PlanState<core::SfaProblem, SfaArgs> {};

struct SfaPlanAccess {
  static const SfaPlan::Impl& impl(const SfaPlan& plan) { return *plan.impl_; }
};

}  // namespace kvflash
