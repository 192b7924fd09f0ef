// The FIA prefill kernel on the matrix engine (fia_kernel-inl.h with its tile half,
// fia_tiles-inl.h, on the CPU's tiles): the cpu-amx backend entry's prefill task, run only at
// Isa::kAmx. Shapes the tiles do not take (FiaTiles::shape) and everything around the two
// products (staging, packing, softmax, the merge) are the avx512bf16 kernel's code, compiled here
// in a namespace of their own.
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "core/online_softmax.hpp"
#include "cpu/amx/amx_tile.hpp"
#include "cpu/fia/fia_kernel.hpp"
#include "cpu/fia/fia_kernel_isa.hpp"
#include "cpu/simd_avx512.h"

namespace kvflash::cpu::avx512::amx_fia {
// The order matters: each header uses what the previous ones define.
// clang-format off
#include "cpu/simd_math-inl.h"
#include "cpu/softmax_state.h"
#define KVFLASH_FIA_BF16_DOT 1
#define KVFLASH_FIA_TILES 1  // the matrix-engine half (fia_tiles-inl.h)
#include "cpu/fia/fia_kernel-inl.h"
// clang-format on

void fia_task_entry(const FiaParams& p, const FiaPointers& d, float* scratch, int64_t b, int64_t n2,
                    int64_t qt, int64_t t_first, int64_t t_last, float* slot,
                    const FiaPackedKv* kv) {
  fia_task_body<false>(p, d, scratch, b, n2, qt, t_first, t_last, slot, kv);
}

void fia_task_tiles_entry(const FiaParams& p, const FiaPointers& d, float* scratch, int64_t b,
                          int64_t n2, int64_t qt, int64_t t_first, int64_t t_last, float* slot,
                          const FiaPackedKv* kv) {
  fia_task_tiles<amx::HwTiles>(p, d, scratch, b, n2, qt, t_first, t_last, slot, kv);
}

void fia_pack_entry(const FiaParams& p, const FiaPointers& d, int64_t b, int64_t n2, int64_t t,
                    uint16_t* dst) {
  fia_pack_tile_bf16(p, d, b, n2, t, dst);
}

void fia_merge_entry(const FiaParams& p, const FiaPointers& d, float* scratch, int64_t b, int64_t n2,
                     int64_t qt, int64_t chunks, const float* slots) {
  fia_merge(p, d, scratch, b, n2, qt, chunks, slots);
}
}  // namespace kvflash::cpu::avx512::amx_fia

namespace kvflash::cpu::amx {
const FiaKernels kFiaKernels = {avx512::amx_fia::fia_task_entry,
                                avx512::amx_fia::fia_task_tiles_entry,
                                avx512::amx_fia::fia_merge_entry, avx512::amx_fia::fia_pack_entry};
}  // namespace kvflash::cpu::amx
