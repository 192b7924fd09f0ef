// merge_attention_states vs its fp64 oracle (reference/merge_reference.hpp), element by element:
// both statistic forms, sinks, empty parts (lse -inf / sum 0), all-empty rows, NaN inputs,
// strided inputs, every output dtype; bitwise independence of the thread count and of the
// order in which the same parts are laid out for rows with one non-empty part; validation.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/half.hpp"
#include "kvflash/merge.hpp"
#include "merge_reference.hpp"
#include "support/merge_compare.hpp"

namespace kvflash {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

struct Case {
  int64_t parts = 3, rows = 7, dim = 40;
  bool lse_form = true, sink = false;
  DType part_dtype = DType::kFloat32, out_dtype = DType::kFloat32;
  bool strided_out = false;  // partial_out with row stride 2*dim
  std::string name() const {
    return "K" + std::to_string(parts) + " R" + std::to_string(rows) + " D" +
           std::to_string(dim) + (lse_form ? " lse" : " max/sum") + (sink ? " sink" : "") +
           " in=" + dtype_name(part_dtype) + " out=" + dtype_name(out_dtype) +
           (strided_out ? " strided" : "");
  }
};

struct Data {
  std::vector<uint16_t> po16;
  std::vector<float> po32, m, s, sink, out32, lse, omax, osum;
  std::vector<uint16_t> out16;
  MergeArgs args;
};

// Parts with random statistics; some parts empty, row 0 all empty, row 1 one part only.
void fill(const Case& c, Data* d, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const int64_t rs = c.strided_out ? 2 * c.dim : c.dim;
  const int64_t n = c.parts * c.rows * rs;
  d->po32.assign(n, 0.0f);
  d->po16.assign(n, 0);
  for (int64_t i = 0; i < n; ++i) {
    const float x = nd(rng);
    d->po32[i] = x;
    d->po16[i] = c.part_dtype == DType::kBFloat16 ? core::float_to_bf16(x) : core::float_to_fp16(x);
  }
  d->m.assign(c.parts * c.rows, 0.0f);
  d->s.assign(c.parts * c.rows, 1.0f);
  for (int64_t k = 0; k < c.parts; ++k) {
    for (int64_t r = 0; r < c.rows; ++r) {
      const int64_t i = k * c.rows + r;
      bool empty = r == 0 || (r == 1 && k != c.parts - 1) || (r >= 2 && (rng() % 4) == 0);
      d->m[i] = 3.0f * nd(rng);
      d->s[i] = 1.0f + 10.0f * std::fabs(nd(rng));
      if (empty) {
        if (c.lse_form) d->m[i] = -kInf;
        else d->s[i] = 0.0f;
      }
    }
  }
  d->sink.assign(c.rows, 0.0f);
  for (auto& x : d->sink) x = nd(rng);
  MergeArgs& a = d->args;
  a = MergeArgs{};
  void* po = c.part_dtype == DType::kFloat32 ? static_cast<void*>(d->po32.data())
                                             : static_cast<void*>(d->po16.data());
  a.partial_out = TensorView::contiguous(po, c.part_dtype, {c.parts, c.rows, c.dim});
  a.partial_out.strides = {c.rows * rs, rs, 1};
  if (c.lse_form) {
    a.partial_lse = TensorView::contiguous(d->m.data(), DType::kFloat32, {c.parts, c.rows});
  } else {
    a.partial_max = TensorView::contiguous(d->m.data(), DType::kFloat32, {c.parts, c.rows});
    a.partial_sum = TensorView::contiguous(d->s.data(), DType::kFloat32, {c.parts, c.rows});
  }
  if (c.sink) a.sink = TensorView::contiguous(d->sink.data(), DType::kFloat32, {c.rows});
  d->out32.assign(c.rows * c.dim, std::nanf(""));
  d->out16.assign(c.rows * c.dim, 0x7E00);
  void* out = c.out_dtype == DType::kFloat32 ? static_cast<void*>(d->out32.data())
                                             : static_cast<void*>(d->out16.data());
  a.out = TensorView::contiguous(out, c.out_dtype, {c.rows, c.dim});
  d->lse.assign(c.rows, std::nanf(""));
  d->omax.assign(c.rows, std::nanf(""));
  d->osum.assign(c.rows, std::nanf(""));
  a.out_lse = TensorView::contiguous(d->lse.data(), DType::kFloat32, {c.rows});
  a.out_max = TensorView::contiguous(d->omax.data(), DType::kFloat32, {c.rows});
  a.out_sum = TensorView::contiguous(d->osum.data(), DType::kFloat32, {c.rows});
}

std::vector<Case> cases() {
  std::vector<Case> v;
  const DType dts[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};
  for (bool lse : {true, false}) {
    for (bool sink : {false, true}) {
      for (DType in : dts) {
        for (DType out : dts) {
          Case c;
          c.lse_form = lse;
          c.sink = sink;
          c.part_dtype = in;
          c.out_dtype = out;
          c.strided_out = in == out;
          c.parts = 1 + static_cast<int64_t>(v.size() % 5);
          c.dim = v.size() % 2 ? 512 : 33;
          v.push_back(c);
        }
      }
    }
  }
  return v;
}

TEST(Merge, MatchesReference) {
  uint32_t seed = 1;
  for (const Case& c : cases()) {
    Data d;
    fill(c, &d, seed++);
    ASSERT_EQ(merge_attention_states(d.args), Status::kSuccess) << c.name() << last_error_message();
    EXPECT_TRUE(testing::compare_merge_output(c.name(), d.args, reference::merge_reference(d.args)));
    // Row 0 has nothing: zeros, lse -inf, max = sum = 0 (without a sink).
    if (!c.sink) {
      EXPECT_EQ(d.lse[0], -kInf) << c.name();
      EXPECT_EQ(d.omax[0], 0.0f) << c.name();
      EXPECT_EQ(d.osum[0], 0.0f) << c.name();
    }
  }
}

// The bits do not depend on the thread count.
TEST(Merge, BitwiseIndependentOfThreads) {
  Case c;
  c.parts = 4;
  c.rows = 300;
  c.dim = 128;
  Data d1, d2;
  fill(c, &d1, 7);
  fill(c, &d2, 7);
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
  fill(c, &d, 3);
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
  fill(c, &d, 5);
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
