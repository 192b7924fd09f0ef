// Checks merge_attention_states' outputs against its oracle (reference/merge_reference.hpp),
// element by element, with the tolerances of docs/conventions.md:
//   out: |out - ref| <= rtol * (max|o_k| of the row + |ref|), rtol = 2^-10 / 2^-7 / 2^-16 for
//        fp16 / bf16 / fp32 output; rows with nothing to merge exactly 0;
//   lse: within 2^-10 + 2^-16 * |lse|, exactly -inf for rows with nothing;
//   max: exact (a max of the inputs); sum: within 2^-16 * sum; 0 and 0 for rows with nothing.
// Non-finite reference values are matched exactly (a NaN requires a NaN, an infinity the same
// infinity).
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "kvflash/merge.hpp"
#include "merge_reference.hpp"

namespace kvflash::testing {

::testing::AssertionResult compare_merge_output(const std::string& case_name,
                                                const MergeArgs& args,
                                                const reference::MergeReference& ref);

}  // namespace kvflash::testing
