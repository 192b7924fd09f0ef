// The state behind an IfaPlan: the validated, normalised problem and its workspace size. Other
// parts of the library (the aclnn executor, the CLI) read it through IfaPlan::impl().
#pragma once

#include <cstddef>

#include "core/ifa_problem.hpp"
#include "kvflash/ifa.hpp"

namespace kvflash {

struct IfaPlan::Impl {
  core::IfaProblem problem;
  size_t workspace_size = 0;  ///< cpu::ifa_workspace_size(problem), fixed at creation
};

}  // namespace kvflash
