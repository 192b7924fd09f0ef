/* aclnnSparseFlashAttentionV2: aclnnSparseFlashAttention plus optional attention sinks.
 *
 * sinksOptional: FLOAT32 (N1), one learnable logit per query head; it joins each row's softmax max
 * and denominator but contributes no value vector. kvflash accepts sinks on every layout (the
 * Ascend 950 semantics; op::GetCurrentPlatformInfo() reports NpuArch::DAV_3510 accordingly). All
 * other arguments, phases and status codes are those of aclnn_sparse_flash_attention.h.
 * Pure C; C linkage. */
#ifndef KVFLASH_ACLNNOP_ACLNN_SPARSE_FLASH_ATTENTION_V2_H_
#define KVFLASH_ACLNNOP_ACLNN_SPARSE_FLASH_ATTENTION_V2_H_

#ifndef __cplusplus
#include <stdbool.h> /* returnSoftmaxLse is a bool (C99 spells it _Bool) */
#endif

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnSparseFlashAttentionV2GetWorkspaceSize(
    const aclTensor *query, const aclTensor *key, const aclTensor *value,
    const aclTensor *sparseIndices, const aclTensor *blockTable,
    const aclTensor *actualSeqLengthsQuery, const aclTensor *actualSeqLengthsKv,
    const aclTensor *queryRope, const aclTensor *keyRope, const aclTensor *sinksOptional,
    double scaleValue, int64_t sparseBlockSize, char *layoutQuery, char *layoutKv,
    int64_t sparseMode, int64_t preTokens, int64_t nextTokens, int64_t attentionMode,
    bool returnSoftmaxLse, const aclTensor *attentionOut, const aclTensor *softmaxMaxOut,
    const aclTensor *softmaxSumOut, uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnSparseFlashAttentionV2(void *workspace, uint64_t workspaceSize,
                                                            aclOpExecutor *executor,
                                                            aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* KVFLASH_ACLNNOP_ACLNN_SPARSE_FLASH_ATTENTION_V2_H_ */
