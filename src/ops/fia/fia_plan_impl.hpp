// What a FiaPlan holds, for the library's own use (tests and tools read it through
// FiaPlanAccess; it is not part of the public API).
#pragma once

#include <memory>
#include <new>
#include <utility>

#include "core/plan_state.hpp"
#include "kvflash/fia.hpp"
#include "ops/fia/fia_problem.hpp"

namespace kvflash {

struct FiaPlan::Impl : core::PlanState<core::FiaProblem, FiaArgs> {};

struct FiaPlanAccess {
  using Impl = FiaPlan::Impl;
  static const Impl& impl(const FiaPlan& plan) { return *plan.impl_; }
  /// The plan over impl, or null when out of memory (core/plan_handle.hpp).
  static FiaPlan* make(std::unique_ptr<Impl> impl) {
    return new (std::nothrow) FiaPlan(std::move(impl));
  }
};

}  // namespace kvflash
