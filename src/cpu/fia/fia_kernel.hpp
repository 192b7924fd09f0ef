// The CPU flash-attention prefill kernel of PromptFlashAttention / FusedInferAttentionScore, as
// pure functions over a POD parameter block and data pointers (the shape of the coming backend
// contract, run(Params, Data, ...)). Nothing here validates: the caller (the operator's binding)
// has reduced a valid call to per-batch row ranges, element offsets and a visibility band.
//
// Work: tasks are (batch, KV head, query tile). A query tile is kFiaQueryTile(G) consecutive query
// rows of a batch with all G query heads of the KV head (so K/V tiles are read once for G heads);
// key tiles are kFiaKeyTile positions. Both are cut at fixed multiples from the batch's first row
// / position, so every row's arithmetic is a function of its sequence alone: the same bits for any
// thread count and batch composition. A row's whole softmax is done inside one task (no split-KV).
// Key tiles outside the band of every row of a query tile are never visited. Tasks run longest
// first (cost = key tiles visited), claimed one at a time, which balances causal work.
//
// Numerics: fp32 throughout (scores, online softmax with src/cpu/softmax_state.h's rules, P kept
// in fp32, P·V), output rounded once (RNE).
//
// What it covers so far (docs/fia-semantics.md, "CPU prefill kernel"): fp16/bf16 Q and K/V of the
// same dtype; fp16/bf16/fp32 output; any layout expressible by row/head strides (BSH, BSND, BNSD,
// TND, NTD and the output variants); contiguous or paged K/V (BnBsH, BnNBsD); GQA; MLA rope
// (query_rope / key_rope); bands of sparse modes 0-4 and the decode branch; a full 1-byte mask;
// LSE; learnable sink; rows written as padding. Not yet: pse, int8 KV antiquant, int8 output,
// shared prefix, tensor lists.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kvflash/tensor.hpp"

namespace kvflash::cpu {

/// Key positions per key tile.
inline constexpr int64_t kFiaKeyTile = 64;
/// Score-matrix rows (query rows x G heads) a query tile aims at.
inline constexpr int64_t kFiaTileRows = 128;
/// Participants a workspace has scratch for (threads beyond it are not used).
inline constexpr int kFiaMaxParticipants = 64;
/// A band edge meaning "unbounded" (far beyond any length, small enough that sums never overflow).
inline constexpr int64_t kFiaUnbounded = int64_t{1} << 40;

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
  int64_t band_lo = -kFiaUnbounded, band_hi = kFiaUnbounded;
  /// Element offset of the mask element of (row 0, position 0) (when the call has a mask).
  int64_t mask_offset = 0;
};

/// A row whose every head is written as padding (D5: output 0, LSE +inf).
struct FiaPadRow {
  int64_t out_offset = 0, lse_offset = 0;
};

struct FiaParams {
  int64_t batch = 0, num_heads = 0, num_kv_heads = 0;
  int64_t head_dim = 0;   ///< Q/K D without rope
  int64_t rope_dim = 0;   ///< 0: no rope
  int64_t value_dim = 0;  ///< a multiple of 16
  DType dtype = DType::kFloat16;      ///< of query, query_rope, key, key_rope, value
  DType out_dtype = DType::kFloat16;  ///< fp16, bf16 or fp32
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
  bool has_mask = false;                     ///< 1-byte mask, nonzero = masked
  int64_t mask_row = 0, mask_col = 0;        ///< element strides (mask_row 0: one row for all)
  bool has_lse = false, has_sink = false;    ///< sink: (N,) of `sink_dtype`
  DType sink_dtype = DType::kBFloat16;
  const FiaBatch* batches = nullptr;  ///< [batch]
  const FiaPadRow* pad_rows = nullptr;
  int64_t num_pad_rows = 0;
};

struct FiaData {
  const void* q = nullptr;
  const void* q_rope = nullptr;
  const void* k = nullptr;
  const void* k_rope = nullptr;
  const void* v = nullptr;
  const int32_t* block_table = nullptr;
  const uint8_t* mask = nullptr;
  const void* sink = nullptr;
  void* out = nullptr;
  float* lse = nullptr;
};

/// Bytes of workspace fia_run needs for p: a function of p only (never of threads or ISA).
size_t fia_workspace_size(const FiaParams& p);

/// Runs the kernel at the active ISA (cpu::active_isa()) on up to num_threads threads (0: the
/// library default). Never allocates; `workspace` must hold fia_workspace_size(p) bytes, any
/// alignment.
void fia_run(const FiaParams& p, const FiaData& d, void* workspace, size_t workspace_size,
             int num_threads);

}  // namespace kvflash::cpu
