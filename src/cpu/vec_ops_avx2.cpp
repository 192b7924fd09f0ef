// vec_ops.hpp primitives compiled for the avx2 instruction set.
#include <cstddef>
#include <cstdint>

#include "cpu/simd_avx2.h"

namespace kvflash::cpu::avx2 {
#include "cpu/simd_math-inl.h"
#include "cpu/vec_ops-inl.h"
}  // namespace kvflash::cpu::avx2
