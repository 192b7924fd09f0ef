// The AMX microkernels of decode attention on this CPU's tiles (amx_kernels_amx.cpp, built with
// the AMX flags): the instantiations of amx_kernels-inl.h's templates, which the IFA, SFA,
// indexer and prefill kernels call once their backend entries exist. Layouts, pieces and
// contracts: amx_kernels-inl.h and amx_split.hpp.
//
// Everything here except the pack_value*_bf16_avx512 functions executes tile instructions: call it
// only when cpu::active_isa() is Isa::kAmx (detection has then also obtained Linux's tile
// permission), with a TileScope of the same head count alive on the calling thread.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cpu/amx/amx_kernels-inl.h"

namespace kvflash::cpu::amx {

/// Loads decode_palette(m) on the calling thread for the lifetime of the object (one per worker
/// task, at its start), tilerelease after.
class TileScope {
 public:
  explicit TileScope(int m);
  ~TileScope();
  TileScope(const TileScope&) = delete;
  TileScope& operator=(const TileScope&) = delete;
};

/// scores<HwTiles, t> (amx_kernels-inl.h): st[j * st_stride + i] = K_j · q_i for j < n keys, i < m.
void scores(KvType t, const void* k, ptrdiff_t k_stride, int n, int d, const uint16_t* qpack,
            int m, int qpieces, float* st, ptrdiff_t st_stride);

/// pv_accumulate<HwTiles> (amx_kernels-inl.h): o += P · V for one block of 32 keys.
void pv_accumulate(const uint16_t* ppack, int m, int ppieces, const uint16_t* vpack, int vpieces,
                   int d, float* o, ptrdiff_t o_stride);

/// pack_value_rows<KvType::kBf16> of n <= 32 rows of contiguous channels with AVX-512 shuffles
/// (one vpermt2w per 64 output bytes); the same bits and the same result (false when a value is
/// +-inf). Needs AVX-512 (Isa::kAvx512) only, no tiles.
bool pack_value_rows_bf16_avx512(const uint16_t* const* rows, int n, int d, uint16_t* out);
/// The same for equally spaced rows (row k at v + k * v_stride), as pack_values<KvType::kBf16>.
bool pack_values_bf16_avx512(const uint16_t* v, ptrdiff_t v_stride, int n, int d, uint16_t* out);

/// pack_value_rows<KvType::kInt8> and pack_value_rows<KvType::kFp16> of n <= 32 rows of
/// contiguous channels, 32 channels a vector (int8 widened with vcvtne2ps2bf16, exact; fp16
/// converted to fp32 and split in 2 pieces lane by lane): the same bits and the same result
/// (false when a value is +-inf; never for int8). Need AVX-512 and AVX512-BF16, no tiles.
bool pack_value_rows_int8_avx512(const int8_t* const* rows, int n, int d, uint16_t* out);
bool pack_value_rows_fp16_avx512(const uint16_t* const* rows, int n, int d, uint16_t* out);

/// n rows of contiguous channels (row k at rows[k], d channels) as bf16 rows out_stride elements
/// apart, the K operand of scores<HwTiles, KvType::kBf16> / scores_split: int8 widened (one exact
/// piece, out[k * out_stride + x]), fp16 split in 2 (piece 0 in hi, piece 1 in lo). Element for
/// element what detail::stage_k<T> stages, so scoring these rows gives scores<HwTiles, T>'s bits.
/// Writes channels [0, d) of each row only. Need AVX-512 and AVX512-BF16, no tiles.
void widen_rows_int8_avx512(const int8_t* const* rows, int n, int d, uint16_t* out,
                            ptrdiff_t out_stride);
void split_rows_fp16_avx512(const uint16_t* const* rows, int n, int d, uint16_t* hi, uint16_t* lo,
                            ptrdiff_t out_stride);

/// A register-only loop of `iters` x 4 tdpbf16ps on full 16 x 16 x 32 tiles (16,384 FLOP each):
/// the matrix engine's bf16 peak, for tools/bf16_peak.cpp. Configures and releases its own
/// tiles; returns a sum of the accumulators so the loop cannot be optimised away.
float peak_loop(int64_t iters);

}  // namespace kvflash::cpu::amx
