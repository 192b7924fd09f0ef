// What an SfaPlan holds, for the library's own use (tests and tools read it through
// SfaPlanAccess; it is not part of the public API).
#pragma once

#include "core/plan_access.hpp"
#include "core/plan_state.hpp"
#include "kvflash/sfa.hpp"
#include "ops/sfa/sfa_problem.hpp"

namespace kvflash {

struct SfaPlan::Impl : core::PlanState<core::SfaProblem, SfaArgs> {};

using SfaPlanAccess = core::PlanAccess<SfaPlan>;

}  // namespace kvflash
