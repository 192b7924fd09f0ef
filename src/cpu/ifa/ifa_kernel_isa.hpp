// The kernel tables of the IFA per-ISA translation units (ifa_kernel_{scalar,avx2,avx512,amx}.cpp,
// each compiling ifa_kernel-inl.h with its own flags). Only the backend list names them, in an
// entry that is available only when the CPU supports the instruction set.
#pragma once

#include "cpu/ifa/ifa_kernel.hpp"

namespace kvflash::cpu {

namespace scalar {
extern const IfaKernels kIfaKernels;
}  // namespace scalar
namespace avx2 {
extern const IfaKernels kIfaKernels;
}  // namespace avx2
namespace avx512 {
extern const IfaKernels kIfaKernels;
/// The same kernels scoring bf16 K with AVX512-BF16 dot products.
extern const IfaKernels kIfaKernelsBf16;
}  // namespace avx512
namespace amx {
/// The cpu-amx entry's kernels: scores and P·V on the matrix engine's tiles (ifa_tiles-inl.h)
/// where they measured faster (bf16 KV, G >= 5: kTileMinGroup), the AVX512-BF16 vector body elsewhere.
extern const IfaKernels kIfaKernels;
/// Every problem on the tiles (the hardware tests' engine).
extern const IfaKernels kIfaKernelsAllTiles;
}  // namespace amx

}  // namespace kvflash::cpu
