// SFA kernel, portable scalar path (any x86-64). The body is sfa_kernel-inl.h.
#include <cstdint>
#include <cstring>

#include "core/online_softmax.hpp"
#include "cpu/sfa/sfa_kernel.hpp"
#include "cpu/sfa/sfa_kernel_isa.hpp"
#include "cpu/simd_scalar.h"
#include "ops/sfa/sfa_problem.hpp"

namespace kvflash::cpu::scalar {
// The order matters: each file uses the ones before it.
// clang-format off
#include "cpu/simd_math-inl.h"
#include "cpu/softmax_state.h"
#include "cpu/sfa/sfa_kernel-inl.h"
// clang-format on

const SfaKernels kSfaKernels = {sfa_body::run_one<>};
}  // namespace kvflash::cpu::scalar
