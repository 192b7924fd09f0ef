// The kernel tables of the LightningIndexer per-ISA translation units
// (li_kernel_{scalar,avx2,avx512,amx}.cpp, each compiling li_kernel-inl.h with its own flags). Only
// the backend list (and the tests' per-ISA runner) names them, in an entry that is available only
// when the CPU supports the instruction set.
#pragma once

#include "cpu/li/li_kernel.hpp"

namespace kvflash::cpu {

namespace scalar {
extern const LiKernels kLiKernels;
}  // namespace scalar
namespace avx2 {
extern const LiKernels kLiKernels;
}  // namespace avx2
namespace avx512 {
extern const LiKernels kLiKernels;
/// The same, scoring bf16 inputs with AVX512-BF16 dot products (vdpbf16ps): Isa::kAvx512Bf16.
extern const LiKernels kLiKernelsBf16;
}  // namespace avx512
namespace amx {
/// bf16 inputs scored on the matrix engine's tiles (li_tiles-inl.h), fp16 as avx512: Isa::kAmx.
extern const LiKernels kLiKernels;
}  // namespace amx

}  // namespace kvflash::cpu
