// Running one SFA call on a kernel table chosen by the test (the matrix-engine body on the
// software model of the tiles, support/sfa_emu_tiles.hpp, or any entry's kernels), the way a
// backend entry runs it.
#pragma once

#include <gtest/gtest.h>

#include "cpu/sfa/sfa_kernel.hpp"
#include "kvflash/sfa.hpp"

namespace kvflash::testing {

/// Validates and binds args as a plan does, then runs kernel table k on them (cpu::sfa_run) with a
/// fresh workspace at args.num_threads; a failure names the status and last_error_message().
::testing::AssertionResult run_sfa_kernels(const SfaArgs& args, const cpu::SfaKernels& k);

}  // namespace kvflash::testing
