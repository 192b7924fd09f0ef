// Running one FIA call on a kernel table chosen by the test (the matrix-engine prefill kernels on
// the software model of the tiles, or the CPU's), the way the backend entry runs it.
#pragma once

#include <gtest/gtest.h>

#include "cpu/fia/fia_kernel.hpp"
#include "kvflash/fia.hpp"

namespace kvflash::testing {

/// Validates and binds args as a plan does, then runs FIA kernel table k (the decode branch on the
/// avx512bf16 IFA kernels) as the backend entry does (cpu::fia_entry_run), with a fresh
/// workspace.
::testing::AssertionResult run_fia_kernels(const FiaArgs& args, const cpu::FiaKernels& k);

}  // namespace kvflash::testing
