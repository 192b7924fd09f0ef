/* aclnnFusedInferAttentionScoreV4: FusedInferAttentionScore (prefill and decode attention, query
 * length >= 1) with the CANN two-phase API, the prototype of CANN's ops-transformer header. What
 * kvflash refuses (full int8 quantisation: deqScale1 / quantScale1 / deqScale2, dequantScaleQuery,
 * queryQuantMode != 0; keyRopeAntiquantScale; NZ caches; int4 KV; antiquant modes 2-6; sparse
 * mode 9) is 161002 naming the feature. It forwards to aclnnFusedInferAttentionScoreV5 with
 * qStartIdx / kvStartIdx null and pseType 0.
 *
 * Phase 1 validates every argument (kvflash's FusedInferAttentionScore rules, docs/api.md and
 * docs/conventions.md), copies the host length arrays, and returns the workspace size and a
 * single-use executor (*executor = nullptr on failure). Phase 2 enqueues the computation on stream
 * (null = the default stream); results are visible after aclrtSynchronizeStream. Status codes:
 * ACLNN_SUCCESS, ACLNN_ERR_PARAM_NULLPTR (161001), ACLNN_ERR_PARAM_INVALID (161002),
 * ACLNN_ERR_RUNTIME_ERROR (361001); reason in aclGetRecentErrMsg(). Pure C; C linkage. */
#ifndef KVFLASH_ACLNNOP_ACLNN_FUSED_INFER_ATTENTION_SCORE_V4_H_
#define KVFLASH_ACLNNOP_ACLNN_FUSED_INFER_ATTENTION_SCORE_V4_H_

#ifndef __cplusplus
#include <stdbool.h> /* softmaxLseFlag is a bool (C99 spells it _Bool) */
#endif

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnFusedInferAttentionScoreV4GetWorkspaceSize(
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
    int64_t numHeads, double scaleValue, int64_t preTokens, int64_t nextTokens, char *inputLayout,
    int64_t numKeyValueHeads, int64_t sparseMode, int64_t innerPrecise, int64_t blockSize,
    int64_t antiquantMode, bool softmaxLseFlag, int64_t keyAntiquantMode,
    int64_t valueAntiquantMode, int64_t queryQuantMode, const aclTensor *attentionOut,
    const aclTensor *softmaxLse, uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnFusedInferAttentionScoreV4(void *workspace,
                                                                uint64_t workspaceSize,
                                                                aclOpExecutor *executor,
                                                                aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* KVFLASH_ACLNNOP_ACLNN_FUSED_INFER_ATTENTION_SCORE_V4_H_ */
