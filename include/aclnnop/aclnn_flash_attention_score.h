/* aclnnFlashAttentionScore and aclnnFlashAttentionVarLenScore: FlashAttention's forward pass with
 * the CANN two-phase API, attentionOutOut = Softmax(Mask(scaleValue * query·key^T,
 * attenMaskOptional)) · value, run by kvflash as PromptFlashAttention on its prefill kernel
 * (kvflash/flash_attention_score.hpp). softmaxMaxOut / softmaxSumOut receive each row's softmax
 * max and sum in upstream's [B, N, Sq, 8] form ([T, N, 8] for TND, the shape torch_npu allocates;
 * upstream's VarLen document writes [N, T, 8], which kvflash refuses); softmaxOutOut is reserved
 * and not written (it may be null).
 *
 * In scope: fp16 / bf16 / fp32; inputLayout BSH, BSND, BNSD (aclnnFlashAttentionScore) and TND
 * with cumulative actualSeqQLenOptional / actualSeqKvLenOptional (aclnnFlashAttentionVarLenScore;
 * trailing entries 0 in both are batches left out); value's D <= the key's; attenMaskOptional
 * [B|1, 1, Sq, Skv] or [Sq, Skv] (bool / uint8 / int8, 1 = masked) and sparse modes 0-4 (2-4 with
 * the compressed 2048 x 2048 mask); no mask: every position attended whatever sparseMode,
 * preTokens and nextTokens say, as upstream documents. paddingMaskOptional is ignored (reserved
 * upstream). Refused by name (161002): keepProb < 1 or dropMaskOptional (dropout),
 * realShiftOptional (pse: upstream adds it before the scale), prefixOptional and sparse modes 5-8,
 * inputLayout SBH, a per-head mask [B, N, Sq, Skv] with N > 1.
 *
 * Phase 1 validates every argument's metadata and returns the workspace size and a single-use
 * executor (*executor = nullptr on failure); it reads no tensor. Phase 2 enqueues the computation
 * on stream. Status codes: ACLNN_SUCCESS, ACLNN_ERR_PARAM_NULLPTR (161001), ACLNN_ERR_PARAM_INVALID
 * (161002), ACLNN_ERR_RUNTIME_ERROR (361001); the reason is in aclGetRecentErrMsg(). Pure C; C
 * linkage. */
#ifndef KVFLASH_ACLNNOP_ACLNN_FLASH_ATTENTION_SCORE_H_
#define KVFLASH_ACLNNOP_ACLNN_FLASH_ATTENTION_SCORE_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnFlashAttentionScoreGetWorkspaceSize(
    const aclTensor *query, const aclTensor *key, const aclTensor *value,
    const aclTensor *realShiftOptional, const aclTensor *dropMaskOptional,
    const aclTensor *paddingMaskOptional, const aclTensor *attenMaskOptional,
    const aclIntArray *prefixOptional, double scaleValue, double keepProb, int64_t preTokens,
    int64_t nextTokens, int64_t headNum, char *inputLayout, int64_t innerPrecise,
    int64_t sparseMode, const aclTensor *softmaxMaxOut, const aclTensor *softmaxSumOut,
    const aclTensor *softmaxOutOut, const aclTensor *attentionOutOut, uint64_t *workspaceSize,
    aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnFlashAttentionScore(void *workspace, uint64_t workspaceSize,
                                                         aclOpExecutor *executor,
                                                         const aclrtStream stream);

ACL_FUNC_VISIBILITY aclnnStatus aclnnFlashAttentionVarLenScoreGetWorkspaceSize(
    const aclTensor *query, const aclTensor *key, const aclTensor *value,
    const aclTensor *realShiftOptional, const aclTensor *dropMaskOptional,
    const aclTensor *paddingMaskOptional, const aclTensor *attenMaskOptional,
    const aclIntArray *prefixOptional, const aclIntArray *actualSeqQLenOptional,
    const aclIntArray *actualSeqKvLenOptional, double scaleValue, double keepProb,
    int64_t preTokens, int64_t nextTokens, int64_t headNum, char *inputLayout,
    int64_t innerPrecise, int64_t sparseMode, const aclTensor *softmaxMaxOut,
    const aclTensor *softmaxSumOut, const aclTensor *softmaxOutOut,
    const aclTensor *attentionOutOut, uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnFlashAttentionVarLenScore(void *workspace,
                                                               uint64_t workspaceSize,
                                                               aclOpExecutor *executor,
                                                               const aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* KVFLASH_ACLNNOP_ACLNN_FLASH_ATTENTION_SCORE_H_ */
