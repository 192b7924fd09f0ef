// Array forms of the per-ISA vector primitives (exp, fp16/bf16/int8 widening, scalar narrowing),
// for tests: they run exactly the code the kernels of that ISA inline (src/cpu/simd_<isa>.h and
// simd_math-inl.h, compiled here with the library's ISA flags). Test-only, so not in libkvflash.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cpu/isa.hpp"

namespace kvflash::cpu {

/// y[i] = e^x[i] with the kernels' vectorised exp. isa must not exceed detected_isa() (a larger one
/// is lowered to it).
void vec_exp(Isa isa, const float* x, float* y, size_t n);
/// Widening loads: the vector instructions for whole vectors, the scalar helpers for the tail.
void vec_fp16_to_float(Isa isa, const uint16_t* x, float* y, size_t n);
void vec_bf16_to_float(Isa isa, const uint16_t* x, float* y, size_t n);
void vec_int8_to_float(Isa isa, const int8_t* x, float* y, size_t n);
/// The narrowing conversions kernels use for output (RNE): the vector stores (vstore_fp16,
/// vstore_bf16) for whole vectors, the scalar helpers for the tail.
void vec_float_to_fp16(Isa isa, const float* x, uint16_t* y, size_t n);
void vec_float_to_bf16(Isa isa, const float* x, uint16_t* y, size_t n);

}  // namespace kvflash::cpu
