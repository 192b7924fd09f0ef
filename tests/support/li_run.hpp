// Runs the LightningIndexer CPU kernel (src/cpu/li/) on a user-level LiCall, for the tests and
// the benchmark until the operator's own validation, plan and bind exist (issue 21 wiring, by the
// "Adding an operator" recipe of docs/design.md). Assumes a valid call (contiguous outputs).
#pragma once

#include <cstddef>
#include <vector>

#include "cpu/isa.hpp"
#include "cpu/li/li_kernel.hpp"
#include "kvflash/status.hpp"
#include "li_reference.hpp"

namespace kvflash::testing {

/// The kernel's view of a call: strides and pointers of every tensor.
void li_bind(const reference::LiCall& call, cpu::LiParams* p, cpu::LiData* d);

/// The kernel table of isa's backend entry (cpu/li/li_kernel_isa.hpp), as the backend list has it.
const cpu::LiKernels& li_kernels(cpu::Isa isa);

/// li_run of p on d with isa's kernels (isa must be supported) and num_threads (0 = default).
Status li_run_isa(const cpu::LiParams& p, const cpu::LiData& d, cpu::Isa isa, int num_threads,
                  void* ws);

/// li_run on call's tensors with isa and num_threads (0 = default), in a workspace of
/// li_workspace_size bytes taken from *ws (grown as needed, never shrunk).
Status li_run_call(const reference::LiCall& call, cpu::Isa isa, int num_threads,
                   std::vector<std::byte>* ws);

/// li_run_call with kernel table k instead of an ISA level's (the matrix-engine scorer on the
/// software model of the tiles, support/li_emu_tiles.hpp).
Status li_run_call(const reference::LiCall& call, const cpu::LiKernels& k, int num_threads,
                   std::vector<std::byte>* ws);

}  // namespace kvflash::testing
