// Decoding a fuzz input into one SparseFlashAttention call, and the checks of its result. As for
// IFA (ifa_fuzz.hpp): a small valid case (testing::SfaCase: layouts, dtype, heads, sparse size and
// block size, lengths, paging, mode, index pattern, sinks, softmax outputs, strides) built by the
// shared case builder, then mutations of optional tensors, attributes, any tensor's metadata,
// device data (sparse indices, lengths and block ids set to -1, out-of-range, duplicate,
// INT32_MAX and other specials) and NaN/inf in attended data.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "fuzz_input.hpp"
#include "kvflash/sfa.hpp"
#include "mutate.hpp"
#include "support/sfa_cases.hpp"

namespace kvflash::fuzz {

struct SfaFuzzCase {
  testing::SfaCase spec;
  std::unique_ptr<testing::SfaCaseData> data;
  SfaArgs args;
  CaseMemory mem;
  testing::TestRng rng{1};
  bool differential = true;
  std::vector<Slot> slots();
};

const std::vector<const char*>& sfa_names();

/// Decodes a case; `sinks`: the entry point can pass sinks (V2, C++); `extensions`: C++-only
/// fields (num_threads, devices).
bool decode_sfa(FuzzInput& in, bool sinks, bool extensions, SfaFuzzCase* f);

bool sfa_affordable(const SfaFuzzCase& f, const SfaArgs& args, uint64_t workspace_size);

/// After a run of `args` that returned `status`: 161002 exactly when the lengths are out of range
/// (every output NaN) or a selected position uses a bad block id (that row NaN); every other row
/// matches the fp64 reference.
void check_sfa_run(SfaFuzzCase& f, const SfaArgs& args, int64_t status, const std::string& where);

}  // namespace kvflash::fuzz
