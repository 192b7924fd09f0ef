// What a FiaPlan holds, for the library's own use (tests and tools read it through
// FiaPlanAccess; it is not part of the public API).
#pragma once

#include "core/plan_access.hpp"
#include "core/plan_state.hpp"
#include "kvflash/fia.hpp"
#include "ops/fia/fia_problem.hpp"

namespace kvflash {

struct FiaPlan::Impl : core::PlanState<core::FiaProblem, FiaArgs> {};

using FiaPlanAccess = core::PlanAccess<FiaPlan>;

}  // namespace kvflash
