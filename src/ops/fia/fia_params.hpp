// The plain-data description of one FIA / PFA prefill problem (FiaParams: scalars, strides, per-batch
// rows, the dequantisation parameters) and the pointers of one run (FiaPointers). The operator
// layer owns it: the validator (src/ops/fia/fia_validate.cpp) fills it from FusedInferAttentionScore's
// and PromptFlashAttention's arguments, the binder (src/ops/fia/fia_bind.cpp) points it at a run's
// tensors, and every backend's prefill kernel reads it (the CPU's: src/cpu/fia/fia_kernel.hpp),
// without a pointer into host-only containers, so a device kernel can take it by value.
#pragma once

#include <cstdint>

#include "kvflash/tensor.hpp"

namespace kvflash::core {

/// The softmax max / sum outputs' last dim: each row's value written this many times
/// (FlashAttentionScore's broadcast form, FiaArgs::softmax_max).
inline constexpr int64_t kFiaMaxSumWidth = 8;
/// A band edge meaning "unbounded" (far beyond any length, small enough that sums never overflow).
inline constexpr int64_t kFiaUnbounded = int64_t{1} << 40;

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

/// The pointers of one run: element 0 of each view (absent: null).
struct FiaPointers {
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

}  // namespace kvflash::core
