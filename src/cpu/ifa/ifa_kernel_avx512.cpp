// The IFA kernel compiled for the avx512 instruction set (see ifa_kernel-inl.h).
#include <cstdint>
#include <cstring>

#include "core/online_softmax.hpp"
#include "cpu/ifa/ifa_kernel_isa.hpp"
#include "cpu/ifa/ifa_workspace.hpp"
#include "cpu/simd_avx512.h"
#include "ops/ifa/ifa_problem.hpp"

namespace kvflash::cpu::avx512 {
// The order matters: each header uses what the previous ones define.
// clang-format off
#include "cpu/simd_math-inl.h"
#include "cpu/softmax_state.h"
#define KVFLASH_IFA_BF16_DOT 1  // AVX512-BF16 scores for bf16 K where the CPU has them
#include "cpu/ifa/ifa_kernel-inl.h"
// clang-format on

const IfaKernels kIfaKernels = {ifa_chunk, ifa_merge, false};
const IfaKernels kIfaKernelsBf16 = {ifa_chunk, ifa_merge, true};
}  // namespace kvflash::cpu::avx512
