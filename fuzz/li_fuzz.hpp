// Decoding a fuzz input into one LightningIndexer call, and the checks of its result. As for SFA
// (sfa_fuzz.hpp): a small valid case (testing::LiCase: layouts, dtypes, heads, sparse_count,
// lengths, paging, mode, values, ties / non-finite keys, strides) built by the shared case
// builder, then mutations of optional tensors, attributes, any tensor's metadata, device data
// (lengths and block ids set to -1, out of range, INT32_MAX and other specials) and NaN / inf in
// the inputs.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "fuzz_input.hpp"
#include "kvflash/li.hpp"
#include "mutate.hpp"
#include "support/li_cases.hpp"

namespace kvflash::fuzz {

struct LiFuzzCase {
  testing::LiCase spec;
  std::unique_ptr<testing::LiCaseData> data;
  LightningIndexerArgs args;
  CaseMemory mem;
  testing::TestRng rng{1};
  std::vector<Slot> slots();
};

const std::vector<const char*>& li_names();

/// Decodes a case; `extensions`: C++-only fields (num_threads).
bool decode_li(FuzzInput& in, bool extensions, LiFuzzCase* f);

/// Whether a planned call is small enough to run and check against the reference.
bool li_affordable(const LiFuzzCase& f, const LightningIndexerArgs& args, uint64_t workspace_size);

/// After a run of `args` that returned `status` with `message`: 161002 exactly when the fp64
/// reference finds bad device data (lengths, block ids), the message naming the reference's first
/// bad entry, every row as the reference says (faulted rows -1, values NaN; the others its
/// selection within the comparator's tolerances).
void check_li_run(LiFuzzCase& f, const LightningIndexerArgs& args, int64_t status,
                  const std::string& message, const std::string& where);

}  // namespace kvflash::fuzz
