/* aclnnScatterPaKvCache: writes each token's key (and value) rows into a paged KV cache at the
 * slot slotMapping gives it, with the CANN two-phase API: key [T, KV_N, Dk] row t goes to row
 * slot % block_size of block slot / block_size of keyCacheRef [num_blocks, block_size, KV_N, Dk],
 * value [T, KV_N, Dv] likewise into valueCacheRef, bit for bit, in place (kvflash/kv_cache.hpp).
 * A negative slot skips its token; a slot past the cache, or one given twice, faults the call
 * before anything is written. kvflash implements the ND cache (cacheModeOptional null or "Norm",
 * scatterModeOptional null or "None"; stridesOptional / offsetsOptional are then ignored) with
 * key and value of any dtype kvflash knows; a 0-D value and valueCacheRef write the key only.
 * Refused by name (161002): "PA_NZ" (a FRACTAL_NZ cache), the compressed scenarios
 * (compressLensOptional, compressSeqOffsetOptional, seqLensOptional, a 4-D key), the other scatter
 * modes.
 *
 * Phase 1 validates every argument's metadata (docs/api.md lists the status codes) and returns
 * the workspace size and a single-use executor (*executor = nullptr on failure); it reads no
 * tensor. Phase 2 enqueues the write on stream: slotMapping is read there, in stream order, and
 * a bad slot makes aclrtSynchronizeStream return ACL_ERROR_RT_AICORE_EXCEPTION (507015) with the
 * message in aclGetRecentErrMsg(), the caches unchanged. Status codes: ACLNN_SUCCESS,
 * ACLNN_ERR_PARAM_NULLPTR (161001), ACLNN_ERR_PARAM_INVALID (161002), ACLNN_ERR_RUNTIME_ERROR
 * (361001); the reason is in aclGetRecentErrMsg(). Pure C; C linkage. */
#ifndef KVFLASH_ACLNNOP_ACLNN_SCATTER_PA_KV_CACHE_H_
#define KVFLASH_ACLNNOP_ACLNN_SCATTER_PA_KV_CACHE_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnScatterPaKvCacheGetWorkspaceSize(
    const aclTensor *key, aclTensor *keyCacheRef, const aclTensor *slotMapping,
    const aclTensor *value, aclTensor *valueCacheRef, const aclTensor *compressLensOptional,
    const aclTensor *compressSeqOffsetOptional, const aclTensor *seqLensOptional,
    char *cacheModeOptional, char *scatterModeOptional, const aclIntArray *stridesOptional,
    const aclIntArray *offsetsOptional, uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnScatterPaKvCache(void *workspace, uint64_t workspaceSize,
                                                      aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* KVFLASH_ACLNNOP_ACLNN_SCATTER_PA_KV_CACHE_H_ */
