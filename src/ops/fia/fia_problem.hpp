// The normalised FIA / PFA problem (what a plan holds) and the data bound to it for one run.
//
// Validation (src/ops/fia/fia_validate.cpp) reduces every layout, output variant, paged or list
// KV, prefix, quantisation and mask form to the prefill kernels' plain parameter block
// (core::FiaParams, src/ops/fia/fia_params.hpp) plus per-batch rows and positions computed from
// the host lengths. What depends on device data is applied by the run, in stream order
// (fia_resolve_batches in ops/fia/fia_bind.hpp): query / KV left padding (query_padding_size,
// kv_padding_size) and the block-table check.
#pragma once

#include <cstdint>
#include <vector>

#include "kvflash/tensor.hpp"
#include "ops/fia/fia_params.hpp"
#include "ops/ifa/ifa_problem.hpp"

namespace kvflash::core {

struct FiaProblem {
  Device device{};
  /// The kernel's parameters; `batches` / `pad_rows` are left null (the run points them at its
  /// workspace copy, with left padding applied).
  FiaParams params;
  /// Per batch, without left padding: q_rows, kv_len (shared prefix included), the offsets of
  /// query row 0 / position 0 and the band of the plan's lengths.
  std::vector<FiaBatch> batches;
  bool tnd = false;           ///< TND / NTD query (rows counted in T)
  bool decode = false;        ///< D4: the Q_S = 1 decode branch
  bool list = false;          ///< key / value are B tensors
  int64_t rows = 0;           ///< query rows: B * S1, or T
  int64_t s1 = 0;             ///< the query's S (non-TND)
  int64_t tnd_rows_used = 0;  ///< TND: the last cumulative query length (rows past it are padding)
  /// Output and LSE element strides per batch (non-TND) for the padding rows.
  int64_t o_batch = 0, lse_batch = 0;
  /// The band rule (D3 / D4), re-applied per batch when left padding changes its lengths.
  int64_t sparse_mode = 0, pre = 0, next = 0;
  bool band_mask = false;  ///< mode 0 with a mask: the pre / next band applies
  /// Left padding (read by the run): applies when set; S of the query / of the key tensor.
  bool q_padding = false, kv_padding = false;
  int64_t q_capacity = 0, kv_capacity = 0;
  /// Paged KV: the cache's block count (ids must be in [0, num_blocks)).
  int64_t num_blocks = 0;
  /// D4's decode branch on IFA's kernels (fia_validate_decode.cpp): the call as IFA's problem.
  bool use_ifa = false;
  IfaProblem ifa;
  /// use_ifa: the requests IFA's kernels run, [0, ifa_requests); fewer than the batch in a mixed
  /// TND call, whose other requests the FIA kernel runs (its batches [0, ifa_requests) have no
  /// rows).
  int64_t ifa_requests = 0;
  bool mixed() const { return use_ifa && ifa_requests < params.batch; }
};

/// The pointers of one run (core::element0 of each view), and what a backend reads in stream
/// order: the padding sizes and the list entries (args' own vectors, borrowed for the run).
struct FiaData {
  FiaPointers ptrs;  ///< k_list / v_list left null: the run fills them in its workspace
  const int64_t* q_padding = nullptr;
  const int64_t* kv_padding = nullptr;
  const TensorView* key_list = nullptr;
  const TensorView* value_list = nullptr;
  IfaData ifa;  ///< use_ifa: the pointers as ifa::bind_data would bind them
};

/// Row i of a batch sees positions [i + lo, i + hi] (D3; D4: everything), from the batch's
/// lengths (q_rows = S1_b, kv_len = S2_b).
inline void fia_band(const FiaProblem& p, int64_t q_rows, int64_t kv_len, int64_t* lo,
                     int64_t* hi) {
  *lo = -kFiaUnbounded, *hi = kFiaUnbounded;
  if (p.decode) return;
  const int64_t d = kv_len - q_rows;
  switch (p.sparse_mode) {
    case 0:
      if (p.band_mask) *lo = -p.pre, *hi = p.next;
      break;
    case 2:
      *hi = 0;
      break;
    case 3:
      *hi = d;
      break;
    case 4:
      *lo = d - p.pre, *hi = d + p.next;
      break;
    default:
      break;
  }
}

}  // namespace kvflash::core
