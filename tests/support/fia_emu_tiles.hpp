// The FIA prefill kernel's matrix-engine instantiation on the software model of the tiles
// (support/amx_emu.hpp), for tests/cpu_amx_fia_test.cpp: the same body as the cpu-amx entry's
// prefill task (src/cpu/fia/fia_kernel_amx.cpp), run on machines without AMX. It needs AVX-512
// with BF16 (the vector parts are the avx512bf16 kernel's): call it only where
// cpu::detected_isa() is at least Isa::kAvx512Bf16.
#pragma once

#include "cpu/fia/fia_kernel.hpp"

namespace kvflash::testing {

/// The cpu-amx entry's FIA kernels with the tiles of the model.
extern const cpu::FiaKernels kFiaKernelsEmuTiles;

}  // namespace kvflash::testing
