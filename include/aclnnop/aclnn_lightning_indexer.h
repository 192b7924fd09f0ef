/* aclnnLightningIndexer: DeepSeek-V3.2's lightning indexer with the CANN two-phase API. For each
 * query row it scores every valid key of its batch, score = sum_h weights[h] * relu(query[h] . key)
 * (no scale), and writes the sparseCount highest as key indices into sparseIndicesOut: descending
 * score, equal scores by the lower index, NaN above every number, -1 after the last valid key
 * (docs/lightning_indexer.md). Its TND + PA_BSND output is aclnnSparseFlashAttention's TND
 * sparseIndices.
 *
 * Phase 1 validates every argument's metadata (docs/api.md lists the status codes) and returns
 * the workspace size and a single-use executor (*executor = nullptr on failure); it reads no
 * tensor. A null layoutQueryOptional / layoutKeyOptional means "BSND". When returnValues is false
 * sparseValuesOut is neither checked nor written (it may be null). Phase 2 enqueues the
 * computation on stream: the lengths and the block table are read there, in stream order, so
 * work queued before it on the same stream may write them. Bad ones (a length out of range, a
 * block id outside the cache) fault the rows they concern (all -1) and aclrtSynchronizeStream
 * returns ACL_ERROR_RT_AICORE_EXCEPTION (507015) with the message in aclGetRecentErrMsg(). Status
 * codes: ACLNN_SUCCESS, ACLNN_ERR_PARAM_NULLPTR (161001), ACLNN_ERR_PARAM_INVALID (161002),
 * ACLNN_ERR_RUNTIME_ERROR (361001); the reason is in aclGetRecentErrMsg(). Pure C; C linkage. */
#ifndef KVFLASH_ACLNNOP_ACLNN_LIGHTNING_INDEXER_H_
#define KVFLASH_ACLNNOP_ACLNN_LIGHTNING_INDEXER_H_

#ifndef __cplusplus
#include <stdbool.h> /* returnValues is a bool (C99 spells it _Bool) */
#endif

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnLightningIndexerGetWorkspaceSize(
    const aclTensor *query, const aclTensor *key, const aclTensor *weights,
    const aclTensor *actualSeqLengthsQueryOptional, const aclTensor *actualSeqLengthsKeyOptional,
    const aclTensor *blockTableOptional, char *layoutQueryOptional, char *layoutKeyOptional,
    int64_t sparseCount, int64_t sparseMode, int64_t preTokens, int64_t nextTokens,
    bool returnValues, const aclTensor *sparseIndicesOut, const aclTensor *sparseValuesOut,
    uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnLightningIndexer(void *workspace, uint64_t workspaceSize,
                                                      aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* KVFLASH_ACLNNOP_ACLNN_LIGHTNING_INDEXER_H_ */
