// The normalised merge problem (what a MergePlan holds) and the pointers of one run.
//
// Rows are numbered r in [0, num_rows) in row-major order of the "rows..." dims; every per-row
// input is addressed through its strides over those dims (MergeRowStrides), the contiguous
// outputs at r (and r * head_dim).
#pragma once

#include <array>
#include <cstdint>

#include "kvflash/tensor.hpp"

namespace kvflash::core {

inline constexpr int kMergeMaxRowDims = kMaxRank - 2;

/// The element offset of row r of a view: sum over the row dims of index_i * stride_i.
struct MergeRowStrides {
  std::array<int64_t, kMergeMaxRowDims> s{};
};

struct MergeProblem {
  Device device{};
  int64_t num_parts = 0;  ///< K
  int64_t num_rows = 0;   ///< product of the row dims
  int64_t head_dim = 0;   ///< D
  int row_rank = 0;       ///< number of row dims
  std::array<int64_t, kMergeMaxRowDims> row_dims{};

  DType part_dtype = DType::kFloat32;  ///< partial_out: fp32 | fp16 | bf16
  DType out_dtype = DType::kFloat32;   ///< out: fp32 | fp16 | bf16

  /// partial_out element (k, r, d) at k * po_k + rows(po) + d * po_d; in the list form (parts)
  /// at rows(po) + d * po_d from element 0 of list entry k.
  bool parts = false;
  int64_t po_k = 0, po_d = 1;
  MergeRowStrides po;
  /// partial_lse (lse form) or partial_max (max/sum form): (k, r) at k * pm_k + rows(pm).
  bool lse_form = true;
  int64_t pm_k = 0;
  MergeRowStrides pm;
  /// partial_sum (max/sum form only).
  int64_t ps_k = 0;
  MergeRowStrides ps;
  bool has_sink = false;
  MergeRowStrides sink;

  bool has_out_lse = false;
  bool has_out_max_sum = false;
};

struct MergeData {
  const void* partial_out = nullptr;
  const float* partial_m = nullptr;  ///< lse or max
  /// The list form: the K entries of partial_out_list / partial_lse_list (the run's arguments),
  /// whose element 0 is each part's base; partial_out / partial_m are then null.
  const TensorView* part_out = nullptr;
  const TensorView* part_lse = nullptr;
  const float* partial_sum = nullptr;
  const float* sink = nullptr;
  void* out = nullptr;
  float* out_lse = nullptr;
  float* out_max = nullptr;
  float* out_sum = nullptr;
};

}  // namespace kvflash::core
