// vec_ops.hpp primitives compiled for the avx2 instruction set.
#include <cstddef>
#include <cstdint>

#include "cpu/simd_avx2.h"

namespace kvflash::cpu::avx2 {
// The order matters: each header uses what the previous ones define.
// clang-format off
#include "cpu/simd_math-inl.h"
#include "support/vec_ops-inl.h"
// clang-format on
}  // namespace kvflash::cpu::avx2
