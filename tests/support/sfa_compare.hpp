// Checks an SFA output against the oracle, element by element (docs/semantics.md §0.2 item 3).
//
// Output: |out - ref| <= atol + rtol * |ref| with rtol = 2^-10 (fp16) / 2^-7 (bf16) and atol =
// rtol * max|V| over the row's selected positions; rows that select nothing (empty, invalid or
// uncovered) must be exactly 0. softmax_max / softmax_sum (when requested) within a tolerance that
// follows the fp32 score error, and exactly 0 for invalid and uncovered rows. Non-finite reference
// values are matched exactly (a NaN requires a NaN, an infinity the same infinity; see
// nonfinite_aware_pass in compare.hpp).
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "kvflash/sfa.hpp"
#include "sfa_reference.hpp"

namespace kvflash::testing {

/// Relative tolerance of an SFA output dtype (fp16 2^-10, bf16 2^-7).
double sfa_rtol(DType dtype);

/// Compares args.attention_out (and the softmax outputs if requested) with ref. A reference in
/// which fewer than a quarter of the rows attend anything fails unless allow_mostly_empty. When
/// worst is not null it receives the worst |out - ref| / bound over the output elements of rows
/// that attend something (a failing element counts as at least 1).
::testing::AssertionResult compare_sfa_output(const std::string& case_name, const SfaArgs& args,
                                              const reference::SfaReference& ref,
                                              bool allow_mostly_empty = false,
                                              double* worst = nullptr);

}  // namespace kvflash::testing
