// What an SfaPlan holds: the validated problem and its schedule (tests and the aclnn shim read it).
#pragma once

#include <cstddef>

#include "core/sfa_problem.hpp"
#include "cpu/sfa_kernel.hpp"
#include "kvflash/sfa.hpp"

namespace kvflash {

struct SfaPlan::Impl {
  core::SfaProblem problem;
  cpu::SfaSchedule schedule;
  size_t workspace_size = 0;
};

}  // namespace kvflash
