// Per-ISA SFA kernel entry points (sfa_kernel_{scalar,avx2,avx512}.cpp). Only sfa_kernel.cpp calls
// them, after checking that the CPU supports the ISA.
#pragma once

#include "core/sfa_problem.hpp"
#include "cpu/sfa_kernel.hpp"

namespace kvflash::cpu {

/// Runs one task (see sfa_body::run_one) in the 64-byte aligned scratch slot `slot`.
using SfaTaskFn = void (*)(const core::SfaProblem& p, const SfaSchedule& s,
                           const SfaScratchLayout& lay, float* slot, int64_t task);

void sfa_task_scalar(const core::SfaProblem& p, const SfaSchedule& s, const SfaScratchLayout& lay,
                     float* slot, int64_t task);
void sfa_task_avx2(const core::SfaProblem& p, const SfaSchedule& s, const SfaScratchLayout& lay,
                   float* slot, int64_t task);
void sfa_task_avx512(const core::SfaProblem& p, const SfaSchedule& s, const SfaScratchLayout& lay,
                     float* slot, int64_t task);

}  // namespace kvflash::cpu
