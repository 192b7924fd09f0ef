// vec_ops.hpp primitives compiled for the avx512 instruction set.
#include <cstddef>
#include <cstdint>

#include "cpu/simd_avx512.h"

namespace kvflash::cpu::avx512 {
// The order matters: each header uses what the previous ones define.
// clang-format off
#include "cpu/simd_math-inl.h"
#include "support/vec_ops-inl.h"
// clang-format on
}  // namespace kvflash::cpu::avx512
