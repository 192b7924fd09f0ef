/* aclnnAttentionUpdate: merges the partial attention results of SP ranks by their LSE, with the
 * CANN two-phase API: for each row r, with lse_max = max_i lse[i][r],
 *   lseOut[r] = lse_max + log(sum_i exp(lse[i][r] - lse_max)),
 *   out[r] = sum_i localOut[i][r] * exp(lse[i][r] - lseOut[r]),
 * computed by kvflash's merge_attention_states (kvflash/merge.hpp: its list form, fp32 in part
 * order, the bits independent of the thread count). lse is a list of sp fp32 [rows] tensors,
 * localOut of sp [rows, headDim] tensors (fp32, fp16 or bf16), out [rows, headDim] in localOut's
 * dtype; updateType 0 writes out only (lseOut must be null), 1 also lseOut [rows] fp32. A part
 * whose lse is -inf is empty (never read); a row whose parts are all empty gets zeros (lseOut
 * -inf). kvflash accepts any sp >= 1, headDim >= 1 and rows of any rank (upstream: sp in
 * [1, 16], headDim a multiple of 8 in [8, 512]).
 *
 * Phase 1 validates every argument's metadata and returns the workspace size and a single-use
 * executor (*executor = nullptr on failure); it reads no tensor. Phase 2 enqueues the merge on
 * stream. Status codes: ACLNN_SUCCESS, ACLNN_ERR_PARAM_NULLPTR (161001), ACLNN_ERR_PARAM_INVALID
 * (161002), ACLNN_ERR_RUNTIME_ERROR (361001); the reason is in aclGetRecentErrMsg(). Pure C; C
 * linkage. */
#ifndef KVFLASH_ACLNNOP_ACLNN_ATTENTION_UPDATE_H_
#define KVFLASH_ACLNNOP_ACLNN_ATTENTION_UPDATE_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnAttentionUpdateGetWorkspaceSize(
    const aclTensorList *lse, const aclTensorList *localOut, int64_t updateType, aclTensor *out,
    aclTensor *lseOut, uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnAttentionUpdate(void *workspace, uint64_t workspaceSize,
                                                     aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* KVFLASH_ACLNNOP_ACLNN_ATTENTION_UPDATE_H_ */
