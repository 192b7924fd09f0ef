// The kernel tables of the SFA per-ISA translation units (sfa_kernel_{scalar,avx2,avx512}.cpp,
// each compiling sfa_kernel-inl.h with its own flags). Only the backend list names them, in an
// entry that is available only when the CPU supports the instruction set.
#pragma once

#include "cpu/sfa/sfa_kernel.hpp"

namespace kvflash::cpu {

namespace scalar {
extern const SfaKernels kSfaKernels;
}  // namespace scalar
namespace avx2 {
extern const SfaKernels kSfaKernels;
}  // namespace avx2
namespace avx512 {
extern const SfaKernels kSfaKernels;
}  // namespace avx512

}  // namespace kvflash::cpu
