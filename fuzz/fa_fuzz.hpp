// Decoding a fuzz input into one FlashAttentionScore call, and the checks of its result (shared
// by fuzz_fa_api.cpp and fuzz_fa_aclnn.cpp): a small valid call built with the FIA case builder
// (tests/support/fia_cases.hpp: a layout of BSH / BSND / BNSD / TND, fp16 / bf16 / fp32, heads,
// GQA, a value head dim below the key's, sparse modes 0-4 with their masks, varlen lengths), then
// mutations of any view (dims, strides, offset, dtype: a mutated view gets memory of its own),
// of FlashAttentionScore's attributes (keep_prob, sparse_mode, head_num, the band, layouts, among
// them SBH), of the refused tensors (pse, dropout_mask, prefix) and of the lengths (trailing
// zeros, edits).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "fuzz_input.hpp"
#include "harness.hpp"
#include "kvflash/flash_attention_score.hpp"
#include "support/fia_cases.hpp"
#include "support/fia_max_sum.hpp"

namespace kvflash::fuzz {

struct FaFuzzCase {
  std::unique_ptr<testing::FiaCaseData> data;
  std::unique_ptr<testing::FiaMaxSum> max_sum;
  FlashAttentionScoreArgs args;
  bool mutated = false;  ///< false: the call as built (the run is compared with the oracle)
  bool runnable = true;  ///< false: a view points at the unreadable page
  std::vector<std::unique_ptr<Guarded>> memory;
};

/// Decodes a call; `extensions`: C++-only fields (num_threads).
void decode_fa(FuzzInput& in, bool extensions, FaFuzzCase* f);

/// Every argument name a FlashAttentionScore message may name (its field table and aclnn
/// parameters, and the FIA names of the call it runs).
const std::vector<const char*>& fa_names();

/// False when the call cannot run here (a view points at the unreadable page, or the workspace
/// is more than a fuzz input is given).
bool fa_affordable(const FaFuzzCase& f, uint64_t ws_size);

/// Fails if a guard byte of the case's own memory changed.
void check_fa_guards(const FaFuzzCase& f, const char* where);

/// After a run that returned `status`: the guards, and an unmutated call must match the oracle
/// (the output, the softmax max and sum).
void check_fa_run(FaFuzzCase& f, int64_t status, const char* where);

}  // namespace kvflash::fuzz
