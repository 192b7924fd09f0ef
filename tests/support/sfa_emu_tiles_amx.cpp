// The SFA kernel's matrix-engine body (src/cpu/sfa/sfa_kernel-inl.h with sfa_tiles-inl.h) on the
// software model of the tiles. Compiled with the AMX flags like the cpu-amx entry's translation
// unit (its name ends like that one's), so its vector parts are the same code; nothing here
// executes a tile instruction.
#include <cstdint>
#include <cstring>

// GCC 12's intrinsic headers trip -W(maybe-)uninitialized on their internal _mm*_undefined
// operands once inlined here (a known false positive, as in src/cpu/sfa/sfa_kernel_avx512.cpp).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "core/half.hpp"
#include "core/online_softmax.hpp"
#include "cpu/amx/amx_kernels.hpp"
#include "cpu/sfa/sfa_kernel.hpp"
#include "cpu/simd_avx512.h"
#include "ops/sfa/sfa_problem.hpp"
#include "support/amx_emu.hpp"
#include "support/sfa_emu_tiles.hpp"

namespace kvflash::cpu::avx512::amx_sfa_emu {
// The order matters: each file uses the ones before it.
// clang-format off
#include "cpu/simd_math-inl.h"
#include "cpu/softmax_state.h"
#define KVFLASH_SFA_TILES 1
#include "cpu/sfa/sfa_kernel-inl.h"
// clang-format on
}  // namespace kvflash::cpu::avx512::amx_sfa_emu

namespace kvflash::testing {
namespace {
namespace body = cpu::avx512::amx_sfa_emu::sfa_body;
}  // namespace

const cpu::SfaKernels kSfaKernelsEmuTiles = {body::run_one<body::TileEngine<EmuTiles>>};
const cpu::SfaKernels kSfaKernelsEmuTilesNarrow = {body::run_one<body::TileEngine<EmuTiles, 3>>};

}  // namespace kvflash::testing
