// The shared list of merge_attention_states test cases and the builder of their inputs (random
// statistics; some parts empty, row 0 all empty, row 1 one part only), used by the backend sweep
// (backend_ops_test) and the merge tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kvflash/merge.hpp"

namespace kvflash::testing {

struct MergeCase {
  int64_t parts = 3, rows = 7, dim = 40;
  bool lse_form = true, sink = false;
  DType part_dtype = DType::kFloat32, out_dtype = DType::kFloat32;
  bool strided_out = false;  ///< partial_out with row stride 2*dim
  std::string name() const;
};

/// The buffers of one case and the arguments over them.
struct MergeCaseData {
  std::vector<uint16_t> po16;
  std::vector<float> po32, m, s, sink, out32, lse, omax, osum;
  std::vector<uint16_t> out16;
  MergeArgs args;
};

/// Fills *d for c from seed: parts with random statistics, some empty, row 0 all empty, row 1
/// with its last part only; outputs NaN.
void fill_merge_case(const MergeCase& c, MergeCaseData* d, uint32_t seed);

/// Salts *d's part data (filled for c) with values whose bits the conversions and the arithmetic
/// must keep: NaNs of several payloads (quiet and signalling), infinities, subnormals, values that
/// overflow fp16 or round across a bf16 tie; and some statistics NaN or huge (weights NaN, inf,
/// 0). The ISA-level test and bench/merge_bench.cpp's bit hash use it.
void add_special_values(const MergeCase& c, MergeCaseData* d, uint32_t seed);

/// Both statistic forms, with and without a sink, every input and output dtype.
std::vector<MergeCase> merge_cases();

}  // namespace kvflash::testing
