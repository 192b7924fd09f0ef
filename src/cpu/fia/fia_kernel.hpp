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

namespace kvflash::cpu {

/// Key positions per key tile.
inline constexpr int64_t kFiaKeyTile = 64;
/// The softmax max / sum outputs' last dim: each row's value written this many times
/// (FlashAttentionScore's broadcast form, FiaArgs::softmax_max).
inline constexpr int64_t kFiaMaxSumWidth = 8;
/// Score-matrix rows (query rows x G heads) a query tile aims at.
inline constexpr int64_t kFiaTileRows = 256;
/// Participants a workspace has scratch for (threads beyond it are not used).
inline constexpr int kFiaMaxParticipants = 64;
/// A band edge meaning "unbounded" (far beyond any length, small enough that sums never overflow).
inline constexpr int64_t kFiaUnbounded = int64_t{1} << 40;

/// Split-KV for decode-like batches: a batch whose score rows (q_rows x G) are at most
/// kFiaSplitRows and that sees more than kFiaSplitTiles key tiles runs as chunks of
/// kFiaSplitTiles key tiles (counted from position 0, so split points depend on the sequence
/// alone), merged in chunk order. Without it such a row (a long decode row in a mixed batch) is
/// one serial task.
inline constexpr int64_t kFiaSplitRows = 16;
inline constexpr int64_t kFiaSplitTiles = 8;

/// Query rows per query tile for group size g: max(1, kFiaTileRows / g).
inline int64_t fia_query_tile(int64_t g) { return g >= kFiaTileRows ? 1 : kFiaTileRows / g; }

/// One batch, as the binding derives it from the host lengths.
struct FiaBatch {
  int64_t q_rows = 0;  ///< S1_b: valid query rows
  int64_t kv_len = 0;  ///< S2_b: attended positions 0..kv_len-1
  /// Element offsets of valid row 0 (head 0, d 0) in query / query_rope / output, and of LSE
  /// row 0 (head 0).
  int64_t q_offset = 0, qr_offset = 0, out_offset = 0, lse_offset = 0;
  /// Non-paged: element offset of position 0 (KV head 0) in key / key_rope / value. Paged: the
  /// element offset of the batch's row in the block table (the K/V offsets are then unused).
  int64_t k_offset = 0, kr_offset = 0, v_offset = 0;
  /// Row i sees positions j with i + band_lo <= j <= i + band_hi (and 0 <= j < kv_len).
  /// kv_len counts the shared prefix (positions 0..prefix_len-1) and then the batch's own ones.
  int64_t band_lo = -kFiaUnbounded, band_hi = kFiaUnbounded;
  /// Element offsets of the mask / pse element of (row 0, column 0) (when the call has them).
  /// Position j's column is j, plus col_shift past the prefix (KV left padding: D3).
  int64_t mask_offset = 0, pse_offset = 0, col_shift = 0;
  /// Per-token antiquant: position j (past the prefix) reads parameter index tok_first + j.
  int64_t tok_first = 0;
};

/// int8 K / V dequantisation x -> (x + offset) * scale, for key or value.
struct FiaDequant {
  enum class Mode : uint8_t { kTensor, kChannel, kToken };
  Mode mode = Mode::kTensor;
  DType dtype = DType::kFloat32;  ///< of scale and offset
  bool has_offset = false;
  /// Element offsets of the first parameter in the scale / offset tensors (combined parameters:
  /// the key or value half).
  int64_t scale_at = 0, offset_at = 0;
  int64_t chan_head = 0;  ///< kChannel: element n2 * chan_head + d
  int64_t tok_batch = 0,
          tok_pos = 0;  ///< kToken: element b * tok_batch + (tok_first + j) * tok_pos
};

/// A row whose every head is written as padding (D5: output 0, LSE +inf).
struct FiaPadRow {
  int64_t out_offset = 0, lse_offset = 0;
};

struct FiaParams {
  int64_t batch = 0, num_heads = 0, num_kv_heads = 0;
  int64_t head_dim = 0;           ///< Q/K D without rope
  int64_t rope_dim = 0;           ///< 0: no rope
  int64_t value_dim = 0;          ///< a multiple of 16
  DType dtype = DType::kFloat16;  ///< of query, query_rope, key_rope, and key / value unless int8
  DType out_dtype = DType::kFloat16;  ///< fp16, bf16, fp32, or int8 (post-quant)
  /// int8 key / value, dequantised by k_dq / v_dq (data: k_scale, k_offset, v_scale, v_offset).
  bool kv_int8 = false;
  FiaDequant k_dq, v_dq;
  /// int8 output: sat(rne(o * quant_scale2[e] + quant_offset2[e])), e = 0 (per tensor) or
  /// h * value_dim + d (per channel).
  bool q2_channel = false, has_q2_offset = false;
  DType q2_dtype = DType::kFloat32;
  /// pse_shift (fp16 / bf16 / fp32), added to the scaled scores: element pse_offset + h * pse_head
  /// + i * pse_row + column * pse_col.
  bool has_pse = false;
  DType pse_dtype = DType::kFloat16;
  int64_t pse_head = 0, pse_row = 0, pse_col = 0;
  /// Shared prefix: positions 0..prefix_len-1 of every batch are rows of key_prefix / value_prefix
  /// (element j * kp_pos + n2 * kp_head); no rope with a prefix.
  int64_t prefix_len = 0;
  int64_t kp_pos = 0, kp_head = 0, vp_pos = 0, vp_head = 0;
  float scale = 1.0f;
  /// Element strides: per query row and per head (query, query_rope, output, LSE); per position
  /// and per KV head (key, key_rope, value); d is contiguous everywhere.
  int64_t q_row = 0, q_head = 0, qr_row = 0, qr_head = 0, o_row = 0, o_head = 0;
  int64_t lse_row = 0, lse_head = 0;
  int64_t k_pos = 0, k_head = 0, kr_pos = 0, kr_head = 0, v_pos = 0, v_head = 0;
  /// Paged K/V: element stride of one block in key / key_rope / value; positions of a block are
  /// then at k_pos apart (BnBsH: KV_N*D; BnNBsD: D).
  bool paged = false;
  int64_t block_size = 0, k_block = 0, kr_block = 0, v_block = 0;
  bool has_mask = false;                   ///< 1-byte mask, nonzero = masked
  int64_t mask_row = 0, mask_col = 0;      ///< element strides (mask_row 0: one row for all)
  bool has_lse = false, has_sink = false;  ///< sink: (N,) of `sink_dtype`
  /// softmax max / sum: row (i, h)'s kFiaMaxSumWidth values start at kFiaMaxSumWidth times its
  /// LSE element offset (lse_row / lse_head are a contiguous LSE's when there is no LSE).
  bool has_max_sum = false;
  DType sink_dtype = DType::kBFloat16;
  const FiaBatch* batches = nullptr;  ///< [batch]
  const FiaPadRow* pad_rows = nullptr;
  int64_t num_pad_rows = 0;
};

struct FiaData {
  const void* q = nullptr;
  /// Tensor lists: batch b's key / value tensor (its k_offset / v_offset are then relative to it).
  const void* const* k_list = nullptr;
  const void* const* v_list = nullptr;
  const void* k_prefix = nullptr;
  const void* v_prefix = nullptr;
  const void* k_scale = nullptr;
  const void* k_offset = nullptr;
  const void* v_scale = nullptr;
  const void* v_offset = nullptr;
  const void* pse = nullptr;
  const void* quant_scale2 = nullptr;
  const void* quant_offset2 = nullptr;
  const void* q_rope = nullptr;
  const void* k = nullptr;
  const void* k_rope = nullptr;
  const void* v = nullptr;
  const int32_t* block_table = nullptr;
  const uint8_t* mask = nullptr;
  const void* sink = nullptr;
  void* out = nullptr;
  float* lse = nullptr;
  float* softmax_max = nullptr;
  float* softmax_sum = nullptr;
};

/// One task (batch b, KV head n2, query tile qt) over its key tiles in [t_first, t_last], with
/// `scratch` of fia_scratch_floats(p) floats; slot null: rows finished, else split-KV partials.
using FiaTaskFn = void (*)(const FiaParams& p, const FiaData& d, float* scratch, int64_t b,
                           int64_t n2, int64_t qt, int64_t t_first, int64_t t_last, float* slot);
/// The merge of a split task's `chunks` slots (fia_merge in fia_kernel-inl.h).
using FiaMergeFn = void (*)(const FiaParams& p, const FiaData& d, float* scratch, int64_t b,
                            int64_t n2, int64_t qt, int64_t chunks, const float* slots);

/// One instruction set's FIA kernels, compiled in its own translation unit
/// (fia_kernel_<isa>.cpp, tables declared in fia_kernel_isa.hpp) and named by its entry of the
/// backend list (src/backends/lists.cpp), so nothing inside a run chooses an ISA again.
struct FiaKernels {
  FiaTaskFn task;
  /// The task with AVX512-BF16 scores, used where fia_bf16_dot_shape(p) holds; null: none.
  FiaTaskFn task_bf16;
  FiaMergeFn merge;
};

/// The table of an ISA level.
const FiaKernels& fia_kernels_for(Isa isa);

/// Bytes of workspace fia_run needs for p: a function of p only (never of threads or ISA).
size_t fia_workspace_size(const FiaParams& p);

/// Runs kernels k on up to num_threads threads (0: the library default). Never allocates;
/// `workspace` must hold fia_workspace_size(p) bytes, any alignment.
void fia_run(const FiaParams& p, const FiaData& d, void* workspace, size_t workspace_size,
             int num_threads, const FiaKernels& k);

/// fia_run with the table of the active ISA (cpu::active_isa()).
void fia_run(const FiaParams& p, const FiaData& d, void* workspace, size_t workspace_size,
             int num_threads);

}  // namespace kvflash::cpu
