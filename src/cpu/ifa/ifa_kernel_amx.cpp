// The IFA kernel on the matrix engine (ifa_kernel-inl.h with its tile half, ifa_tiles-inl.h, on
// the CPU's tiles): the cpu-amx backend entry, run only at Isa::kAmx. The vector parts (softmax,
// merge, the P·V fallback) are the avx512 kernel's code, compiled here in a namespace of their own.
#include <cassert>
#include <cstdint>
#include <cstring>

#include "core/online_softmax.hpp"
#include "cpu/amx/amx_kernels.hpp"
#include "cpu/ifa/ifa_kernel_isa.hpp"
#include "cpu/ifa/ifa_workspace.hpp"
#include "cpu/simd_avx512.h"
#include "ops/ifa/ifa_problem.hpp"

namespace kvflash::cpu::avx512::amx_ifa {
// The order matters: each header uses what the previous ones define.
// clang-format off
#include "cpu/simd_math-inl.h"
#include "cpu/softmax_state.h"
#define KVFLASH_IFA_BF16_DOT 1  // the vector chunks below (as avx512bf16's)
#define KVFLASH_IFA_TILES 1     // the matrix-engine half (ifa_tiles-inl.h)
#include "cpu/ifa/ifa_kernel-inl.h"
// clang-format on

// P·V on the tiles (P in bf16 pieces) or on the vector FMAs: a compile-time choice, to be settled
// by measurement on a machine with AMX (docs/perf-log.md, round 3; build with
// -DKVFLASH_AMX_IFA_PV_FMA=1 for the FMAs). Both are checked on the tests' model of the tiles.
#if defined(KVFLASH_AMX_IFA_PV_FMA)
inline constexpr bool kPvOnTiles = false;
#else
inline constexpr bool kPvOnTiles = true;
#endif
using Engine = ifa_detail::TileEngine<amx::HwTiles, kPvOnTiles>;

// Where the tiles pay: bf16 KV from G = 5 query heads a kv head on. Measured on this AMX machine
// (docs/perf-log.md, "IFA decode on AMX (2026-12-05)"; 2 threads, cold caches, B = 2, D = 128,
// paged 128, best of 3-4 quiet runs, tiles ms / vector ms): G = 1 5.94 / 5.05, 2 2.99 / 2.90,
// 4 3.75 / 3.75 (s8192; medians 4.15 / 3.88), 5 4.46 / 4.67 (s8192), 7 1.10 / 1.42,
// 8 1.22 / 1.42, 16 0.88 / 1.18 (s4096 unless noted). Rechecked after round 3's packing changes
// (docs/perf-log.md, "IFA decode on AMX, round 3"): G = 4 s8192 tiles 4.39-4.46 / vector
// 4.00-4.03 ms (2 threads), 7.86-9.01 / 7.36-7.40 (1 thread). fp16 and int8 KV stay on the
// vector body at every G: with their K staging and V packing on AVX-512 (5.5 / 8.7 times faster
// than the scalar staging) the tiles still lose, int8 tiles / vector 4.54 / 4.32 ms at G = 7
// (s16384), 2.37 / 2.21 at G = 8, 3.94 / 3.58 at G = 5 (s8192), fp16 9.48 / 5.31, 4.78 / 2.77,
// 8.86 / 4.40, 1 thread G = 7 int8 8.81 / 8.02, fp16 17.0 / 9.67 (2 threads unless noted, same
// setup, medians of 3: docs/perf-log.md, "IFA decode on AMX: int8 and fp16 staging on AVX-512"):
// int8's query takes 3 bf16 pieces and fp16's 2 against K's 2, 3-4 times bf16's tile products.
// Elsewhere the chunk runs the vector body, the same code as the avx512bf16 entry's.
inline constexpr int64_t kTileMinGroup = 5;
void ifa_chunk_amx(const core::IfaProblem& p, const core::IfaData& d, const IfaLayout& layout,
                   const IfaSchedule& schedule, std::byte* base, int64_t task) {
  if (p.k.dtype == DType::kBFloat16 && p.group >= kTileMinGroup) {
    ifa_chunk_on<Engine>(p, d, layout, schedule, base, task);
  } else {
    ifa_chunk_on<ifa_detail::NoTiles>(p, d, layout, schedule, base, task);
  }
}
}  // namespace kvflash::cpu::avx512::amx_ifa

namespace kvflash::cpu::amx {
const IfaKernels kIfaKernels = {avx512::amx_ifa::ifa_chunk_amx, avx512::amx_ifa::ifa_merge, true};
const IfaKernels kIfaKernelsAllTiles = {avx512::amx_ifa::ifa_chunk_on<avx512::amx_ifa::Engine>,
                                        avx512::amx_ifa::ifa_merge, true};
}  // namespace kvflash::cpu::amx
