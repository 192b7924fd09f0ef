// The LightningIndexer oracle (docs/fia-pfa-indexer.md D9, D10, docs/fia-pfa-indexer.md §3.3;
// docs/semantics.md §0.2): a plain double-precision implementation that reads the user-level
// arguments (LiCall) directly — layouts, per-batch or cumulative lengths, the block table, strides
// and offsets — so it shares no code with the kernels (src/cpu/li/). Every element is read through
// its view; a score is
//   score[t, s] = sum_h w[t,h] * relu(q[t,h,:] . k[s,:])
// in double (no scale), the selection is a full stable sort of the row's valid keys by descending
// score (NaN above everything, ties to the lower key index), and values are rounded once (RNE)
// from double to the query dtype. docs/lightning_indexer.md states the contract.
//
// It assumes the arguments are valid (shapes, dtypes, layouts, attributes); it checks nothing of
// them. It does check the device data the operator reads at run time (lengths, block ids) exactly
// as D10 says the operator must: a bad entry faults rows (indices -1, values NaN).
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "kvflash/li.hpp"
#include "kvflash/tensor.hpp"

namespace kvflash::reference {

inline constexpr int64_t kLiHeadDim = 128;

/// The user-level arguments of one LightningIndexer call: the public LightningIndexerArgs
/// (kvflash/li.hpp), named and typed as aclnnLightningIndexerGetWorkspaceSize / torch
/// npu_lightning_indexer (docs/fia-pfa-indexer.md §1.4, §2.1). num_threads is ignored here.
using LiCall = LightningIndexerArgs;

/// How a query row was produced.
enum class LiRowKind : uint8_t {
  kNormal,   ///< at least one valid key
  kEmpty,    ///< inside its batch, no valid key (S2_b = 0, or mode 3 with S2_b - S1_b + i + 1 <= 0)
  kPadding,  ///< BSND i >= S1_b, or a TND row past the last prefix sum: all -1
  kFault,    ///< its batch's device data was bad (D10): all -1, values NaN
};

/// The oracle's result. Rows are numbered like the query: BSND r = b*S1 + i, TND r = t; slot k of
/// row r is at r * sparse_count + k.
struct LiReference {
  int64_t num_rows = 0, sparse_count = 0;
  std::vector<LiRowKind> row_kind;  ///< per row
  std::vector<int64_t> batch;       ///< per row: its batch (-1 for TND rows outside every batch)
  std::vector<int64_t> valid;       ///< per row: number of valid keys n (keys 0..n-1)
  std::vector<int64_t> key_begin;   ///< per row: where its n keys start in score / magnitude
  /// Per valid key of every normal row (key j of row r at key_begin[r] + j): the score in double,
  /// and its magnitude sum_h |w_h| sum_d |q_hd k_jd| (the scale of any fp32 evaluation's error).
  std::vector<double> score, magnitude;
  std::vector<int32_t> indices;  ///< [rows, K]: descending score, ties to the lower index, -1 after
  std::vector<double> values;    ///< [rows, K]: score rounded once to the query dtype; -inf in -1
                                 ///< slots, NaN in every slot of a faulted row
  /// The first faulted device-data entry (D10), "" if none: what the operator's status names.
  std::string fault;

  int64_t slot(int64_t r, int64_t k) const { return r * sparse_count + k; }
  double key_score(int64_t r, int64_t j) const { return score[key_begin[r] + j]; }
  double key_magnitude(int64_t r, int64_t j) const { return magnitude[key_begin[r] + j]; }
};

/// Computes the reference result of one call.
LiReference li_reference(const LiCall& call);

/// True when score a ranks strictly above score b in the selection order (D9: NaN above every
/// number, then descending value; +0 and -0 are equal). Equal ranks are ordered by key index.
bool li_score_above(double a, double b);

}  // namespace kvflash::reference
