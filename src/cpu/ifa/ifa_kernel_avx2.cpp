// The IFA kernel compiled for the avx2 instruction set (see ifa_kernel-inl.h).
#include <cstdint>
#include <cstring>

#include "core/online_softmax.hpp"
#include "cpu/ifa/ifa_kernel_isa.hpp"
#include "cpu/ifa/ifa_workspace.hpp"
#include "cpu/simd_avx2.h"
#include "ops/ifa/ifa_problem.hpp"

namespace kvflash::cpu::avx2 {
// The order matters: each header uses what the previous ones define.
// clang-format off
#include "cpu/simd_math-inl.h"
#include "cpu/softmax_state.h"
#include "cpu/ifa/ifa_kernel-inl.h"
// clang-format on

const IfaKernels kIfaKernels = {ifa_chunk, ifa_merge, false};
}  // namespace kvflash::cpu::avx2
