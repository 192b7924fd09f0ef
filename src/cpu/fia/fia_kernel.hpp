// The CPU flash-attention prefill kernel of PromptFlashAttention / FusedInferAttentionScore, as
// pure functions over a POD parameter block and data pointers (the shape of the coming backend
// contract, run(Params, Data, ...)). Nothing here validates: the caller (the operator's binding)
// has reduced a valid call to per-batch row ranges, element offsets and a visibility band.
//
// Work: tasks are (batch, KV head, query tile). A query tile is fia_query_tile(G) consecutive query
// rows of a batch with all G query heads of the KV head (so K/V tiles are read once for G heads);
// key tiles are kFiaKeyTile positions. Both are cut at fixed multiples from the batch's first row
// / position, so every row's arithmetic is a function of its sequence alone: the same bits for any
// thread count and batch composition. A row's whole softmax is done inside one task, except in
// decode-like batches (kFiaSplitRows), whose key range is split into fixed chunks and merged.
// Key tiles outside the band of every row of a query tile are never visited. Tasks run longest
// first (cost = key tiles visited), claimed one at a time, which balances causal work.
//
// Numerics: fp32 throughout (scores: vdpbf16ps on bf16 pairs at the avx512bf16 level, else fp32
// FMA; online softmax with src/cpu/softmax_state.h's rules; P kept in fp32 and P·V in fp32 FMA,
// except bf16 output at the avx512bf16 level, whose fully visible key tiles round P to bf16 and
// run P·V with vdpbf16ps: fia_pv_bf16_shape), output rounded once (RNE; int8: post-quant, half to
// even, saturated).
//
// What it covers (docs/fia-semantics.md, "CPU prefill kernel"): fp16/bf16 Q; K/V of Q's dtype or
// int8 with antiquant; fp16/bf16/fp32/int8 output; any layout expressible by row/head strides
// (BSH, BSND, BNSD, TND, NTD and the output variants); contiguous, paged (BnBsH, BnNBsD) or
// tensor-list K/V; shared prefix; GQA; MLA rope (query_rope / key_rope); bands of sparse modes 0-4
// and the decode branch; a full 1-byte mask; pse; LSE; learnable sink; rows written as padding.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cpu/isa.hpp"
#include "kvflash/tensor.hpp"
#include "ops/fia/fia_params.hpp"

namespace kvflash::cpu {

using core::FiaBatch;
using core::FiaDequant;
using core::FiaPadRow;
using core::FiaParams;
using core::FiaPointers;
using core::kFiaMaxSumWidth;
using core::kFiaUnbounded;

/// Key positions per key tile.
inline constexpr int64_t kFiaKeyTile = 64;
/// Score-matrix rows (query rows x G heads) a query tile aims at.
inline constexpr int64_t kFiaTileRows = 256;
/// Alignment of the workspace regions (the caller's pointer may have any alignment).
inline constexpr size_t kFiaWorkspaceAlign = 64;
/// Participants a workspace has scratch for (threads beyond it are not used).
inline constexpr int kFiaMaxParticipants = 64;

/// Split-KV for decode-like batches: a batch whose score rows (q_rows x G) are at most
/// kFiaSplitRows and that sees more than kFiaSplitTiles key tiles runs as chunks of
/// kFiaSplitTiles key tiles (counted from position 0, so split points depend on the sequence
/// alone), merged in chunk order. Without it such a row (a long decode row in a mixed batch) is
/// one serial task.
inline constexpr int64_t kFiaSplitRows = 16;
inline constexpr int64_t kFiaSplitTiles = 8;

/// Query rows per query tile for group size g: max(1, kFiaTileRows / g).
inline int64_t fia_query_tile(int64_t g) { return g >= kFiaTileRows ? 1 : kFiaTileRows / g; }

/// Bytes of workspace the packed key tiles (FiaPackedKv) may take at most: 16 MiB holds a KV
/// head's K and V of 32k positions at Dk = Dv = 128 (512 bytes a position). fia_run packs the
/// (batch, KV head)s that fit in waves of at most this much; one that alone takes more is not
/// packed (its tasks pack each key tile themselves, as without this).
inline constexpr size_t kFiaPackedKvMaxBytes = size_t{16} << 20;

/// The key tiles of one (batch, KV head) packed once for all its query tiles by the bf16 path
/// (fia_run's packing pass, FiaKernels::pack_bf16), so its tasks do not pack them again: key tile
/// t in [first, first + count) at tiles + (t - first) * 64 · (Dk + Dr + Dv) elements, its keys as
/// fia_pack_keys_bf16 packs them ((Dk + Dr) · 64 elements, positions past the tile 0), then, for
/// a whole tile, its values as fia_pack_values_bf16 packs them (Dv · 64).
struct FiaPackedKv {
  const uint16_t* tiles;
  int64_t first, count;
};

/// Elements (uint16_t) of one packed key tile of p.
inline int64_t fia_packed_tile_elems(const FiaParams& p) {
  return kFiaKeyTile * (p.head_dim + p.rope_dim + p.value_dim);
}

/// One task (batch b, KV head n2, query tile qt) over its key tiles in [t_first, t_last], with
/// `scratch` of fia_scratch_floats(p) floats; slot null: rows finished, else split-KV partials.
/// kv: the (batch, KV head)'s packed key tiles (read by the bf16 path only), or null: the task
/// packs the tiles it visits itself.
using FiaTaskFn = void (*)(const FiaParams& p, const FiaPointers& d, float* scratch, int64_t b,
                           int64_t n2, int64_t qt, int64_t t_first, int64_t t_last, float* slot,
                           const FiaPackedKv* kv);
/// Packs key tile t of (batch b, KV head n2) into dst (fia_packed_tile_elems(p) elements), the
/// FiaPackedKv layout.
using FiaPackFn = void (*)(const FiaParams& p, const FiaPointers& d, int64_t b, int64_t n2,
                           int64_t t, uint16_t* dst);
/// The merge of a split task's `chunks` slots (fia_merge in fia_merge-inl.h).
using FiaMergeFn = void (*)(const FiaParams& p, const FiaPointers& d, float* scratch, int64_t b,
                            int64_t n2, int64_t qt, int64_t chunks, const float* slots);

/// One instruction set's FIA kernels, compiled in its own translation unit
/// (fia_kernel_<isa>.cpp, tables declared in fia_kernel_isa.hpp) and named by its entry of the
/// backend list (src/backends/lists.cpp), so nothing inside a run chooses an ISA again.
struct FiaKernels {
  FiaTaskFn task;
  /// The task with AVX512-BF16 scores, used where fia_bf16_dot_shape(p) holds; null: none.
  FiaTaskFn task_bf16;
  FiaMergeFn merge;
  /// The packing pass of task_bf16's key tiles (FiaPackedKv); null with task_bf16.
  FiaPackFn pack_bf16;
};

/// The table of an ISA level.
const FiaKernels& fia_kernels_for(Isa isa);

/// Bytes of workspace fia_run needs for p: a function of p only (never of threads or ISA). With
/// bf16 inputs on the dot-product shape (fia_bf16_dot_shape) it includes the packed key tiles
/// (FiaPackedKv) of every (batch, KV head) whose query tiles visit its key tiles more than twice
/// on average, up to kFiaPackedKvMaxBytes.
size_t fia_workspace_size(const FiaParams& p);

/// Runs kernels k on up to num_threads threads (0: the library default). Never allocates;
/// `workspace` must hold fia_workspace_size(p) bytes, any alignment. The packed key tiles take what
/// workspace_size leaves after the other regions (at most kFiaPackedKvMaxBytes): less makes the
/// packing pass run in more waves, or leaves (batch, KV head)s unpacked; the bits never change.
void fia_run(const FiaParams& p, const FiaPointers& d, void* workspace, size_t workspace_size,
             int num_threads, const FiaKernels& k);

/// fia_run with the table of the active ISA (cpu::active_isa()).
void fia_run(const FiaParams& p, const FiaPointers& d, void* workspace, size_t workspace_size,
             int num_threads);

}  // namespace kvflash::cpu
