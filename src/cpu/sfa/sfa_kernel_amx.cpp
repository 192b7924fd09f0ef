// The SFA kernel on the matrix engine (sfa_kernel-inl.h with its tile half, sfa_tiles-inl.h, on the
// CPU's tiles): the cpu-amx backend entry, run only at Isa::kAmx. The vector parts (gather of the
// fallback rows, softmax, the final division) are the avx512 kernel's code, compiled here in a
// namespace of their own.
#include <cstdint>
#include <cstring>

// GCC 12's intrinsic headers trip -W(maybe-)uninitialized on their internal _mm*_undefined
// operands once inlined here (a known false positive, as in sfa_kernel_avx512.cpp).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "core/half.hpp"
#include "core/online_softmax.hpp"
#include "cpu/amx/amx_kernels.hpp"
#include "cpu/sfa/sfa_kernel.hpp"
#include "cpu/sfa/sfa_kernel_isa.hpp"
#include "cpu/simd_avx512.h"
#include "ops/sfa/sfa_problem.hpp"

namespace kvflash::cpu::avx512::amx_sfa {
// The order matters: each file uses the ones before it.
// clang-format off
#include "cpu/simd_math-inl.h"
#include "cpu/softmax_state.h"
#define KVFLASH_SFA_TILES 1  // the matrix-engine half (sfa_tiles-inl.h)
#include "cpu/sfa/sfa_kernel-inl.h"
// clang-format on

// Where the tiles pay: bf16. Measured on the first AMX machine (docs/perf-log.md, "The AMX check";
// 1 thread, warm caches, B = 4, top-2048 of 8192, paged 64, tiles time / vector time): bf16 128
// heads 0.41, 16 heads 0.64; fp16 2.5 and 11 (its split into two bf16 planes is scalar). fp16
// runs the vector body, the same code as the avx512 entries'.
using Engine = sfa_body::TileEngine<amx::HwTiles>;
void run_one_amx(const core::SfaProblem& p, const core::SfaData& d,
                 const kvflash::cpu::SfaSchedule& sch, const sfa_body::Scratch& w,
                 uint8_t* row_fault, int64_t task) {
  if (p.dtype == DType::kBFloat16) {
    sfa_body::run_one<Engine>(p, d, sch, w, row_fault, task);
  } else {
    sfa_body::run_one<>(p, d, sch, w, row_fault, task);
  }
}
}  // namespace kvflash::cpu::avx512::amx_sfa

namespace kvflash::cpu::amx {
const SfaKernels kSfaKernels = {avx512::amx_sfa::run_one_amx};
const SfaKernels kSfaKernelsAllTiles = {avx512::amx_sfa::sfa_body::run_one<avx512::amx_sfa::Engine>};
}  // namespace kvflash::cpu::amx
