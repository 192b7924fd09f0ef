// The merge's vector row kernels (merge_rows-inl.h, compiled per instruction set): given one row's
// live parts and their weights, they accumulate sum_k w_k * o_k and store it divided by L. Every
// element takes the portable kernel's fp32 operations in its order (widen, x * w, + acc starting
// from 0, / L, round to the output dtype) and the translation units are compiled without FMA
// contraction, so each level gives merge_kernel.cpp's baseline bits.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cpu/isa.hpp"
#include "kvflash/tensor.hpp"

namespace kvflash::cpu {

/// One output row: the live parts' rows (contiguous D, each naturally aligned for its dtype) in
/// part order, their weights, the sum L and the contiguous output row.
struct MergeRowJob {
  const std::byte* const* rows = nullptr;
  const float* weights = nullptr;
  int64_t parts = 0;
  int64_t dim = 0;
  float l = 0.0f;
  std::byte* out = nullptr;
  DType part_dtype = DType::kFloat32;
  DType out_dtype = DType::kFloat32;
};

using MergeRowFn = void (*)(const MergeRowJob& job);

namespace avx2 {
void merge_row(const MergeRowJob& job);
}  // namespace avx2
namespace avx512 {
void merge_row(const MergeRowJob& job);
}  // namespace avx512

/// The row kernel of isa's level, or nullptr at kScalar: the portable kernel then keeps its own
/// loop (merge_kernel.cpp), the reference the vector levels reproduce.
MergeRowFn merge_row_fn(Isa isa);

}  // namespace kvflash::cpu
