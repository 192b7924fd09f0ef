// The IFA kernel's matrix-engine body (src/cpu/ifa/ifa_kernel-inl.h with ifa_tiles-inl.h) on the
// software model of the tiles. Compiled with the AMX flags like the cpu-amx entry's translation
// unit (its name ends like that one's), so its vector parts are the same code; nothing here
// executes a tile instruction.
#include <cassert>
#include <cstdint>
#include <cstring>

#include "core/online_softmax.hpp"
#include "cpu/amx/amx_kernels.hpp"
#include "cpu/ifa/ifa_workspace.hpp"
#include "cpu/simd_avx512.h"
#include "ops/ifa/ifa_problem.hpp"
#include "support/amx_emu.hpp"
#include "support/ifa_emu_tiles.hpp"

namespace kvflash::cpu::avx512::amx_ifa_emu {
// The order matters: each header uses what the previous ones define.
// clang-format off
#include "cpu/simd_math-inl.h"
#include "cpu/softmax_state.h"
#define KVFLASH_IFA_TILES 1
#include "cpu/ifa/ifa_kernel-inl.h"
// clang-format on

// The tile model under a type of this namespace, so the microkernel templates instantiated on it
// here (amx::scores, amx::pv_accumulate, with this unit's flags) are its own, not the plain
// tests' instantiations on testing::EmuTiles (tests/cpu_amx_test.cpp).
struct Tiles : testing::EmuTiles {};
}  // namespace kvflash::cpu::avx512::amx_ifa_emu

namespace kvflash::testing {
namespace {
namespace body = cpu::avx512::amx_ifa_emu;
template <bool kPv, int kHeads = cpu::amx::kMaxHeads>
using Emu = body::ifa_detail::TileEngine<body::Tiles, kPv, kHeads>;
}  // namespace

const cpu::IfaKernels kIfaKernelsEmuTiles = {body::ifa_chunk_on<Emu<true>>, body::ifa_merge, false};
const cpu::IfaKernels kIfaKernelsEmuTilesPvFma = {body::ifa_chunk_on<Emu<false>>, body::ifa_merge,
                                                  false};
void ifa_tiles_pack_query(const float* q, ptrdiff_t q_stride, int m, int d, int pieces,
                          uint16_t* out) {
  body::ifa_detail::pack_query_f32_avx512(q, q_stride, m, d, pieces, out);
}
void ifa_tiles_pack_probs(const float* p, ptrdiff_t p_stride, int m, int n, int pieces,
                          uint16_t* out) {
  body::ifa_detail::pack_probs_avx512(p, p_stride, m, n, pieces, out);
}
void ifa_tiles_transpose16(const float* in, ptrdiff_t in_stride, int64_t c0, int64_t c1, float* out,
                           ptrdiff_t out_stride) {
  body::ifa_detail::transpose16_rows(in, in_stride, c0, c1, out, out_stride);
}

const cpu::IfaKernels kIfaKernelsEmuTilesNarrow = {body::ifa_chunk_on<Emu<true, 3>>,
                                                   body::ifa_merge, false};

}  // namespace kvflash::testing
