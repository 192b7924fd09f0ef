#include "support/merge_cases.hpp"

#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <random>

#include "core/half.hpp"

namespace kvflash::testing {

std::string MergeCase::name() const {
  return "K" + std::to_string(parts) + " R" + std::to_string(rows) + " D" + std::to_string(dim) +
         (lse_form ? " lse" : " max/sum") + (sink ? " sink" : "") +
         " in=" + dtype_name(part_dtype) + " out=" + dtype_name(out_dtype) +
         (strided_out ? " strided" : "");
}

void fill_merge_case(const MergeCase& c, MergeCaseData* d, uint32_t seed) {
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
        if (c.lse_form)
          d->m[i] = -std::numeric_limits<float>::infinity();
        else
          d->s[i] = 0.0f;
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
  a.partial_out->strides = {c.rows * rs, rs, 1};
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

void add_special_values(const MergeCase& c, MergeCaseData* d, uint32_t seed) {
  std::mt19937 rng(seed);
  const uint32_t f32[] = {0x7fc00000u, 0xffc12345u, 0x7f800001u, 0x7fa00000u, 0x7f800000u,
                          0xff800000u, 0x00000001u, 0x807fffffu, 0x477ff000u, 0x477fefffu,
                          0x3f808000u, 0x3f818000u, 0x38800000u, 0x387fffffu, 0x33000000u};
  const uint16_t f16[] = {0x7e00u, 0xfe55u, 0x7c01u, 0x7d00u, 0x7c00u,
                          0xfc00u, 0x0001u, 0x83ffu, 0x7bffu, 0x0400u};
  const uint16_t b16[] = {0x7fc0u, 0xffc5u, 0x7f81u, 0x7fa0u, 0x7f80u,
                          0xff80u, 0x0001u, 0x807fu, 0x7f7fu, 0x0080u};
  const size_t n = d->po32.size();
  for (size_t j = 0; j < n / 7 + 1; ++j) {
    const size_t i = rng() % n;
    if (c.part_dtype == DType::kFloat32) {
      std::memcpy(&d->po32[i], &f32[rng() % std::size(f32)], 4);
    } else if (c.part_dtype == DType::kFloat16) {
      d->po16[i] = f16[rng() % std::size(f16)];
    } else {
      d->po16[i] = b16[rng() % std::size(b16)];
    }
  }
  // Some statistics NaN (payloads too) or huge, so weights are NaN, inf or 0.
  for (size_t j = 0; j < d->m.size() / 9 + 1; ++j) {
    const size_t i = rng() % d->m.size();
    const uint32_t v[] = {0x7fc00000u, 0xffc54321u, 0x7f800000u, 0x42fe0000u, 0xc2fe0000u};
    std::memcpy(&d->m[i], &v[rng() % std::size(v)], 4);
  }
}

std::vector<MergeCase> merge_cases() {
  std::vector<MergeCase> v;
  const DType dts[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};
  for (bool lse : {true, false}) {
    for (bool sink : {false, true}) {
      for (DType in : dts) {
        for (DType out : dts) {
          MergeCase c;
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

}  // namespace kvflash::testing
