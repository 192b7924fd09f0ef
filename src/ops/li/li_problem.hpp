// The normalised LightningIndexer problem (what a plan holds) and the pointers bound to it for one
// run. Validation (src/ops/li/li_validate.cpp) turns the user's layouts (BSND / TND query, BSND /
// TND / PA_BSND key) into LiParams, built from metadata only: no data pointer, no value read from
// a tensor. The lengths and the block table are device data, read by the run in stream order
// (docs/lightning_indexer.md). The CPU kernel (src/cpu/li/li_kernel.hpp) takes these as they are.
#pragma once

#include <cstdint>

#include "kvflash/tensor.hpp"

namespace kvflash::core {

enum class LiKeyLayout : int32_t { kBsnd = 0, kTnd = 1, kPaged = 2 };

/// One call's problem: everything known from metadata. Strides and offsets are in elements of the
/// tensor they describe; every pointer of LiData points at element 0 of its view.
struct LiParams {
  int64_t batch = 0;
  int64_t num_heads = 0;             ///< N1, 1..64
  int64_t sparse_count = 0;          ///< K
  int64_t sparse_mode = 3;           ///< 0 or 3
  bool q_tnd = false;                ///< query TND (rows t) or BSND (rows b * s1 + i)
  int64_t s1 = 0;                    ///< BSND query S1
  int64_t num_rows = 0;              ///< B * S1 or T
  DType dtype = DType::kBFloat16;    ///< query and key: fp16 or bf16
  DType w_dtype = DType::kBFloat16;  ///< weights: fp32 or the query dtype
  /// Query element (b, i, h, d) at b*q_sb + i*q_ss + h*q_sh + d*q_sd (TND: t*q_ss + ...).
  int64_t q_sb = 0, q_ss = 0, q_sh = 0, q_sd = 1;
  /// Weight element (b, i, h) at b*w_sb + i*w_ss + h*w_sh (TND: t*w_ss + h*w_sh).
  int64_t w_sb = 0, w_ss = 0, w_sh = 1;
  /// Key element: BSND (b, j, d) at b*k_s0 + j*k_s1 + d*k_sd; TND (t, d) at t*k_s1 + d*k_sd;
  /// paged (block, pos, d) at block*k_s0 + pos*k_s1 + d*k_sd.
  LiKeyLayout key_layout = LiKeyLayout::kBsnd;
  int64_t k_s0 = 0, k_s1 = 0, k_sd = 1;
  /// Most keys one batch may have: BSND S2, TND T2, paged block_table columns * block_size.
  int64_t kv_cap = 0;
  int64_t block_size = 0, num_blocks = 0, bt_s0 = 0, bt_s1 = 0;  ///< paged only
  /// Length tensors: per batch (BSND query, BSND / paged key) or prefix sums (TND), int32 or
  /// int64 (asq_64 / ask_64) with the given element stride (core/length_tensor.hpp). Absent:
  /// BSND query S1, BSND key S2 (required otherwise).
  bool has_asq = false, has_ask = false;
  bool asq_64 = false, ask_64 = false;
  int64_t asq_s = 1, ask_s = 1;
  bool return_value = false;
  // Outputs are contiguous [num_rows, sparse_count]: int32 indices, values in the query dtype.
};

/// The pointers of one call (element 0 of each view).
struct LiData {
  const void* query = nullptr;
  const void* key = nullptr;
  const void* weights = nullptr;
  const void* asq = nullptr;  ///< int32 or int64 entries (LiParams::asq_64)
  const void* ask = nullptr;
  const int32_t* block_table = nullptr;
  int32_t* indices = nullptr;
  void* values = nullptr;  ///< only when return_value
  /// Optional (null: not written): the fp32 scores of the selection, [num_rows, sparse_count],
  /// -inf in -1 slots, NaN in every slot of a faulted row. What a context-parallel rank hands to
  /// li_merge_topk: the query-dtype values are rounded, so equal-looking values could order
  /// differently from the scores they came from.
  float* scores = nullptr;
};

/// LiParams plus where the call's tensors live (what the backend list dispatches on), and
/// whether sparse_values is fp32 (then bound as LiData::scores, and LiParams::return_value is
/// off: the query-dtype values are not written).
struct LiProblem : LiParams {
  Device device{};
  bool scores_out = false;
};

}  // namespace kvflash::core
