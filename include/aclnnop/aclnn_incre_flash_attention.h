/* aclnnIncreFlashAttention: IncreFlashAttention (decode attention) with the CANN two-phase API.
 * pseShift is accepted and ignored (as upstream V1).
 *
 * Phase 1 validates every argument (docs/api.md lists the status codes), copies actualSeqLengths,
 * and returns the workspace size and a single-use executor (*executor = nullptr on failure).
 * Phase 2 enqueues the computation on stream (null = the default stream); results are visible
 * after aclrtSynchronizeStream. Status codes: ACLNN_SUCCESS, ACLNN_ERR_PARAM_NULLPTR (161001),
 * ACLNN_ERR_PARAM_INVALID (161002), ACLNN_ERR_RUNTIME_ERROR (361001); reason in
 * aclGetRecentErrMsg(). Pure C; C linkage. */
#ifndef KVFLASH_ACLNNOP_ACLNN_INCRE_FLASH_ATTENTION_H_
#define KVFLASH_ACLNNOP_ACLNN_INCRE_FLASH_ATTENTION_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnIncreFlashAttentionGetWorkspaceSize(
    const aclTensor *query, const aclTensorList *key, const aclTensorList *value,
    const aclTensor *pseShift, const aclTensor *attenMask, const aclIntArray *actualSeqLengths,
    int64_t numHeads, double scaleValue, char *inputLayout, int64_t numKeyValueHeads,
    const aclTensor *attentionOut, uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnIncreFlashAttention(void *workspace, uint64_t workspaceSize,
                                                         aclOpExecutor *executor,
                                                         const aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* KVFLASH_ACLNNOP_ACLNN_INCRE_FLASH_ATTENTION_H_ */
