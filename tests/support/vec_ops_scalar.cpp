// vec_ops.hpp primitives compiled for the scalar instruction set.
#include <cstddef>
#include <cstdint>

#include "cpu/simd_scalar.h"

namespace kvflash::cpu::scalar {
// The order matters: each header uses what the previous ones define.
// clang-format off
#include "cpu/simd_math-inl.h"
#include "support/vec_ops-inl.h"
// clang-format on
}  // namespace kvflash::cpu::scalar
