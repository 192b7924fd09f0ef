// The IncreFlashAttention oracle (docs/semantics.md §0.2 item 1): a plain double-precision
// implementation that reads the user-level IfaArgs directly — layouts, tensor lists, paged caches,
// strides and offsets — so that it shares no code with the validator's normalisation (src/ifa/) or
// the kernels (src/cpu/). It is deliberately slow and obvious: every element is read through its
// view, every score is computed in double, the softmax is an exact two-pass one. Non-finite inputs
// go through the plain IEEE arithmetic of those formulas, with a max that keeps NaN
// (docs/semantics.md §0.2 item 6).
//
// It assumes the arguments are valid (IfaPlan::create accepted them and every referenced block id
// is in range); it does not check anything.
#pragma once

#include <cstdint>
#include <vector>

#include "kvflash/ifa.hpp"

namespace kvflash::reference {

/// How a (batch, head) row was produced.
enum class IfaRowKind : uint8_t {
  kNormal,       ///< at least one attended position is unmasked
  kEmpty,        ///< no positions: length 0, or left-padding start < 0
  kFullyMasked,  ///< every attended position masked: mean of V, or zeros with
                 ///< zero_fully_masked_rows
};

/// The oracle's result. Element (b, h, d) is at index (b * num_heads + h) * head_dim + d; row (b,
/// h) is at b * num_heads + h.
struct IfaReference {
  int64_t batch = 0, num_heads = 0, head_dim = 0;
  DType out_dtype = DType::kFloat16;

  /// The normalised attention output o in double (0 for empty rows and zeroed fully masked rows).
  std::vector<double> attention;
  /// What the output element approximates, in the output's own units: o for fp16/bf16/fp32
  /// output, o * scale2 + offset2 for int8 output (before rounding and saturation).
  std::vector<double> expected;
  /// expected rounded once to the output dtype (RNE; int8: round half to even, then saturate).
  std::vector<double> rounded;
  /// Natural-log LSE of the final scores per row; -inf for empty and zeroed rows.
  std::vector<double> lse;
  /// max |V| (dequantised) over the finite values of the positions each row attends (0 when it
  /// attends none).
  std::vector<double> v_absmax;
  std::vector<IfaRowKind> row_kind;

  int64_t index(int64_t b, int64_t h, int64_t d) const {
    return (b * num_heads + h) * head_dim + d;
  }
  int64_t row(int64_t b, int64_t h) const { return b * num_heads + h; }
};

/// Computes the reference result of one IFA call.
IfaReference ifa_reference(const IfaArgs& args);

/// Rounds x to the nearest value of dtype (fp16/bf16/fp32: RNE with overflow to inf, NaN kept;
/// int8: round half to even, saturate to [-128, 127], NaN -> 0; other dtypes: x unchanged).
double ifa_round_to_dtype(double x, DType dtype);

}  // namespace kvflash::reference
