// The kernel tables of the SFA per-ISA translation units (sfa_kernel_{scalar,avx2,avx512,amx}.cpp,
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
namespace amx {
/// The cpu-amx entry's kernels: gather, scores and P·V on the matrix engine's tiles
/// (sfa_tiles-inl.h) for bf16, where they measured faster; fp16 on the avx512 vector body.
extern const SfaKernels kSfaKernels;
/// Every problem on the tiles (the hardware tests' engine).
extern const SfaKernels kSfaKernelsAllTiles;
}  // namespace amx

}  // namespace kvflash::cpu
