// merge_attention_states beyond the backend sweep (backend_ops_test runs the shared case list,
// support/merge_cases.hpp, against the fp64 oracle): bitwise independence of the thread count,
// NaN inputs, validation.
#include "kvflash/merge.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "merge_reference.hpp"
#include "support/merge_cases.hpp"
#include "support/merge_compare.hpp"

namespace kvflash {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

using testing::fill_merge_case;
using Case = testing::MergeCase;
using Data = testing::MergeCaseData;

// The bits do not depend on the thread count.
TEST(Merge, BitwiseIndependentOfThreads) {
  Case c;
  c.parts = 4;
  c.rows = 300;
  c.dim = 128;
  Data d1, d2;
  fill_merge_case(c, &d1, 7);
  fill_merge_case(c, &d2, 7);
  d1.args.num_threads = 1;
  d2.args.num_threads = 3;
  ASSERT_EQ(merge_attention_states(d1.args), Status::kSuccess);
  ASSERT_EQ(merge_attention_states(d2.args), Status::kSuccess);
  EXPECT_EQ(std::memcmp(d1.out32.data(), d2.out32.data(), d1.out32.size() * 4), 0);
  EXPECT_EQ(std::memcmp(d1.lse.data(), d2.lse.data(), d1.lse.size() * 4), 0);
}

// A NaN statistic makes its row NaN; a NaN output element of a non-empty part reaches its column;
// an empty part is never read (its NaN output does not matter).
TEST(Merge, NonFinite) {
  Case c;
  c.parts = 2;
  c.rows = 3;
  c.dim = 4;
  Data d;
  fill_merge_case(c, &d, 3);
  // row 0: part 0 empty with NaN output, part 1 live
  d.m[0] = -kInf;
  d.m[c.rows + 0] = 0.5f;
  d.po32[0 * c.rows * c.dim + 0] = std::nanf("");
  // row 1: NaN lse in part 0
  d.m[1] = std::nanf("");
  d.m[c.rows + 1] = 0.0f;
  // row 2: NaN output element in part 1 column 2
  d.m[2] = 1.0f;
  d.m[c.rows + 2] = 0.0f;
  d.po32[1 * c.rows * c.dim + 2 * c.dim + 2] = std::nanf("");
  ASSERT_EQ(merge_attention_states(d.args), Status::kSuccess);
  for (int64_t i = 0; i < c.dim; ++i) EXPECT_EQ(d.out32[i], d.po32[c.rows * c.dim + i]);
  EXPECT_TRUE(std::isnan(d.lse[1]));
  for (int64_t i = 0; i < c.dim; ++i) EXPECT_TRUE(std::isnan(d.out32[c.dim + i]));
  EXPECT_TRUE(std::isnan(d.out32[2 * c.dim + 2]));
  EXPECT_FALSE(std::isnan(d.out32[2 * c.dim + 1]));
  EXPECT_TRUE(testing::compare_merge_output("nonfinite", d.args, reference::merge_reference(d.args)));
}

TEST(Merge, Validation) {
  Case c;
  Data d;
  fill_merge_case(c, &d, 5);
  MergeArgs a = d.args;
  a.partial_lse.reset();
  EXPECT_EQ(merge_attention_states(a), Status::kNullPtr);
  a = d.args;
  a.partial_max = a.partial_lse;
  EXPECT_EQ(merge_attention_states(a), Status::kInvalid);
  EXPECT_NE(std::string(last_error_message()).find("not both"), std::string::npos);
  a = d.args;
  a.out.shape[1] = c.dim + 1;
  a.out.strides[0] = c.dim + 1;
  EXPECT_EQ(merge_attention_states(a), Status::kInvalid);
  EXPECT_NE(std::string(last_error_message()).find("out shape"), std::string::npos)
      << last_error_message();
  a = d.args;
  a.partial_lse->dtype = DType::kFloat16;
  EXPECT_EQ(merge_attention_states(a), Status::kInvalid);
  a = d.args;
  a.out_sum.reset();
  EXPECT_EQ(merge_attention_states(a), Status::kInvalid);
  a = d.args;
  a.num_threads = -1;
  EXPECT_EQ(merge_attention_states(a), Status::kInvalid);
}

}  // namespace
}  // namespace kvflash
