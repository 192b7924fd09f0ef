// The IFA CPU kernel entry: pure compute over (problem, workspace). No validation, no allocation,
// no I/O. The problem must come from the validator (src/ifa/ifa_validate.hpp), and every block id
// it references must already have been checked.
#pragma once

#include <cstddef>

#include "core/ifa_problem.hpp"

namespace kvflash::cpu {

/// Bytes of workspace ifa_run needs for p (split-KV partials, dequantised scales, ...). A function
/// of the problem only, so phase 1 and phase 2 always agree.
size_t ifa_workspace_size(const core::IfaProblem& p);

/// Computes the attention output (and LSE) of p with the active ISA. ws: at least
/// ifa_workspace_size(p) bytes, any alignment.
void ifa_run(const core::IfaProblem& p, void* ws);

}  // namespace kvflash::cpu
