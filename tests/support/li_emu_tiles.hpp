// The LightningIndexer's matrix-engine scorer on the software model of the tiles
// (support/amx_emu.hpp), for tests/li_kernel_test.cpp: the same body as the cpu-amx entry
// (src/cpu/li/li_kernel_amx.cpp), run on machines without AMX. It needs AVX-512 with BF16 (the
// vector parts are the avx512 kernel's): call it only where cpu::detected_isa() is at least
// Isa::kAvx512Bf16.
#pragma once

#include "cpu/li/li_kernel.hpp"

namespace kvflash::testing {

/// The cpu-amx entry's indexer kernels with the tiles of the model.
extern const cpu::LiKernels kLiKernelsEmuTiles;

}  // namespace kvflash::testing
