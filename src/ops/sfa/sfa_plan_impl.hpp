// What an SfaPlan holds, for the library's own use (tests and tools read it through
// SfaPlanAccess; it is not part of the public API).
#pragma once

#include <memory>
#include <new>
#include <utility>

#include "core/plan_state.hpp"
#include "ops/sfa/sfa_problem.hpp"
#include "kvflash/sfa.hpp"

namespace kvflash {

struct SfaPlan::Impl : core::PlanState<core::SfaProblem, SfaArgs> {};

struct SfaPlanAccess {
  using Impl = SfaPlan::Impl;
  static const Impl& impl(const SfaPlan& plan) { return *plan.impl_; }
  /// The plan over impl, or null when out of memory (core/plan_handle.hpp).
  static SfaPlan* make(std::unique_ptr<Impl> impl) {
    return new (std::nothrow) SfaPlan(std::move(impl));
  }
};

}  // namespace kvflash
