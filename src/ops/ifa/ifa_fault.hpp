// IFA's report of bad device data, written once for every backend: the CPU prologue
// (cpu/ifa/ifa_workspace.cpp) and the CUDA kernels (cuda/ifa/ifa_kernel.cu) describe the first
// faulted batch with one core::FaultRecord (core/device_fault.hpp), and this turns it into the
// status and message, so both devices report the same text.
#pragma once

#include <string>

#include "core/device_fault.hpp"
#include "kvflash/status.hpp"

namespace kvflash::ifa {

/// "block_table[b][slot] (id) is not a valid block id: ..." / "kv_padding_size (pad) puts batch
/// b's ...": the message of a record of kind kFaultBlockId / kFaultPaddingPastMask (without the
/// operator prefix).
std::string ifa_fault_message(const core::FaultRecord& r);

/// The status of record r: kSuccess for no fault; kInvalid with ifa_fault_message(r), the CPU
/// backend's message; kRuntime (core::unreadable_fault) for a record that is not IFA's. The CUDA
/// entry's fault hook (core::Backend::fault_status).
Status ifa_fault_status(const core::FaultRecord& r);

}  // namespace kvflash::ifa
