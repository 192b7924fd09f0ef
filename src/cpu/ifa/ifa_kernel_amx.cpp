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
#define KVFLASH_IFA_TILES 1  // the matrix-engine half (ifa_tiles-inl.h)
#include "cpu/ifa/ifa_kernel-inl.h"
// clang-format on

// P·V on the tiles (P in bf16 pieces) or on the vector FMAs: a compile-time choice, to be settled
// by measurement on a machine with AMX (docs/perf.md, round 3; build with
// -DKVFLASH_AMX_IFA_PV_FMA=1 for the FMAs). Both are checked on the tests' model of the tiles.
#if defined(KVFLASH_AMX_IFA_PV_FMA)
inline constexpr bool kPvOnTiles = false;
#else
inline constexpr bool kPvOnTiles = true;
#endif
using Engine = ifa_detail::TileEngine<amx::HwTiles, kPvOnTiles>;
}  // namespace kvflash::cpu::avx512::amx_ifa

namespace kvflash::cpu::amx {
const IfaKernels kIfaKernels = {avx512::amx_ifa::ifa_chunk_on<avx512::amx_ifa::Engine>,
                                avx512::amx_ifa::ifa_merge, false};
}  // namespace kvflash::cpu::amx
