// Per-ISA SFA kernel entry points (sfa_kernel_{scalar,avx2,avx512}.cpp). Only sfa_kernel.cpp calls
// them, after checking that the CPU supports the ISA.
#pragma once

#include "ops/sfa/sfa_problem.hpp"
#include "cpu/sfa/sfa_kernel.hpp"

namespace kvflash::cpu {

/// Runs task `task` of schedule s (query row task / blocks, head block task % blocks) with the
/// participant's scratch w. A row whose selected positions use a bad block id is not read: its
/// outputs become NaN and row_fault[row] is set.
using SfaTaskFn = void (*)(const core::SfaProblem& p, const core::SfaData& d, const SfaSchedule& s,
                           const SfaScratch& w, uint8_t* row_fault, int64_t task);

void sfa_task_scalar(const core::SfaProblem& p, const core::SfaData& d, const SfaSchedule& s,
                     const SfaScratch& w, uint8_t* row_fault, int64_t task);
void sfa_task_avx2(const core::SfaProblem& p, const core::SfaData& d, const SfaSchedule& s,
                   const SfaScratch& w, uint8_t* row_fault, int64_t task);
void sfa_task_avx512(const core::SfaProblem& p, const core::SfaData& d, const SfaSchedule& s,
                     const SfaScratch& w, uint8_t* row_fault, int64_t task);

}  // namespace kvflash::cpu
