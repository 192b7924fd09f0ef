// LightningIndexer scorer, portable scalar path (any x86-64). The body is li_kernel-inl.h.
#include <cstdint>
#include <cstring>

#include "cpu/li/li_kernel.hpp"
#include "cpu/li/li_kernel_isa.hpp"
#include "cpu/simd_scalar.h"

namespace kvflash::cpu::scalar {
// The order matters: each file uses the ones before it.
// clang-format off
#include "cpu/simd_math-inl.h"
#include "cpu/li/li_kernel-inl.h"
// clang-format on

const LiKernels kLiKernels = {li_body::score_rows_f32, li_body::score_rows_f32};
}  // namespace kvflash::cpu::scalar
