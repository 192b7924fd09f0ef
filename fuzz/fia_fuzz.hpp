// The FIA / PFA fuzz decoder shared by fuzz_fia_aclnn.cpp and fuzz_pfa_aclnn.cpp: a case of the
// shared list (tests/support/fia_cases.hpp, smoke tier) mutated by the input (dims, strides,
// offsets, dtypes, attributes, layouts, lengths, present / absent optional tensors). A mutated
// view gets memory of its own, exactly as large as its extent (guarded), so a call that accepts
// it can read all of it and nothing more; a view too large to back points at an unreadable page
// (such a call may plan but is not run).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "fia_reference.hpp"
#include "fuzz_input.hpp"
#include "harness.hpp"
#include "support/fia_cases.hpp"

namespace kvflash::fuzz {

struct FiaFuzzCase {
  std::unique_ptr<testing::FiaCaseData> data;
  reference::FiaCall call;  ///< the (mutated) arguments
  bool mutated = false;     ///< false: the case as listed (the run is compared with the oracle)
  bool runnable = true;     ///< false: a view points at the unreadable page
  std::vector<std::unique_ptr<Guarded>> memory;
};

/// Decodes a case; pfa: only cases PromptFlashAttention can express, with call.prompt set.
/// false when the input selects nothing usable (counted as skipped).
bool decode_fia(FuzzInput& in, bool pfa, FiaFuzzCase* f);

/// Every argument name a FIA / PFA message may name (field tables and aclnn parameters).
const std::vector<const char*>& fia_names();

/// False when the call cannot run here: a view points at the unreadable page, or phase 1 asks
/// for more workspace than a fuzz input is given (256 MiB).
bool fia_affordable(const FiaFuzzCase& f, uint64_t ws_size);

/// Fails (violated) if a guard byte of the case's own memory changed; `where` names the moment.
void check_fia_guards(const FiaFuzzCase& f, const char* where);

/// After a run that reached synchronisation with status (0, or 161002: bad device data, counted
/// as faulted): the guards, and an unmutated case that ran must match the oracle.
void check_fia_run(FiaFuzzCase& f, int64_t status, const char* where);

}  // namespace kvflash::fuzz
