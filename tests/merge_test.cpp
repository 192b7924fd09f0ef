// merge_attention_states beyond the backend sweep (backend_ops_test runs the shared case list,
// support/merge_cases.hpp, against the fp64 oracle): bitwise independence of the thread count,
// NaN inputs, validation.
#include "kvflash/merge.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "cpu/isa.hpp"
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

// The outputs of a case as bytes, NaNs kept (exact) or each replaced by one quiet NaN.
std::vector<uint32_t> output_words(const Data& d, DType out, bool nan_class) {
  std::vector<uint32_t> w;
  auto f32 = [&](const std::vector<float>& v) {
    for (float x : v) {
      uint32_t u;
      std::memcpy(&u, &x, 4);
      w.push_back(nan_class && std::isnan(x) ? 0x7fc00000u : u);
    }
  };
  f32(d.out32);
  for (uint16_t x : d.out16) {
    const bool nan = out == DType::kBFloat16 ? (x & 0x7fffu) > 0x7f80u : (x & 0x7fffu) > 0x7c00u;
    w.push_back(nan_class && nan ? 0x7fffu : x);
  }
  f32(d.lse);
  f32(d.omax);
  f32(d.osum);
  return w;
}

// Every instruction-set level (the vector row kernels, cpu/merge/merge_rows.hpp) gives the
// portable kernel's bits: exactly on the case list and on longer rows; with special values salted
// in (NaN payloads, infinities, subnormals, fp16 overflow, bf16 ties), the same bits except which
// NaN a NaN element holds where two NaNs of different payloads meet (the portable kernel's own
// loops differ there: docs/perf-log.md "The merge operator at memory speed").
TEST(Merge, EveryIsaLevelGivesThePortableBits) {
  std::vector<Case> cases = testing::merge_cases();
  const size_t listed = cases.size();
  for (size_t i = 0; i < listed; i += 3) {
    Case c = cases[i];
    c.dim = (i / 3) % 2 ? 128 : 200;  // the model widths and a remainder past 3 vectors
    c.rows = 5;
    cases.push_back(c);
  }
  const cpu::Isa top = std::min(cpu::detected_isa(), cpu::kTopIsa);
  uint32_t seed = 1;
  for (const Case& c : cases) {
    for (bool special : {false, true}) {
      std::vector<uint32_t> want;
      for (int level = 0; level <= static_cast<int>(top); ++level) {
        cpu::set_isa_cap(static_cast<cpu::Isa>(level));
        Data d;
        fill_merge_case(c, &d, seed);
        if (special) testing::add_special_values(c, &d, seed);
        ASSERT_EQ(merge_attention_states(d.args), Status::kSuccess) << last_error_message();
        const std::vector<uint32_t> got = output_words(d, c.out_dtype, special);
        if (level == 0) {
          want = got;
        } else {
          size_t first = 0;
          while (first < got.size() && first < want.size() && got[first] == want[first]) ++first;
          EXPECT_EQ(got, want) << "first difference at word " << first << " of " << got.size()
                               << ": " << c.name() << (special ? " special" : "") << " at "
                               << cpu::isa_name(static_cast<cpu::Isa>(level));
        }
      }
      cpu::set_isa_cap(std::nullopt);
    }
    ++seed;
  }
}

// Two row dims in a permuted layout (parts [K][N][B][D] seen as [K, B, N, D], the LSE likewise,
// the sink per head broadcast over B with stride 0), tasks that start inside a row dim: every
// level and thread count gives the same bits, within the oracle's bounds.
TEST(Merge, RowDimsInAnyLayout) {
  const int64_t k = 4, b = 7, n = 5, dim = 512;
  std::vector<float> po(k * n * b * dim), lse(k * n * b), sink(n);
  uint32_t x = 12345;
  auto next = [&] {
    x = x * 1664525u + 1013904223u;
    return static_cast<float>(x >> 8) / 16777216.0f * 4.0f - 2.0f;
  };
  for (float& v : po) v = next();
  for (float& v : lse) v = next();
  for (float& v : sink) v = next();
  lse[3] = -kInf;  // an empty part
  std::vector<uint32_t> want;
  for (int level = 0; level <= static_cast<int>(std::min(cpu::detected_isa(), cpu::kTopIsa));
       ++level) {
    for (int threads : {1, 3}) {
      cpu::set_isa_cap(static_cast<cpu::Isa>(level));
      std::vector<float> out(b * n * dim, std::nanf("")), out_lse(b * n, std::nanf(""));
      MergeArgs a;
      a.partial_out = TensorView::contiguous(po.data(), DType::kFloat32, {k, b, n, dim});
      a.partial_out->strides = {n * b * dim, dim, b * dim, 1};
      a.partial_lse = TensorView::contiguous(lse.data(), DType::kFloat32, {k, b, n});
      a.partial_lse->strides = {n * b, 1, b};
      a.sink = TensorView::contiguous(sink.data(), DType::kFloat32, {b, n});
      a.sink->strides = {0, 1};
      a.out = TensorView::contiguous(out.data(), DType::kFloat32, {b, n, dim});
      a.out_lse = TensorView::contiguous(out_lse.data(), DType::kFloat32, {b, n});
      a.num_threads = threads;
      ASSERT_EQ(merge_attention_states(a), Status::kSuccess) << last_error_message();
      EXPECT_TRUE(testing::compare_merge_output("row dims", a, reference::merge_reference(a)));
      std::vector<uint32_t> got(out.size() + out_lse.size());
      std::memcpy(got.data(), out.data(), out.size() * 4);
      std::memcpy(got.data() + out.size(), out_lse.data(), out_lse.size() * 4);
      if (want.empty()) want = got;
      EXPECT_EQ(got, want) << cpu::isa_name(static_cast<cpu::Isa>(level)) << " threads " << threads;
    }
  }
  cpu::set_isa_cap(std::nullopt);
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
  EXPECT_TRUE(
      testing::compare_merge_output("nonfinite", d.args, reference::merge_reference(d.args)));
}

// The list form (aclnnAttentionUpdate's): the parts as separate tensors, here copied to other
// buffers in reverse order, give the stacked form's bits, every dtype and thread count.
TEST(Merge, ListFormGivesTheStackedBits) {
  for (DType in : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (int threads : {1, 3}) {
      Case c;
      c.parts = 4, c.rows = 37, c.dim = 24, c.part_dtype = in, c.out_dtype = in;
      Data stacked, listed;
      fill_merge_case(c, &stacked, 11);
      fill_merge_case(c, &listed, 11);
      stacked.args.num_threads = listed.args.num_threads = threads;
      ASSERT_EQ(merge_attention_states(stacked.args), Status::kSuccess) << last_error_message();
      // Part k's rows in buffer K-1-k.
      const int64_t es = static_cast<int64_t>(dtype_size(in)), n = c.rows * c.dim;
      std::vector<std::vector<uint8_t>> outs(c.parts);
      std::vector<std::vector<float>> lses(c.parts);
      MergeArgs& a = listed.args;
      const auto* po = static_cast<const uint8_t*>(a.partial_out->data);
      for (int64_t k = 0; k < c.parts; ++k) {
        std::vector<uint8_t>& o = outs[c.parts - 1 - k];
        o.assign(po + k * n * es, po + (k + 1) * n * es);
        std::vector<float>& l = lses[c.parts - 1 - k];
        l.assign(listed.m.begin() + k * c.rows, listed.m.begin() + (k + 1) * c.rows);
      }
      for (int64_t k = 0; k < c.parts; ++k) {
        a.partial_out_list.push_back(
            TensorView::contiguous(outs[c.parts - 1 - k].data(), in, {c.rows, c.dim}));
        a.partial_lse_list.push_back(
            TensorView::contiguous(lses[c.parts - 1 - k].data(), DType::kFloat32, {c.rows}));
      }
      a.partial_out.reset();
      a.partial_lse.reset();
      ASSERT_EQ(merge_attention_states(a), Status::kSuccess) << last_error_message();
      const size_t bytes = static_cast<size_t>(n * es);
      EXPECT_EQ(std::memcmp(a.out.data, stacked.args.out.data, bytes), 0) << dtype_name(in);
      EXPECT_EQ(std::memcmp(listed.lse.data(), stacked.lse.data(), c.rows * 4), 0);
      EXPECT_EQ(std::memcmp(listed.omax.data(), stacked.omax.data(), c.rows * 4), 0);
    }
  }
}

TEST(Merge, ListFormValidation) {
  Case c;
  c.parts = 2, c.rows = 3, c.dim = 8;
  Data d;
  fill_merge_case(c, &d, 5);
  std::vector<float> o0(24), o1(24), l0(3), l1(3);
  MergeArgs base = d.args;
  base.partial_out.reset();
  base.partial_lse.reset();
  base.partial_out_list = {TensorView::contiguous(o0.data(), DType::kFloat32, {3, 8}),
                           TensorView::contiguous(o1.data(), DType::kFloat32, {3, 8})};
  base.partial_lse_list = {TensorView::contiguous(l0.data(), DType::kFloat32, {3}),
                           TensorView::contiguous(l1.data(), DType::kFloat32, {3})};
  ASSERT_EQ(merge_attention_states(base), Status::kSuccess) << last_error_message();
  const auto expect = [](const MergeArgs& a, Status s, const char* msg) {
    EXPECT_EQ(merge_attention_states(a), s) << msg;
    EXPECT_NE(std::string(last_error_message()).find(msg), std::string::npos)
        << last_error_message();
  };
  MergeArgs a = base;
  a.partial_lse_list.pop_back();
  expect(a, Status::kInvalid, "partial_lse_list must hold as many tensors as partial_out_list (2)");
  a = base;
  a.partial_lse_list.clear();
  expect(a, Status::kNullPtr, "partial_lse_list is required with partial_out_list");
  a = base;
  a.partial_lse = d.args.partial_lse;
  expect(a, Status::kInvalid, "must be absent with the lists");
  a = base;
  a.partial_out = d.args.partial_out;
  expect(a, Status::kInvalid, "give either partial_out or partial_out_list");
  a = base;
  a.partial_out_list[1].dtype = DType::kFloat16;
  expect(a, Status::kInvalid, "partial_out_list[1]");
  a = base;
  a.partial_out_list[1].strides[0] = 16;
  expect(a, Status::kInvalid, "must have partial_out_list[0]'s dtype, dims and strides");
  a = base;
  a.partial_lse_list[1] = TensorView::contiguous(l1.data(), DType::kFloat32, {2});
  expect(a, Status::kInvalid, "partial_lse_list[1]");
  a = base;
  a.partial_lse_list[0].dtype = DType::kFloat16;
  expect(a, Status::kInvalid, "partial_lse_list[0] dtype must be fp32");
  a = base;
  a.partial_out_list[0].data = nullptr;
  expect(a, Status::kNullPtr, "partial_out_list[0] is null");
  a = base;
  a.partial_lse_list[1].device = {DeviceType::kCuda, 0};
  expect(a, Status::kInvalid, "but partial_out_list[0] is on cpu");
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
