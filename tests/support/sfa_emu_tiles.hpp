// The SFA kernel's matrix-engine instantiations on the software model of the tiles
// (support/amx_emu.hpp), for tests/cpu_amx_sfa_test.cpp: the same body as the cpu-amx entry
// (src/cpu/sfa/sfa_kernel_amx.cpp), run on machines without AMX. They need AVX-512 with BF16
// (the vector parts are the avx512 kernel's, compiled with the AMX unit's flags): call them only
// where cpu::detected_isa() is at least Isa::kAvx512Bf16.
#pragma once

#include "cpu/sfa/sfa_kernel.hpp"

namespace kvflash::testing {

/// Gather, scores and P·V on the model's tiles, passes of up to 16 heads (the entry's engine).
extern const cpu::SfaKernels kSfaKernelsEmuTiles;
/// The same with at most 3 query heads a tile pass: the same bits as kSfaKernelsEmuTiles when
/// head blocking does not matter.
extern const cpu::SfaKernels kSfaKernelsEmuTilesNarrow;

}  // namespace kvflash::testing
