// The PromptFlashAttention / FusedInferAttentionScore oracle (docs/semantics.md §0.2 item 1; contract
// docs/fia-pfa-indexer.md, decisions D1-D8; kvflash's own choices in docs/fia-semantics.md).
// A plain double-precision implementation that reads the user-level arguments directly (layouts,
// tensor lists, paged caches, strides and offsets, host length lists) and shares no code with any
// kernel. Slow and obvious on purpose: every element is read through its view, every score is a
// double, the softmax is an exact two-pass one over the visible positions of the row.
//
// FiaCall is the library's FiaArgs (aclnnFusedInferAttentionScoreV4's arguments, docs/fia-pfa-indexer.md
// §2.1); PFA (aclnnPromptFlashAttentionV3) is the subset with `prompt = true` (no decode branch, D4
// is FIA's rule). It assumes valid arguments (shapes, dtypes, in-range block ids) and checks
// nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kvflash/fia.hpp"
#include "kvflash/tensor.hpp"

namespace kvflash::reference {

inline constexpr int64_t kFiaTokensMax = kvflash::kFiaTokensMax;  // pre/next_tokens default

/// The oracle reads the library's own argument struct (as li_reference's LiCall): one list of
/// FIA's arguments, declared in include/kvflash/fia.hpp and described by src/ops/fia/fia_fields.hpp.
/// Members D1 refuses (full int8 quantisation, V5's start indices) are not read: a call the
/// library accepts has them absent.
using FiaCall = FiaArgs;

/// How a (query row, head) result was produced.
enum class FiaRowKind : uint8_t {
  kNormal,   ///< at least one visible position
  kEmpty,    ///< nothing visible (D5): output 0, LSE +inf
  kPadding,  ///< a query row outside the batch's actual length (D5): output 0, LSE +inf
};

/// The result. Rows are the query layout's token rows: r = b * S1 + s for B/S layouts (s the
/// physical position in the S dim), r = t for TND/NTD. Element (r, h, d) is at index(r, h, d).
struct FiaReference {
  int64_t rows = 0, batch = 0, num_heads = 0, value_dim = 0;
  DType out_dtype = DType::kFloat16;
  bool decode_branch = false;  ///< D4: Q_S = 1 ran IFA's semantics

  std::vector<double> attention;  ///< normalised output o (0 for empty/padding rows)
  std::vector<double> expected;   ///< o, or o * scale2 + offset2 for int8 output (unrounded)
  std::vector<double> rounded;    ///< expected rounded to out_dtype (RNE; int8 half-even, sat)
  std::vector<double> lse;        ///< natural-log LSE per (r, h); +inf for empty/padding rows
  /// Per (r, h): the largest visible score m and sum l of exp(s - m) (the sink's term included),
  /// lse = m + log(l); 0 and 0 for empty/padding rows (FiaArgs::softmax_max / softmax_sum).
  std::vector<double> softmax_max, softmax_sum;
  std::vector<double> v_absmax;   ///< max |V| over the finite values of the visible positions
  std::vector<FiaRowKind> row_kind;
  std::vector<int64_t> row_batch;  ///< per r: its batch (or -1 for TND rows past the last length)
  std::vector<int64_t> row_index;  ///< per r: the row's index i within its batch's valid rows

  int64_t index(int64_t r, int64_t h, int64_t d) const { return (r * num_heads + h) * value_dim + d; }
  int64_t row(int64_t r, int64_t h) const { return r * num_heads + h; }
};

/// The reference result of one call.
FiaReference fia_reference(const FiaCall& call);

/// The layouts of call.input_layout: {query layout, output layout} ("BSH", "BSND", "BNSD",
/// "TND", "NTD", "NBSD"), e.g. "BNSD_BSND" -> {"BNSD", "BSND"}, "TND" -> {"TND", "TND"}.
struct FiaLayouts {
  std::string in, out;
};
FiaLayouts fia_layouts(const std::string& input_layout);

/// Element offset in attention_out of (r, h, d) (rows as in FiaReference), and in softmax_lse of
/// (r, h). S1 and B come from the query.
int64_t fia_out_element(const FiaCall& call, int64_t r, int64_t h, int64_t d);
int64_t fia_lse_element(const FiaCall& call, int64_t r, int64_t h);

}  // namespace kvflash::reference
