// The FIA CPU backend entry: reads the device data in stream order (left padding, block ids:
// fia::resolve_batches), points the kernel's parameters at the run's batches and padding rows in
// the workspace, runs one instruction set's kernels (the entry's FiaKernels) and reports bad
// device data. No validation beyond the device data, no allocation when the data is good.
#pragma once

#include <cstddef>

#include "core/backend.hpp"
#include "cpu/fia/fia_kernel.hpp"
#include "cpu/ifa/ifa_kernel.hpp"
#include "kvflash/status.hpp"
#include "ops/fia/fia_problem.hpp"

namespace kvflash::cpu {

/// Bytes of workspace fia_entry_run needs for p: its own region (batches, padding rows, list
/// pointers, fault flags) and the kernel's (fia_workspace_size), a function of p only; IFA's
/// (ifa_workspace_size) when p runs on IFA's kernels.
size_t fia_entry_workspace_size(const core::FiaProblem& p);

/// Runs p on d with kernels k (D4's decode branch on IFA's problem: ifa_run with ik). kInvalid
/// (naming the first faulted batch) when a block id a length references is outside [0, num_blocks):
/// that batch's rows are NaN (int8: 0), its LSE NaN; every other batch is computed.
Status fia_entry_run(const core::FiaProblem& p, const core::FiaData& d, const core::RunContext& ctx,
                     const FiaKernels& k, const IfaKernels& ik);

}  // namespace kvflash::cpu
