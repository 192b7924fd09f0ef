// The FIA prefill kernel's matrix-engine body (src/cpu/fia/fia_kernel-inl.h with fia_tiles-inl.h)
// on the software model of the tiles. Compiled with the AMX flags like the cpu-amx entry's
// translation unit (its name ends like that one's), so its vector parts are the same code; nothing
// here executes a tile instruction.
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "core/online_softmax.hpp"
#include "cpu/amx/amx_tile.hpp"
#include "cpu/fia/fia_kernel.hpp"
#include "cpu/simd_avx512.h"
#include "support/amx_emu.hpp"
#include "support/fia_emu_tiles.hpp"

namespace kvflash::cpu::avx512::amx_fia_emu {
// The order matters: each header uses what the previous ones define.
// clang-format off
#include "cpu/simd_math-inl.h"
#include "cpu/softmax_state.h"
#define KVFLASH_FIA_BF16_DOT 1
#define KVFLASH_FIA_TILES 1
#include "cpu/fia/fia_kernel-inl.h"
// clang-format on

void task(const FiaParams& p, const FiaPointers& d, float* scratch, int64_t b, int64_t n2, int64_t qt,
          int64_t t_first, int64_t t_last, float* slot) {
  fia_task_body<false>(p, d, scratch, b, n2, qt, t_first, t_last, slot);
}

void task_tiles(const FiaParams& p, const FiaPointers& d, float* scratch, int64_t b, int64_t n2,
                int64_t qt, int64_t t_first, int64_t t_last, float* slot) {
  fia_task_tiles<testing::EmuTiles>(p, d, scratch, b, n2, qt, t_first, t_last, slot);
}

void merge(const FiaParams& p, const FiaPointers& d, float* scratch, int64_t b, int64_t n2, int64_t qt,
           int64_t chunks, const float* slots) {
  fia_merge(p, d, scratch, b, n2, qt, chunks, slots);
}
}  // namespace kvflash::cpu::avx512::amx_fia_emu

namespace kvflash::testing {
namespace body = cpu::avx512::amx_fia_emu;
const cpu::FiaKernels kFiaKernelsEmuTiles = {body::task, body::task_tiles, body::merge};
}  // namespace kvflash::testing
