// aclnnFusedInferAttentionScoreV3 / V4: argument conversion to kvflash::FiaArgs over FIA's field
// table (aclnn/acl_args.hpp), FiaPlan::create (which does all validation) and a single-use
// executor. Nothing is computed here. V3 is V4 without dequantScaleQuery, learnableSink and
// queryQuantMode.
#include <tuple>

#include "aclnn/acl_args.hpp"
#include "aclnnop/aclnn_fused_infer_attention_score_v3.h"
#include "aclnnop/aclnn_fused_infer_attention_score_v4.h"
#include "core/error.hpp"
#include "kvflash/fia.hpp"
#include "ops/fia/fia_fields.hpp"
#include "ops/fia/fia_validate.hpp"

namespace kvflash::aclnn {
namespace {

constexpr const char* kOp = fia::kOpName;

aclnnStatus aclnn_only(const FiaArgs& a) {
  // An fp32 output is an extension of kvflash's C++ API; aclnn keeps upstream's dtype rule.
  if (a.attention_out.dtype == DType::kFloat32) {
    return to_aclnn(core::fail(Status::kInvalid, kOp,
                               "attentionOut dtype fp32 is not supported; expected the query "
                               "dtype or int8"));
  }
  return ACLNN_SUCCESS;
}

}  // namespace
}  // namespace kvflash::aclnn

extern "C" {

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
                 numHeads, scaleValue, preTokens, nextTokens, inputLayout, numKeyValueHeads,
                 sparseMode, innerPrecise, blockSize, antiquantMode, softmaxLseFlag,
                 keyAntiquantMode, valueAntiquantMode, queryQuantMode, attentionOut,
                 softmaxLseFlag ? softmaxLse : nullptr),
      aclnn::aclnn_only, workspaceSize, executor);
}

aclnnStatus aclnnFusedInferAttentionScoreV4(void* workspace, uint64_t workspaceSize,
                                            aclOpExecutor* executor, aclrtStream stream) {
  return kvflash::aclnn::plan_phase2(kvflash::aclnn::kOp, workspace, workspaceSize, executor,
                                     stream);
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
  return aclnnFusedInferAttentionScoreV4GetWorkspaceSize(
      query, key, value, pseShiftOptional, attenMaskOptional, actualSeqLengthsOptional,
      actualSeqLengthsKvOptional, deqScale1Optional, quantScale1Optional, deqScale2Optional,
      quantScale2Optional, quantOffset2Optional, antiquantScaleOptional, antiquantOffsetOptional,
      blockTableOptional, queryPaddingSizeOptional, kvPaddingSizeOptional,
      keyAntiquantScaleOptional, keyAntiquantOffsetOptional, valueAntiquantScaleOptional,
      valueAntiquantOffsetOptional, keySharedPrefixOptional, valueSharedPrefixOptional,
      actualSharedPrefixLenOptional, queryRopeOptional, keyRopeOptional,
      keyRopeAntiquantScaleOptional, /*dequantScaleQueryOptional=*/nullptr,
      /*learnableSinkOptional=*/nullptr, numHeads, scaleValue, preTokens, nextTokens, inputLayout,
      numKeyValueHeads, sparseMode, innerPrecise, blockSize, antiquantMode, softmaxLseFlag,
      keyAntiquantMode, valueAntiquantMode, /*queryQuantMode=*/0, attentionOut, softmaxLse,
      workspaceSize, executor);
}

aclnnStatus aclnnFusedInferAttentionScoreV3(void* workspace, uint64_t workspaceSize,
                                            aclOpExecutor* executor, aclrtStream stream) {
  return kvflash::aclnn::plan_phase2(kvflash::aclnn::kOp, workspace, workspaceSize, executor,
                                     stream);
}

}  // extern "C"
