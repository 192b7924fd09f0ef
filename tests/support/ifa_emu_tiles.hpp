// The IFA kernel's matrix-engine instantiations on the software model of the tiles
// (support/amx_emu.hpp), for tests/cpu_amx_ifa_test.cpp: the same body as the cpu-amx entry
// (src/cpu/ifa/ifa_kernel_amx.cpp), run on machines without AMX. They need AVX-512 with BF16
// (the vector parts are the avx512 kernel's): call them only where cpu::detected_isa() is at
// least Isa::kAvx512Bf16.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cpu/ifa/ifa_kernel.hpp"

namespace kvflash::testing {

/// Scores and P·V on the model's tiles (the entry's default engine).
extern const cpu::IfaKernels kIfaKernelsEmuTiles;
/// Scores on the model's tiles, P·V on the vector FMAs (the entry's other compile-time choice).
extern const cpu::IfaKernels kIfaKernelsEmuTilesPvFma;
/// Scores and P·V on the model's tiles with at most 3 query heads a tile pass (the entry takes
/// 16): the same bits as kIfaKernelsEmuTiles when head blocking does not matter.
extern const cpu::IfaKernels kIfaKernelsEmuTilesNarrow;

/// The tile half's AVX-512 query and probability packing (pack_query_f32_avx512 and
/// pack_probs_avx512 in src/cpu/amx/amx_avx512-inl.h) and score transpose (transpose16_rows), as
/// this unit compiles them, for direct checks against cpu::amx::pack_query_f32,
/// cpu::amx::pack_probs and a plain transpose. Need AVX-512 (Isa::kAvx512).
void ifa_tiles_pack_query(const float* q, ptrdiff_t q_stride, int m, int d, int pieces,
                          uint16_t* out);
void ifa_tiles_pack_probs(const float* p, ptrdiff_t p_stride, int m, int n, int pieces,
                          uint16_t* out);
void ifa_tiles_transpose16(const float* in, ptrdiff_t in_stride, int64_t c0, int64_t c1, float* out,
                           ptrdiff_t out_stride);

}  // namespace kvflash::testing
