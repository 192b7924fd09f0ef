// What an IfaPlan holds, for the library's own use (the aclnn shim, the CLI and tests read it
// through IfaPlanAccess; it is not part of the public API).
#pragma once

#include "core/plan_access.hpp"
#include "core/plan_state.hpp"
#include "kvflash/ifa.hpp"
#include "ops/ifa/ifa_problem.hpp"

namespace kvflash {

struct IfaPlan::Impl : core::PlanState<core::IfaProblem, IfaArgs> {};

using IfaPlanAccess = core::PlanAccess<IfaPlan>;

}  // namespace kvflash
