// SFA's report of bad device data, written once for every backend: the CPU run
// (sfa::resolve_lengths, cpu::sfa_report_faults) and the CUDA kernels (cuda/sfa/sfa_kernel.cu)
// describe the first bad entry with one core::FaultRecord (core/device_fault.hpp), filled by the
// same KVFLASH_HD functions (core::sfa_resolve_lengths, core::sfa_row_fault_record), and this
// turns it into the status and message, so both devices report the same text.
#pragma once

#include <string>

#include "core/device_fault.hpp"
#include "kvflash/status.hpp"
#include "ops/sfa/sfa_problem.hpp"

namespace kvflash::sfa {

/// "actual_seq_lengths_kv[1] (70) must be in [0, key S2 = 64]" / "block_table[b][slot] (id) is
/// used by query row r and must be a block id in [0, n); ...": the message of a record of kind
/// kFaultQueryLength, kFaultKvLength or kFaultBlockId for problem p (without the operator prefix).
std::string sfa_fault_message(const core::SfaProblem& p, const core::FaultRecord& r);

/// The status of record r: kSuccess for no fault; kInvalid with sfa_fault_message(p, r), the CPU
/// backend's message; kRuntime (core::unreadable_fault) for a record that is not SFA's. The CUDA
/// entry's fault hook (core::Backend::fault_status).
Status sfa_fault_status(const core::SfaProblem& p, const core::FaultRecord& r);

}  // namespace kvflash::sfa
