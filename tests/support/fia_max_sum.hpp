// The softmax max / sum outputs of a FIA case (FiaArgs::softmax_max, FlashAttentionScore's
// softmaxMax / softmaxSum): buffers of softmax_lse's shape with a last dim of 8, and their
// comparison with the oracle's per-row max and sum (tests/fia_max_sum_test.cpp,
// tests/flash_attention_score_test.cpp).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "fia_reference.hpp"
#include "kvflash/tensor.hpp"
#include "support/fia_cases.hpp"

namespace kvflash::testing {

struct FiaMaxSum {
  std::vector<float> max, sum;  ///< NaN until written
  std::vector<int64_t> shape;   ///< [T, N, 8] (TND / NTD) or [B, N, S1, 8]
  explicit FiaMaxSum(const FiaCaseData& data);
  TensorView max_view();
  TensorView sum_view();
};

/// Every row's 8 values against the oracle: the max within the LSE's tolerance
/// (support/fia_cases.hpp), the sum within 2^-9 relative; rows that see nothing, and padding
/// rows, exactly 0 and 0.
::testing::AssertionResult compare_fia_max_sum(const FiaCaseData& data,
                                               const reference::FiaReference& ref,
                                               const FiaMaxSum& got);

}  // namespace kvflash::testing
