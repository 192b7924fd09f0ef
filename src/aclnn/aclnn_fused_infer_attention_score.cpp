// aclnnFusedInferAttentionScore{,V2,V3,V4,V5}: argument conversion to kvflash::FiaArgs over FIA's
// field table (aclnn/acl_args.hpp), FiaPlan::create (which does all validation) and a single-use
// executor. Nothing is computed here. V5 is the newest; as IFA's older versions do, V1-V4 call it
// with the arguments they lack absent or at their defaults:
//   V4 = V5 without qStartIdx, kvStartIdx and pseType (0);
//   V3 = V4 without dequantScaleQuery, learnableSink and queryQuantMode (0);
//   V2 = V3 without queryRope, keyRope and keyRopeAntiquantScale;
//   V1 = V2 without the split key / value antiquant parameters and their modes (0) and the
//        shared prefix.
#include "aclnnop/aclnn_fused_infer_attention_score.h"

#include <tuple>

#include "aclnn/acl_args.hpp"
#include "aclnnop/aclnn_fused_infer_attention_score_v2.h"
#include "aclnnop/aclnn_fused_infer_attention_score_v3.h"
#include "aclnnop/aclnn_fused_infer_attention_score_v4.h"
#include "aclnnop/aclnn_fused_infer_attention_score_v5.h"
#include "core/error.hpp"
#include "kvflash/fia.hpp"
#include "ops/fia/fia_fields.hpp"
#include "ops/fia/fia_validate.hpp"

namespace kvflash::aclnn {
namespace {

constexpr const char* kOp = fia::kOpName;

aclnnStatus aclnn_only(const FiaArgs& a) {
  return refuse_fp32_output(kOp, "attentionOut", a.attention_out, "the query dtype or int8");
}

aclnnStatus phase2(void* workspace, uint64_t workspace_size, aclOpExecutor* executor,
                   aclrtStream stream) {
  return plan_phase2(kOp, workspace, workspace_size, executor, stream);
}

}  // namespace
}  // namespace kvflash::aclnn

extern "C" {

aclnnStatus aclnnFusedInferAttentionScoreV5GetWorkspaceSize(
    const aclTensor* query, const aclTensorList* key, const aclTensorList* value,
    const aclTensor* pseShiftOptional, const aclTensor* attenMaskOptional,
    const aclIntArray* actualSeqLengthsOptional, const aclIntArray* actualSeqLengthsKvOptional,
    const aclTensor* deqScale1Optional, const aclTensor* quantScale1Optional,
    const aclTensor* deqScale2Optional, const aclTensor* quantScale2Optional,
    const aclTensor* quantOffset2Optional, const aclTensor* antiquantScaleOptional,
    const aclTensor* antiquantOffsetOptional, const aclTensor* blockTableOptional,
    const aclTensor* queryPaddingSizeOptional, const aclTensor* kvPaddingSizeOptional,
    const aclTensor* keyAntiquantScaleOptional, const aclTensor* keyAntiquantOffsetOptional,
    const aclTensor* valueAntiquantScaleOptional, const aclTensor* valueAntiquantOffsetOptional,
    const aclTensor* keySharedPrefixOptional, const aclTensor* valueSharedPrefixOptional,
    const aclIntArray* actualSharedPrefixLenOptional, const aclTensor* queryRopeOptional,
    const aclTensor* keyRopeOptional, const aclTensor* keyRopeAntiquantScaleOptional,
    const aclTensor* dequantScaleQueryOptional, const aclTensor* learnableSinkOptional,
    const aclIntArray* qStartIdxOptional, const aclIntArray* kvStartIdxOptional, int64_t numHeads,
    double scaleValue, int64_t preTokens, int64_t nextTokens, char* inputLayout,
    int64_t numKeyValueHeads, int64_t sparseMode, int64_t innerPrecise, int64_t blockSize,
    int64_t antiquantMode, bool softmaxLseFlag, int64_t keyAntiquantMode,
    int64_t valueAntiquantMode, int64_t queryQuantMode, int64_t pseType,
    const aclTensor* attentionOut, const aclTensor* softmaxLse, uint64_t* workspaceSize,
    aclOpExecutor** executor) {
  using namespace kvflash;
  // A required output that is null is 161001 before any argument is converted (a conversion's
  // 161002 must not hide it). Without the flag softmaxLse is not looked at.
  if (softmaxLseFlag && softmaxLse == nullptr) {
    core::clear_error();
    if (executor != nullptr) *executor = nullptr;
    return aclnn::c_entry(aclnn::kOp, static_cast<aclnnStatus>(ACLNN_ERR_RUNTIME_ERROR),
                          [&] { return aclnn::null_arg(aclnn::kOp, "softmaxLse"); });
  }
  return aclnn::plan_phase1<FiaPlan, fia::kFields>(
      aclnn::kOp,
      std::tuple(query, key, value, pseShiftOptional, attenMaskOptional, actualSeqLengthsOptional,
                 actualSeqLengthsKvOptional, deqScale1Optional, quantScale1Optional,
                 deqScale2Optional, quantScale2Optional, quantOffset2Optional,
                 antiquantScaleOptional, antiquantOffsetOptional, blockTableOptional,
                 queryPaddingSizeOptional, kvPaddingSizeOptional, keyAntiquantScaleOptional,
                 keyAntiquantOffsetOptional, valueAntiquantScaleOptional,
                 valueAntiquantOffsetOptional, keySharedPrefixOptional, valueSharedPrefixOptional,
                 actualSharedPrefixLenOptional, queryRopeOptional, keyRopeOptional,
                 keyRopeAntiquantScaleOptional, dequantScaleQueryOptional, learnableSinkOptional,
                 qStartIdxOptional, kvStartIdxOptional, numHeads, scaleValue, preTokens, nextTokens,
                 inputLayout, numKeyValueHeads, sparseMode, innerPrecise, blockSize, antiquantMode,
                 softmaxLseFlag, keyAntiquantMode, valueAntiquantMode, queryQuantMode, pseType,
                 attentionOut, softmaxLseFlag ? softmaxLse : nullptr),
      aclnn::aclnn_only, workspaceSize, executor);
}

aclnnStatus aclnnFusedInferAttentionScoreV5(void* workspace, uint64_t workspaceSize,
                                            aclOpExecutor* executor, const aclrtStream stream) {
  return kvflash::aclnn::phase2(workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnFusedInferAttentionScoreV4GetWorkspaceSize(
    const aclTensor* query, const aclTensorList* key, const aclTensorList* value,
    const aclTensor* pseShiftOptional, const aclTensor* attenMaskOptional,
    const aclIntArray* actualSeqLengthsOptional, const aclIntArray* actualSeqLengthsKvOptional,
    const aclTensor* deqScale1Optional, const aclTensor* quantScale1Optional,
    const aclTensor* deqScale2Optional, const aclTensor* quantScale2Optional,
    const aclTensor* quantOffset2Optional, const aclTensor* antiquantScaleOptional,
    const aclTensor* antiquantOffsetOptional, const aclTensor* blockTableOptional,
    const aclTensor* queryPaddingSizeOptional, const aclTensor* kvPaddingSizeOptional,
    const aclTensor* keyAntiquantScaleOptional, const aclTensor* keyAntiquantOffsetOptional,
    const aclTensor* valueAntiquantScaleOptional, const aclTensor* valueAntiquantOffsetOptional,
    const aclTensor* keySharedPrefixOptional, const aclTensor* valueSharedPrefixOptional,
    const aclIntArray* actualSharedPrefixLenOptional, const aclTensor* queryRopeOptional,
    const aclTensor* keyRopeOptional, const aclTensor* keyRopeAntiquantScaleOptional,
    const aclTensor* dequantScaleQueryOptional, const aclTensor* learnableSinkOptional,
    int64_t numHeads, double scaleValue, int64_t preTokens, int64_t nextTokens, char* inputLayout,
    int64_t numKeyValueHeads, int64_t sparseMode, int64_t innerPrecise, int64_t blockSize,
    int64_t antiquantMode, bool softmaxLseFlag, int64_t keyAntiquantMode,
    int64_t valueAntiquantMode, int64_t queryQuantMode, const aclTensor* attentionOut,
    const aclTensor* softmaxLse, uint64_t* workspaceSize, aclOpExecutor** executor) {
  return aclnnFusedInferAttentionScoreV5GetWorkspaceSize(
      query, key, value, pseShiftOptional, attenMaskOptional, actualSeqLengthsOptional,
      actualSeqLengthsKvOptional, deqScale1Optional, quantScale1Optional, deqScale2Optional,
      quantScale2Optional, quantOffset2Optional, antiquantScaleOptional, antiquantOffsetOptional,
      blockTableOptional, queryPaddingSizeOptional, kvPaddingSizeOptional,
      keyAntiquantScaleOptional, keyAntiquantOffsetOptional, valueAntiquantScaleOptional,
      valueAntiquantOffsetOptional, keySharedPrefixOptional, valueSharedPrefixOptional,
      actualSharedPrefixLenOptional, queryRopeOptional, keyRopeOptional,
      keyRopeAntiquantScaleOptional, dequantScaleQueryOptional, learnableSinkOptional,
      /*qStartIdxOptional=*/nullptr, /*kvStartIdxOptional=*/nullptr, numHeads, scaleValue,
      preTokens, nextTokens, inputLayout, numKeyValueHeads, sparseMode, innerPrecise, blockSize,
      antiquantMode, softmaxLseFlag, keyAntiquantMode, valueAntiquantMode, queryQuantMode,
      /*pseType=*/0, attentionOut, softmaxLse, workspaceSize, executor);
}

aclnnStatus aclnnFusedInferAttentionScoreV4(void* workspace, uint64_t workspaceSize,
                                            aclOpExecutor* executor, aclrtStream stream) {
  return kvflash::aclnn::phase2(workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnFusedInferAttentionScoreV3GetWorkspaceSize(
    const aclTensor* query, const aclTensorList* key, const aclTensorList* value,
    const aclTensor* pseShiftOptional, const aclTensor* attenMaskOptional,
    const aclIntArray* actualSeqLengthsOptional, const aclIntArray* actualSeqLengthsKvOptional,
    const aclTensor* deqScale1Optional, const aclTensor* quantScale1Optional,
    const aclTensor* deqScale2Optional, const aclTensor* quantScale2Optional,
    const aclTensor* quantOffset2Optional, const aclTensor* antiquantScaleOptional,
    const aclTensor* antiquantOffsetOptional, const aclTensor* blockTableOptional,
    const aclTensor* queryPaddingSizeOptional, const aclTensor* kvPaddingSizeOptional,
    const aclTensor* keyAntiquantScaleOptional, const aclTensor* keyAntiquantOffsetOptional,
    const aclTensor* valueAntiquantScaleOptional, const aclTensor* valueAntiquantOffsetOptional,
    const aclTensor* keySharedPrefixOptional, const aclTensor* valueSharedPrefixOptional,
    const aclIntArray* actualSharedPrefixLenOptional, const aclTensor* queryRopeOptional,
    const aclTensor* keyRopeOptional, const aclTensor* keyRopeAntiquantScaleOptional,
    int64_t numHeads, double scaleValue, int64_t preTokens, int64_t nextTokens, char* inputLayout,
    int64_t numKeyValueHeads, int64_t sparseMode, int64_t innerPrecise, int64_t blockSize,
    int64_t antiquantMode, bool softmaxLseFlag, int64_t keyAntiquantMode,
    int64_t valueAntiquantMode, const aclTensor* attentionOut, const aclTensor* softmaxLse,
    uint64_t* workspaceSize, aclOpExecutor** executor) {
  return aclnnFusedInferAttentionScoreV5GetWorkspaceSize(
      query, key, value, pseShiftOptional, attenMaskOptional, actualSeqLengthsOptional,
      actualSeqLengthsKvOptional, deqScale1Optional, quantScale1Optional, deqScale2Optional,
      quantScale2Optional, quantOffset2Optional, antiquantScaleOptional, antiquantOffsetOptional,
      blockTableOptional, queryPaddingSizeOptional, kvPaddingSizeOptional,
      keyAntiquantScaleOptional, keyAntiquantOffsetOptional, valueAntiquantScaleOptional,
      valueAntiquantOffsetOptional, keySharedPrefixOptional, valueSharedPrefixOptional,
      actualSharedPrefixLenOptional, queryRopeOptional, keyRopeOptional,
      keyRopeAntiquantScaleOptional, /*dequantScaleQueryOptional=*/nullptr,
      /*learnableSinkOptional=*/nullptr, /*qStartIdxOptional=*/nullptr,
      /*kvStartIdxOptional=*/nullptr, numHeads, scaleValue, preTokens, nextTokens, inputLayout,
      numKeyValueHeads, sparseMode, innerPrecise, blockSize, antiquantMode, softmaxLseFlag,
      keyAntiquantMode, valueAntiquantMode, /*queryQuantMode=*/0, /*pseType=*/0, attentionOut,
      softmaxLse, workspaceSize, executor);
}

aclnnStatus aclnnFusedInferAttentionScoreV3(void* workspace, uint64_t workspaceSize,
                                            aclOpExecutor* executor, aclrtStream stream) {
  return kvflash::aclnn::phase2(workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnFusedInferAttentionScoreV2GetWorkspaceSize(
    const aclTensor* query, const aclTensorList* key, const aclTensorList* value,
    const aclTensor* pseShiftOptional, const aclTensor* attenMaskOptional,
    const aclIntArray* actualSeqLengthsOptional, const aclIntArray* actualSeqLengthsKvOptional,
    const aclTensor* deqScale1Optional, const aclTensor* quantScale1Optional,
    const aclTensor* deqScale2Optional, const aclTensor* quantScale2Optional,
    const aclTensor* quantOffset2Optional, const aclTensor* antiquantScaleOptional,
    const aclTensor* antiquantOffsetOptional, const aclTensor* blockTableOptional,
    const aclTensor* queryPaddingSizeOptional, const aclTensor* kvPaddingSizeOptional,
    const aclTensor* keyAntiquantScaleOptional, const aclTensor* keyAntiquantOffsetOptional,
    const aclTensor* valueAntiquantScaleOptional, const aclTensor* valueAntiquantOffsetOptional,
    const aclTensor* keySharedPrefixOptional, const aclTensor* valueSharedPrefixOptional,
    const aclIntArray* actualSharedPrefixLenOptional, int64_t numHeads, double scaleValue,
    int64_t preTokens, int64_t nextTokens, char* inputLayout, int64_t numKeyValueHeads,
    int64_t sparseMode, int64_t innerPrecise, int64_t blockSize, int64_t antiquantMode,
    bool softmaxLseFlag, int64_t keyAntiquantMode, int64_t valueAntiquantMode,
    const aclTensor* attentionOut, const aclTensor* softmaxLse, uint64_t* workspaceSize,
    aclOpExecutor** executor) {
  return aclnnFusedInferAttentionScoreV5GetWorkspaceSize(
      query, key, value, pseShiftOptional, attenMaskOptional, actualSeqLengthsOptional,
      actualSeqLengthsKvOptional, deqScale1Optional, quantScale1Optional, deqScale2Optional,
      quantScale2Optional, quantOffset2Optional, antiquantScaleOptional, antiquantOffsetOptional,
      blockTableOptional, queryPaddingSizeOptional, kvPaddingSizeOptional,
      keyAntiquantScaleOptional, keyAntiquantOffsetOptional, valueAntiquantScaleOptional,
      valueAntiquantOffsetOptional, keySharedPrefixOptional, valueSharedPrefixOptional,
      actualSharedPrefixLenOptional, /*queryRopeOptional=*/nullptr, /*keyRopeOptional=*/nullptr,
      /*keyRopeAntiquantScaleOptional=*/nullptr, /*dequantScaleQueryOptional=*/nullptr,
      /*learnableSinkOptional=*/nullptr, /*qStartIdxOptional=*/nullptr,
      /*kvStartIdxOptional=*/nullptr, numHeads, scaleValue, preTokens, nextTokens, inputLayout,
      numKeyValueHeads, sparseMode, innerPrecise, blockSize, antiquantMode, softmaxLseFlag,
      keyAntiquantMode, valueAntiquantMode, /*queryQuantMode=*/0, /*pseType=*/0, attentionOut,
      softmaxLse, workspaceSize, executor);
}

aclnnStatus aclnnFusedInferAttentionScoreV2(void* workspace, uint64_t workspaceSize,
                                            aclOpExecutor* executor, const aclrtStream stream) {
  return kvflash::aclnn::phase2(workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnFusedInferAttentionScoreGetWorkspaceSize(
    const aclTensor* query, const aclTensorList* key, const aclTensorList* value,
    const aclTensor* pseShift, const aclTensor* attenMask, const aclIntArray* actualSeqLengths,
    const aclIntArray* actualSeqLengthsKv, const aclTensor* deqScale1, const aclTensor* quantScale1,
    const aclTensor* deqScale2, const aclTensor* quantScale2, const aclTensor* quantOffset2,
    const aclTensor* antiquantScale, const aclTensor* antiquantOffset, const aclTensor* blockTable,
    const aclTensor* queryPaddingSize, const aclTensor* kvPaddingSize, int64_t numHeads,
    double scaleValue, int64_t preTokens, int64_t nextTokens, char* inputLayout,
    int64_t numKeyValueHeads, int64_t sparseMode, int64_t innerPrecise, int64_t blockSize,
    int64_t antiquantMode, bool softmaxLseFlag, const aclTensor* attentionOut,
    const aclTensor* softmaxLse, uint64_t* workspaceSize, aclOpExecutor** executor) {
  return aclnnFusedInferAttentionScoreV5GetWorkspaceSize(
      query, key, value, pseShift, attenMask, actualSeqLengths, actualSeqLengthsKv, deqScale1,
      quantScale1, deqScale2, quantScale2, quantOffset2, antiquantScale, antiquantOffset,
      blockTable, queryPaddingSize, kvPaddingSize, /*keyAntiquantScaleOptional=*/nullptr,
      /*keyAntiquantOffsetOptional=*/nullptr, /*valueAntiquantScaleOptional=*/nullptr,
      /*valueAntiquantOffsetOptional=*/nullptr, /*keySharedPrefixOptional=*/nullptr,
      /*valueSharedPrefixOptional=*/nullptr, /*actualSharedPrefixLenOptional=*/nullptr,
      /*queryRopeOptional=*/nullptr, /*keyRopeOptional=*/nullptr,
      /*keyRopeAntiquantScaleOptional=*/nullptr, /*dequantScaleQueryOptional=*/nullptr,
      /*learnableSinkOptional=*/nullptr, /*qStartIdxOptional=*/nullptr,
      /*kvStartIdxOptional=*/nullptr, numHeads, scaleValue, preTokens, nextTokens, inputLayout,
      numKeyValueHeads, sparseMode, innerPrecise, blockSize, antiquantMode, softmaxLseFlag,
      /*keyAntiquantMode=*/0, /*valueAntiquantMode=*/0, /*queryQuantMode=*/0, /*pseType=*/0,
      attentionOut, softmaxLse, workspaceSize, executor);
}

aclnnStatus aclnnFusedInferAttentionScore(void* workspace, uint64_t workspaceSize,
                                          aclOpExecutor* executor, const aclrtStream stream) {
  return kvflash::aclnn::phase2(workspace, workspaceSize, executor, stream);
}

}  // extern "C"
