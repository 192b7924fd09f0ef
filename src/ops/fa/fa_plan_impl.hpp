// What a FlashAttentionScorePlan holds, for the library's own use: its arguments without data
// (matched against each run), the PromptFlashAttention call it runs and that call's plan.
#pragma once

#include <memory>

#include "core/plan_access.hpp"
#include "kvflash/fia.hpp"
#include "kvflash/flash_attention_score.hpp"

namespace kvflash {

struct FlashAttentionScorePlan::Impl {
  FlashAttentionScoreArgs meta;  ///< the creation arguments, data pointers cleared
  FiaArgs fia;                   ///< fa::to_fia of them
  std::unique_ptr<FiaPlan> plan;
};

using FlashAttentionScorePlanAccess = core::PlanAccess<FlashAttentionScorePlan>;

}  // namespace kvflash
