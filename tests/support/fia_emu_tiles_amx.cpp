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

void task(const FiaParams& p, const FiaPointers& d, float* scratch, int64_t b, int64_t n2,
          int64_t qt, int64_t t_first, int64_t t_last, float* slot, const FiaPackedKv* kv) {
  fia_task_body<false>(p, d, scratch, b, n2, qt, t_first, t_last, slot, kv);
}

void task_tiles(const FiaParams& p, const FiaPointers& d, float* scratch, int64_t b, int64_t n2,
                int64_t qt, int64_t t_first, int64_t t_last, float* slot, const FiaPackedKv* kv) {
  fia_task_tiles<testing::EmuTiles>(p, d, scratch, b, n2, qt, t_first, t_last, slot, kv);
}

void pack(const FiaParams& p, const FiaPointers& d, int64_t b, int64_t n2, int64_t t,
          uint16_t* dst) {
  fia_pack_tile_bf16(p, d, b, n2, t, dst);
}

void merge(const FiaParams& p, const FiaPointers& d, float* scratch, int64_t b, int64_t n2, int64_t qt,
           int64_t chunks, const float* slots) {
  fia_merge(p, d, scratch, b, n2, qt, chunks, slots);
}

void exps(const float* x, float* weights, float* ref, int64_t n) {
  for (int64_t i = 0; i < n; i += kLanes) {
    const Vec v = vload(x + i);
    vstore(weights + i, FiaTiles<testing::EmuTiles>::exp_weights(v));
    vstore(ref + i, vexp(v));
  }
}

void reductions(const float* rows, float* max, float* sum, float* ref_max, float* ref_sum) {
  using Engine = FiaTiles<testing::EmuTiles>;
  __m512 x[16];
  alignas(64) float mx[16], sm[16];
  for (int r = 0; r < 16; ++r) x[r] = _mm512_loadu_ps(rows + 16 * r);
  _mm512_store_ps(mx, Engine::reduce16(x, [](__m512 a, __m512 b) { return _mm512_max_ps(a, b); }));
  _mm512_store_ps(sm, Engine::reduce16(x, [](__m512 a, __m512 b) { return _mm512_add_ps(a, b); }));
  for (int r = 0; r < 16; ++r) {
    max[r] = mx[Engine::reduce16_lane(r)], sum[r] = sm[Engine::reduce16_lane(r)];
    ref_max[r] = vreduce_max(vload(rows + 16 * r)), ref_sum[r] = vreduce_add(vload(rows + 16 * r));
  }
}
}  // namespace kvflash::cpu::avx512::amx_fia_emu

namespace kvflash::testing {
namespace body = cpu::avx512::amx_fia_emu;
const cpu::FiaKernels kFiaKernelsEmuTiles = {body::task, body::task_tiles, body::merge, body::pack};

void fia_tiles_exps(const float* x, float* weights, float* ref, int64_t n) {
  body::exps(x, weights, ref, n);
}

void fia_tiles_reductions(const float* rows, float* max, float* sum, float* ref_max,
                          float* ref_sum) {
  body::reductions(rows, max, sum, ref_max, ref_sum);
}
}  // namespace kvflash::testing
