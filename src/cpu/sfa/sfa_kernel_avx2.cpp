// SFA kernel, AVX2 + FMA + F16C path (8 fp32 lanes). The body is sfa_kernel-inl.h.
#include <cstdint>
#include <cstring>

// GCC 12's intrinsic headers trip -W(maybe-)uninitialized on their internal _mm*_undefined
// operands once inlined here (a known false positive); nothing in this unit is uninitialised.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "core/online_softmax.hpp"
#include "cpu/sfa/sfa_kernel.hpp"
#include "cpu/sfa/sfa_kernel_isa.hpp"
#include "cpu/simd_avx2.h"
#include "ops/sfa/sfa_problem.hpp"

namespace kvflash::cpu::avx2 {
// The order matters: each file uses the ones before it.
// clang-format off
#include "cpu/simd_math-inl.h"
#include "cpu/softmax_state.h"
#include "cpu/sfa/sfa_kernel-inl.h"
// clang-format on

const SfaKernels kSfaKernels = {sfa_body::run_one<>};
}  // namespace kvflash::cpu::avx2
