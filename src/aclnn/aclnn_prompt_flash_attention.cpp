// aclnnPromptFlashAttention{,V2,V3}: FusedInferAttentionScore's subset (include/kvflash/fia.hpp)
// with FiaArgs::prompt set, converted over PFA's own parameter table (fia::kPfaAclFields: key and
// value are single tensors) and planned by FiaPlan. V1 and V2 forward to V3 with the missing
// arguments absent or at their defaults (sparseMode 0, innerPrecise 1).
#include "aclnnop/aclnn_prompt_flash_attention.h"

#include <tuple>

#include "aclnn/acl_args.hpp"
#include "aclnnop/aclnn_prompt_flash_attention_v2.h"
#include "aclnnop/aclnn_prompt_flash_attention_v3.h"
#include "core/error.hpp"
#include "kvflash/fia.hpp"
#include "ops/fia/fia_fields.hpp"

namespace kvflash::aclnn {
namespace {

constexpr const char* kOp = "prompt_flash_attention";

aclnnStatus pfa_only(FiaArgs& a) {
  a.prompt = true;  // PFA never takes FIA's decode branch (D4)
  return refuse_fp32_output(kOp, "attentionOut", a.attention_out, "the query dtype or int8");
}

}  // namespace
}  // namespace kvflash::aclnn

extern "C" {

aclnnStatus aclnnPromptFlashAttentionV3GetWorkspaceSize(
    const aclTensor* query, const aclTensor* key, const aclTensor* value, const aclTensor* pseShift,
    const aclTensor* attenMask, const aclIntArray* actualSeqLengths,
    const aclIntArray* actualSeqLengthsKv, const aclTensor* deqScale1, const aclTensor* quantScale1,
    const aclTensor* deqScale2, const aclTensor* quantScale2, const aclTensor* quantOffset2,
    int64_t numHeads, double scaleValue, int64_t preTokens, int64_t nextTokens, char* inputLayout,
    int64_t numKeyValueHeads, int64_t sparseMode, int64_t innerPrecise,
    const aclTensor* attentionOut, uint64_t* workspaceSize, aclOpExecutor** executor) {
  using namespace kvflash;
  return aclnn::plan_phase1<FiaPlan, fia::kPfaAclFields>(
      aclnn::kOp,
      std::tuple(query, key, value, pseShift, attenMask, actualSeqLengths, actualSeqLengthsKv,
                 deqScale1, quantScale1, deqScale2, quantScale2, quantOffset2, numHeads, scaleValue,
                 preTokens, nextTokens, inputLayout, numKeyValueHeads, sparseMode, innerPrecise,
                 attentionOut),
      aclnn::pfa_only, workspaceSize, executor);
}

aclnnStatus aclnnPromptFlashAttentionV3(void* workspace, uint64_t workspaceSize,
                                        aclOpExecutor* executor, aclrtStream stream) {
  return kvflash::aclnn::plan_phase2(kvflash::aclnn::kOp, workspace, workspaceSize, executor,
                                     stream);
}

aclnnStatus aclnnPromptFlashAttentionV2GetWorkspaceSize(
    const aclTensor* query, const aclTensor* key, const aclTensor* value, const aclTensor* pseShift,
    const aclTensor* attenMask, const aclIntArray* actualSeqLengths,
    const aclIntArray* actualSeqLengthsKv, const aclTensor* deqScale1, const aclTensor* quantScale1,
    const aclTensor* deqScale2, const aclTensor* quantScale2, const aclTensor* quantOffset2,
    int64_t numHeads, double scaleValue, int64_t preTokens, int64_t nextTokens, char* inputLayout,
    int64_t numKeyValueHeads, int64_t sparseMode, const aclTensor* attentionOut,
    uint64_t* workspaceSize, aclOpExecutor** executor) {
  return aclnnPromptFlashAttentionV3GetWorkspaceSize(
      query, key, value, pseShift, attenMask, actualSeqLengths, actualSeqLengthsKv, deqScale1,
      quantScale1, deqScale2, quantScale2, quantOffset2, numHeads, scaleValue, preTokens,
      nextTokens, inputLayout, numKeyValueHeads, sparseMode, /*innerPrecise=*/1, attentionOut,
      workspaceSize, executor);
}

aclnnStatus aclnnPromptFlashAttentionV2(void* workspace, uint64_t workspaceSize,
                                        aclOpExecutor* executor, aclrtStream stream) {
  return kvflash::aclnn::plan_phase2(kvflash::aclnn::kOp, workspace, workspaceSize, executor,
                                     stream);
}

aclnnStatus aclnnPromptFlashAttentionGetWorkspaceSize(
    const aclTensor* query, const aclTensor* key, const aclTensor* value, const aclTensor* pseShift,
    const aclTensor* attenMask, const aclIntArray* actualSeqLengths, int64_t numHeads,
    double scaleValue, int64_t preTokens, int64_t nextTokens, char* inputLayout,
    int64_t numKeyValueHeads, const aclTensor* attentionOut, uint64_t* workspaceSize,
    aclOpExecutor** executor) {
  return aclnnPromptFlashAttentionV3GetWorkspaceSize(
      query, key, value, pseShift, attenMask, actualSeqLengths, /*actualSeqLengthsKv=*/nullptr,
      nullptr, nullptr, nullptr, nullptr, nullptr, numHeads, scaleValue, preTokens, nextTokens,
      inputLayout, numKeyValueHeads, /*sparseMode=*/0, /*innerPrecise=*/1, attentionOut,
      workspaceSize, executor);
}

aclnnStatus aclnnPromptFlashAttention(void* workspace, uint64_t workspaceSize,
                                      aclOpExecutor* executor, aclrtStream stream) {
  return kvflash::aclnn::plan_phase2(kvflash::aclnn::kOp, workspace, workspaceSize, executor,
                                     stream);
}

}  // extern "C"
