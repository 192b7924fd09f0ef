// LightningIndexer scorer on the matrix engine (li_kernel-inl.h with its tile half,
// li_tiles-inl.h, on the CPU's tiles): the cpu-amx backend entry, run only at Isa::kAmx. bf16
// inputs score on the tiles; fp16 inputs and everything around the dot products (staging, the
// weights, the order keys) are the avx512 kernel's code, compiled here in a namespace of its own.
#include <cstdint>
#include <cstring>
#include <utility>

// GCC 12's intrinsic headers trip -W(maybe-)uninitialized on their internal _mm*_undefined
// operands once inlined here (a known false positive, as in li_kernel_avx512.cpp).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "cpu/amx/amx_tile.hpp"
#include "cpu/li/li_kernel.hpp"
#include "cpu/li/li_kernel_isa.hpp"
#include "cpu/simd_avx512.h"

#define KVFLASH_LI_BF16_DOT 1
#define KVFLASH_LI_TILES 1  // the matrix-engine scorer (li_tiles-inl.h)
namespace kvflash::cpu::avx512::amx_li {
// The order matters: each file uses the ones before it.
// clang-format off
#include "cpu/simd_math-inl.h"
#include "cpu/li/li_kernel-inl.h"
// clang-format on
}  // namespace kvflash::cpu::avx512::amx_li

namespace kvflash::cpu::amx {
const LiKernels kLiKernels = {avx512::amx_li::li_body::score_rows_f32,
                              avx512::amx_li::li_body::LiTiles<HwTiles>::score_rows};
}  // namespace kvflash::cpu::amx
