// vec_ops.hpp primitives compiled for the scalar instruction set.
#include <cstddef>
#include <cstdint>

#include "cpu/simd_scalar.h"

namespace kvflash::cpu::scalar {
#include "cpu/simd_math-inl.h"
#include "cpu/vec_ops-inl.h"
}  // namespace kvflash::cpu::scalar
