// The IFA kernel's matrix-engine instantiations on the software model of the tiles
// (support/amx_emu.hpp), for tests/cpu_amx_ifa_test.cpp: the same body as the cpu-amx entry
// (src/cpu/ifa/ifa_kernel_amx.cpp), run on machines without AMX. They need AVX-512 with BF16
// (the vector parts are the avx512 kernel's): call them only where cpu::detected_isa() is at
// least Isa::kAvx512Bf16.
#pragma once

#include "cpu/ifa/ifa_kernel.hpp"

namespace kvflash::testing {

/// Scores and P·V on the model's tiles (the entry's default engine).
extern const cpu::IfaKernels kIfaKernelsEmuTiles;
/// Scores on the model's tiles, P·V on the vector FMAs (the entry's other compile-time choice).
extern const cpu::IfaKernels kIfaKernelsEmuTilesPvFma;
/// Scores and P·V on the model's tiles with at most 3 query heads a tile pass (the entry takes
/// 16): the same bits as kIfaKernelsEmuTiles when head blocking does not matter.
extern const cpu::IfaKernels kIfaKernelsEmuTilesNarrow;

}  // namespace kvflash::testing
