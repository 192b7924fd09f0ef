// What a LightningIndexerPlan holds, for the library's own use (tests and tools read it through
// LightningIndexerPlanAccess; it is not part of the public API).
#pragma once

#include "core/plan_access.hpp"
#include "core/plan_state.hpp"
#include "kvflash/li.hpp"
#include "ops/li/li_problem.hpp"

namespace kvflash {

struct LightningIndexerPlan::Impl : core::PlanState<core::LiProblem, LightningIndexerArgs> {};

using LightningIndexerPlanAccess = core::PlanAccess<LightningIndexerPlan>;

}  // namespace kvflash
