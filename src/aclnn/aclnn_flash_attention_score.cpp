// aclnnFlashAttentionVarLenScore and aclnnFlashAttentionScore: argument conversion to
// kvflash::FlashAttentionScoreArgs over its field table (aclnn/acl_args.hpp; the table is the
// VarLen entry's parameters), FlashAttentionScorePlan::create (which does all validation) and a
// single-use executor. aclnnFlashAttentionScore forwards to the VarLen entry without lengths.
// Nothing is computed here.
#include "aclnnop/aclnn_flash_attention_score.h"

#include <tuple>

#include "aclnn/acl_args.hpp"
#include "kvflash/flash_attention_score.hpp"
#include "ops/fa/fa_convert.hpp"
#include "ops/fa/fa_fields.hpp"

namespace kvflash::aclnn {
namespace {

constexpr const char* kOp = fa::kOpName;

aclnnStatus no_rule(const FlashAttentionScoreArgs&) { return ACLNN_SUCCESS; }

}  // namespace
}  // namespace kvflash::aclnn

extern "C" {

aclnnStatus aclnnFlashAttentionVarLenScoreGetWorkspaceSize(
    const aclTensor* query, const aclTensor* key, const aclTensor* value,
    const aclTensor* realShiftOptional, const aclTensor* dropMaskOptional,
    const aclTensor* paddingMaskOptional, const aclTensor* attenMaskOptional,
    const aclIntArray* prefixOptional, const aclIntArray* actualSeqQLenOptional,
    const aclIntArray* actualSeqKvLenOptional, double scaleValue, double keepProb,
    int64_t preTokens, int64_t nextTokens, int64_t headNum, char* inputLayout, int64_t innerPrecise,
    int64_t sparseMode, const aclTensor* softmaxMaxOut, const aclTensor* softmaxSumOut,
    const aclTensor* softmaxOutOut, const aclTensor* attentionOutOut, uint64_t* workspaceSize,
    aclOpExecutor** executor) {
  using namespace kvflash;
  return aclnn::plan_phase1<FlashAttentionScorePlan, fa::kFields>(
      aclnn::kOp,
      std::tuple(query, key, value, realShiftOptional, dropMaskOptional, paddingMaskOptional,
                 attenMaskOptional, prefixOptional, actualSeqQLenOptional, actualSeqKvLenOptional,
                 scaleValue, keepProb, preTokens, nextTokens, headNum, inputLayout, innerPrecise,
                 sparseMode, softmaxMaxOut, softmaxSumOut, softmaxOutOut, attentionOutOut),
      aclnn::no_rule, workspaceSize, executor);
}

aclnnStatus aclnnFlashAttentionVarLenScore(void* workspace, uint64_t workspaceSize,
                                           aclOpExecutor* executor, const aclrtStream stream) {
  return kvflash::aclnn::plan_phase2(kvflash::aclnn::kOp, workspace, workspaceSize, executor,
                                     stream);
}

aclnnStatus aclnnFlashAttentionScoreGetWorkspaceSize(
    const aclTensor* query, const aclTensor* key, const aclTensor* value,
    const aclTensor* realShiftOptional, const aclTensor* dropMaskOptional,
    const aclTensor* paddingMaskOptional, const aclTensor* attenMaskOptional,
    const aclIntArray* prefixOptional, double scaleValue, double keepProb, int64_t preTokens,
    int64_t nextTokens, int64_t headNum, char* inputLayout, int64_t innerPrecise,
    int64_t sparseMode, const aclTensor* softmaxMaxOut, const aclTensor* softmaxSumOut,
    const aclTensor* softmaxOutOut, const aclTensor* attentionOutOut, uint64_t* workspaceSize,
    aclOpExecutor** executor) {
  return aclnnFlashAttentionVarLenScoreGetWorkspaceSize(
      query, key, value, realShiftOptional, dropMaskOptional, paddingMaskOptional,
      attenMaskOptional, prefixOptional, /*actualSeqQLenOptional=*/nullptr,
      /*actualSeqKvLenOptional=*/nullptr, scaleValue, keepProb, preTokens, nextTokens, headNum,
      inputLayout, innerPrecise, sparseMode, softmaxMaxOut, softmaxSumOut, softmaxOutOut,
      attentionOutOut, workspaceSize, executor);
}

aclnnStatus aclnnFlashAttentionScore(void* workspace, uint64_t workspaceSize,
                                     aclOpExecutor* executor, const aclrtStream stream) {
  return kvflash::aclnn::plan_phase2(kvflash::aclnn::kOp, workspace, workspaceSize, executor,
                                     stream);
}

}  // extern "C"
