// The LightningIndexer's matrix-engine scorer (src/cpu/li/li_kernel-inl.h with li_tiles-inl.h) on
// the software model of the tiles. Compiled with the AMX flags like the cpu-amx entry's
// translation unit (its name ends like that one's), so its vector parts are the same code; nothing
// here executes a tile instruction.
#include <cstdint>
#include <cstring>
#include <utility>

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "cpu/amx/amx_tile.hpp"
#include "cpu/li/li_kernel.hpp"
#include "cpu/simd_avx512.h"
#include "support/amx_emu.hpp"
#include "support/li_emu_tiles.hpp"

#define KVFLASH_LI_BF16_DOT 1
#define KVFLASH_LI_TILES 1
namespace kvflash::cpu::avx512::amx_li_emu {
// clang-format off
#include "cpu/simd_math-inl.h"
#include "cpu/li/li_kernel-inl.h"
// clang-format on
}  // namespace kvflash::cpu::avx512::amx_li_emu

namespace kvflash::testing {
namespace body = cpu::avx512::amx_li_emu::li_body;
const cpu::LiKernels kLiKernelsEmuTiles = {body::score_rows_f32,
                                           body::LiTiles<EmuTiles>::score_rows};
}  // namespace kvflash::testing
