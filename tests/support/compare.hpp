// Checks an IFA output buffer against the oracle, element by element (docs/semantics.md §0.2 item
// 3).
//
// fp16/bf16/fp32 output: |out - ref| <= atol + rtol * |ref| with rtol = 2^-10 / 2^-7 / 2^-16 and
// atol = rtol * max|V| over the positions that row attends; rows that attend nothing (empty or
// zeroed fully masked) must be exactly 0. int8 output: within 1 LSB of the rounded reference, and
// exactly sat(round(offset2)) for rows that attend nothing. The LSE (when requested) must match to
// a small tolerance, and be exactly -inf for empty rows.
// Non-finite reference values are matched exactly (docs/semantics.md §0.2 item 6): a NaN requires a
// NaN (int8 output: exactly 0), an infinity the same infinity; a NaN or infinite output where the
// reference is finite fails.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "ifa_reference.hpp"
#include "kvflash/ifa.hpp"

namespace kvflash::testing {

struct IfaCompareOptions {
  /// The case legitimately has (almost) only empty rows; otherwise a reference output that is
  /// mostly zero fails the comparison, because such a test could pass vacuously.
  bool allow_mostly_empty = false;
  /// When not null, receives the worst |out - ref| / bound over the output elements (a failing
  /// element counts as at least 1).
  double* worst = nullptr;
};

/// The comparators' rule for one value: a NaN reference requires a NaN, an infinite one the same
/// infinity; a finite one requires within_tolerance (which the caller computes from |got - want|,
/// so a non-finite got never passes it).
bool nonfinite_aware_pass(double got, double want, bool within_tolerance);

/// Relative tolerance for an output dtype (fp16 2^-10, bf16 2^-7, fp32 2^-16; int8: 0).
double ifa_rtol(DType out_dtype);

/// Compares args.attention_out (and args.softmax_lse if present) with ref. On failure the message
/// names the case, the number of failing elements and the worst one (b, h, d, got, want, bound).
::testing::AssertionResult compare_ifa_output(const std::string& case_name, const IfaArgs& args,
                                              const reference::IfaReference& ref,
                                              const IfaCompareOptions& options = {});

}  // namespace kvflash::testing
