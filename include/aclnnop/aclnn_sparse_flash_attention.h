/* aclnnSparseFlashAttention: SparseFlashAttention (DeepSeek-V3.2 sparse MLA) with the CANN
 * two-phase API. Each query row attends the KV tokens its sparseIndices select (token or block
 * indices within its own sequence), optionally limited by a bottom-right causal mask (sparseMode
 * 3).
 *
 * Phase 1 validates every argument (docs/api.md lists the status codes), reads the actual-length
 * tensors, and returns the workspace size and a single-use executor (*executor = nullptr on
 * failure). value == nullptr means key is the value. When returnSoftmaxLse is false the softmax
 * outputs are neither checked nor written (they may be null). Phase 2 checks the block-table
 * entries of the selected positions (161002 if one is not a block id), then enqueues the
 * computation on stream; results are visible after aclrtSynchronizeStream. Status codes:
 * ACLNN_SUCCESS, ACLNN_ERR_PARAM_NULLPTR (161001), ACLNN_ERR_PARAM_INVALID (161002),
 * ACLNN_ERR_RUNTIME_ERROR (361001); the reason is in aclGetRecentErrMsg(). Pure C; C linkage. */
#ifndef KVFLASH_ACLNNOP_ACLNN_SPARSE_FLASH_ATTENTION_H_
#define KVFLASH_ACLNNOP_ACLNN_SPARSE_FLASH_ATTENTION_H_

#ifndef __cplusplus
#include <stdbool.h> /* returnSoftmaxLse is a bool (C99 spells it _Bool) */
#endif

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnSparseFlashAttentionGetWorkspaceSize(
    const aclTensor *query, const aclTensor *key, const aclTensor *value,
    const aclTensor *sparseIndices, const aclTensor *blockTable,
    const aclTensor *actualSeqLengthsQuery, const aclTensor *actualSeqLengthsKv,
    const aclTensor *queryRope, const aclTensor *keyRope, double scaleValue,
    int64_t sparseBlockSize, char *layoutQuery, char *layoutKv, int64_t sparseMode,
    int64_t preTokens, int64_t nextTokens, int64_t attentionMode, bool returnSoftmaxLse,
    const aclTensor *attentionOut, const aclTensor *softmaxMaxOut, const aclTensor *softmaxSumOut,
    uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnSparseFlashAttention(void *workspace, uint64_t workspaceSize,
                                                          aclOpExecutor *executor,
                                                          aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* KVFLASH_ACLNNOP_ACLNN_SPARSE_FLASH_ATTENTION_H_ */
