// The FIA prefill kernel's matrix-engine instantiation on the software model of the tiles
// (support/amx_emu.hpp), for tests/cpu_amx_fia_test.cpp: the same body as the cpu-amx entry's
// prefill task (src/cpu/fia/fia_kernel_amx.cpp), run on machines without AMX. It needs AVX-512
// with BF16 (the vector parts are the avx512bf16 kernel's): call it only where
// cpu::detected_isa() is at least Isa::kAvx512Bf16.
#pragma once

#include <cstdint>

#include "cpu/fia/fia_kernel.hpp"

namespace kvflash::testing {

/// The cpu-amx entry's FIA kernels with the tiles of the model.
extern const cpu::FiaKernels kFiaKernelsEmuTiles;

/// weights[i] = FiaTiles::exp_weights(x[i]) and ref[i] = vexp(x[i]) for i < n, n a multiple of 16
/// (the tiles' fold's exp against the one it must equal bit for bit).
void fia_tiles_exps(const float* x, float* weights, float* ref, int64_t n);

/// The horizontal max and sum of 16 rows of 16 floats by FiaTiles::reduce16 (max, sum) and by
/// vreduce_max / vreduce_add row by row (ref_max, ref_sum).
void fia_tiles_reductions(const float* rows, float* max, float* sum, float* ref_max,
                          float* ref_sum);

}  // namespace kvflash::testing
