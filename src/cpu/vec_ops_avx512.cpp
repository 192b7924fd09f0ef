// vec_ops.hpp primitives compiled for the avx512 instruction set.
#include <cstddef>
#include <cstdint>

#include "cpu/simd_avx512.h"

namespace kvflash::cpu::avx512 {
#include "cpu/simd_math-inl.h"
#include "cpu/vec_ops-inl.h"
}  // namespace kvflash::cpu::avx512
