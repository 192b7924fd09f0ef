/* aclnnFusedInferAttentionScoreV5: FusedInferAttentionScore (prefill and decode attention, query
 * length >= 1) with the CANN two-phase API, the prototype of CANN's document (Ascend 950's entry
 * point; kvflash runs every version on any machine). V4 plus qStartIdxOptional and
 * kvStartIdxOptional after learnableSinkOptional and pseType after queryQuantMode. The start
 * indices place a split sequence's chunk for a position encoding generated in the operator, which
 * FusedInferAttentionScore does not have: they must be null or empty (161002 naming them
 * otherwise). pseType must be 0, the only value the V5 document allows (pseShift given, added after
 * scaling); any other is 161002. Everything else is V4's (kvflash's refusals included: full int8
 * quantisation, fp8 / hifloat8 / fp4 types, NZ caches, ...). V1-V4 forward to this entry point.
 *
 * Phase 1 validates every argument (kvflash's FusedInferAttentionScore rules, docs/api.md and
 * docs/conventions.md), copies the host length arrays, and returns the workspace size and a
 * single-use executor (*executor = nullptr on failure). Phase 2 enqueues the computation on stream
 * (null = the default stream); results are visible after aclrtSynchronizeStream. Status codes:
 * ACLNN_SUCCESS, ACLNN_ERR_PARAM_NULLPTR (161001), ACLNN_ERR_PARAM_INVALID (161002),
 * ACLNN_ERR_RUNTIME_ERROR (361001); reason in aclGetRecentErrMsg(). Pure C; C linkage. */
#ifndef KVFLASH_ACLNNOP_ACLNN_FUSED_INFER_ATTENTION_SCORE_V5_H_
#define KVFLASH_ACLNNOP_ACLNN_FUSED_INFER_ATTENTION_SCORE_V5_H_

#ifndef __cplusplus
#include <stdbool.h> /* softmaxLseFlag is a bool (C99 spells it _Bool) */
#endif

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnFusedInferAttentionScoreV5GetWorkspaceSize(
    const aclTensor *query, const aclTensorList *key, const aclTensorList *value,
    const aclTensor *pseShiftOptional, const aclTensor *attenMaskOptional,
    const aclIntArray *actualSeqLengthsOptional, const aclIntArray *actualSeqLengthsKvOptional,
    const aclTensor *deqScale1Optional, const aclTensor *quantScale1Optional,
    const aclTensor *deqScale2Optional, const aclTensor *quantScale2Optional,
    const aclTensor *quantOffset2Optional, const aclTensor *antiquantScaleOptional,
    const aclTensor *antiquantOffsetOptional, const aclTensor *blockTableOptional,
    const aclTensor *queryPaddingSizeOptional, const aclTensor *kvPaddingSizeOptional,
    const aclTensor *keyAntiquantScaleOptional, const aclTensor *keyAntiquantOffsetOptional,
    const aclTensor *valueAntiquantScaleOptional, const aclTensor *valueAntiquantOffsetOptional,
    const aclTensor *keySharedPrefixOptional, const aclTensor *valueSharedPrefixOptional,
    const aclIntArray *actualSharedPrefixLenOptional, const aclTensor *queryRopeOptional,
    const aclTensor *keyRopeOptional, const aclTensor *keyRopeAntiquantScaleOptional,
    const aclTensor *dequantScaleQueryOptional, const aclTensor *learnableSinkOptional,
    const aclIntArray *qStartIdxOptional, const aclIntArray *kvStartIdxOptional, int64_t numHeads,
    double scaleValue, int64_t preTokens, int64_t nextTokens, char *inputLayout,
    int64_t numKeyValueHeads, int64_t sparseMode, int64_t innerPrecise, int64_t blockSize,
    int64_t antiquantMode, bool softmaxLseFlag, int64_t keyAntiquantMode,
    int64_t valueAntiquantMode, int64_t queryQuantMode, int64_t pseType,
    const aclTensor *attentionOut, const aclTensor *softmaxLse, uint64_t *workspaceSize,
    aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnFusedInferAttentionScoreV5(void *workspace,
                                                                uint64_t workspaceSize,
                                                                aclOpExecutor *executor,
                                                                const aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* KVFLASH_ACLNNOP_ACLNN_FUSED_INFER_ATTENTION_SCORE_V5_H_ */
