// FlashAttentionScore as the PromptFlashAttention call that computes it (FiaArgs with prompt and
// fp32_inputs set): FlashAttentionScore's own rules (what it refuses by name, its layouts, masks,
// lengths and the no-mask rule), then the mapping, argument by argument (docs/api.md
// "FlashAttentionScore"). The prefill kernel's validator checks the rest of the call.
#pragma once

#include <cstdint>

#include "kvflash/fia.hpp"
#include "kvflash/flash_attention_score.hpp"
#include "kvflash/status.hpp"

namespace kvflash::fa {

inline constexpr const char* kOpName = "flash_attention_score";

/// The FiaArgs of args (views as given, lengths trimmed of trailing left-out batches), or kInvalid
/// / kNullPtr naming the argument. Reads no tensor.
Status to_fia(const FlashAttentionScoreArgs& args, FiaArgs* fia);

/// The views of args over those of a FiaArgs made by to_fia from arguments with args' metadata:
/// only data pointers change, nothing is allocated.
void rebind_views(const FlashAttentionScoreArgs& args, FiaArgs* fia);

}  // namespace kvflash::fa
