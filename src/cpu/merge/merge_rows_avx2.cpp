// The merge's row kernel for avx2; the body is merge_rows-inl.h. Compiled with -ffp-contract=off
// (CMakeLists.txt) so no x * w + acc becomes an FMA: the bits are the portable kernel's.
#include <cstddef>
#include <cstdint>

#include "cpu/merge/merge_rows.hpp"
#include "cpu/simd_avx2.h"

namespace kvflash::cpu::avx2 {
// clang-format off
#include "cpu/simd_math-inl.h"
#include "cpu/merge/merge_rows-inl.h"
// clang-format on
}  // namespace kvflash::cpu::avx2
