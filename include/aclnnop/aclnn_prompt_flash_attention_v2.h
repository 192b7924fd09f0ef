/* aclnnPromptFlashAttentionV2: PromptFlashAttention with the CANN two-phase API: V3 with
 * innerPrecise 1 (it forwards to V3).
 *
 * Phase 1 validates every argument (kvflash's FusedInferAttentionScore rules, docs/api.md and
 * docs/conventions.md), copies the host length arrays, and returns the workspace size and a
 * single-use executor (*executor = nullptr on failure). Phase 2 enqueues the computation on stream
 * (null = the default stream); results are visible after aclrtSynchronizeStream. Status codes:
 * ACLNN_SUCCESS, ACLNN_ERR_PARAM_NULLPTR (161001), ACLNN_ERR_PARAM_INVALID (161002),
 * ACLNN_ERR_RUNTIME_ERROR (361001); reason in aclGetRecentErrMsg(). Pure C; C linkage. */
#ifndef KVFLASH_ACLNNOP_ACLNN_PROMPT_FLASH_ATTENTION_V2_H_
#define KVFLASH_ACLNNOP_ACLNN_PROMPT_FLASH_ATTENTION_V2_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnPromptFlashAttentionV2GetWorkspaceSize(
    const aclTensor *query, const aclTensor *key, const aclTensor *value, const aclTensor *pseShift,
    const aclTensor *attenMask, const aclIntArray *actualSeqLengths,
    const aclIntArray *actualSeqLengthsKv, const aclTensor *deqScale1, const aclTensor *quantScale1,
    const aclTensor *deqScale2, const aclTensor *quantScale2, const aclTensor *quantOffset2,
    int64_t numHeads, double scaleValue, int64_t preTokens, int64_t nextTokens, char *inputLayout,
    int64_t numKeyValueHeads, int64_t sparseMode, const aclTensor *attentionOut,
    uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnPromptFlashAttentionV2(void *workspace, uint64_t workspaceSize,
                                                            aclOpExecutor *executor,
                                                            aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* KVFLASH_ACLNNOP_ACLNN_PROMPT_FLASH_ATTENTION_V2_H_ */
