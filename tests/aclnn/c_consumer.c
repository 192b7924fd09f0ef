/* A pure C program against the CANN-compatible headers: every header that is C in CANN must
 * compile as C (C99, -pedantic -Werror) and link, and the runtime must behave as documented.
 * Exit 0 on success.
 *
 * It includes EVERY C header kvflash installs (tests/surface/check_c_headers.sh fails if one is
 * missing here, and compiles each one alone as C). Not included, because they are C++ only as in
 * CANN: aclnn/opdev/fp16_t.h, aclnn/opdev/platform.h, and the C++ API (the kvflash .hpp headers).
 */
#include <stdio.h>
#include <string.h>

#include "acl/acl.h"
#include "acl/acl_base.h"
#include "acl/acl_rt.h"
#include "aclnn/acl_meta.h"
#include "aclnn/aclnn_base.h"
#include "aclnnop/aclnn_attention_update.h"
#include "aclnnop/aclnn_flash_attention_score.h"
#include "aclnnop/aclnn_fused_infer_attention_score.h"
#include "aclnnop/aclnn_fused_infer_attention_score_v2.h"
#include "aclnnop/aclnn_fused_infer_attention_score_v3.h"
#include "aclnnop/aclnn_fused_infer_attention_score_v4.h"
#include "aclnnop/aclnn_fused_infer_attention_score_v5.h"
#include "aclnnop/aclnn_incre_flash_attention.h"
#include "aclnnop/aclnn_incre_flash_attention_v2.h"
#include "aclnnop/aclnn_incre_flash_attention_v3.h"
#include "aclnnop/aclnn_incre_flash_attention_v4.h"
#include "aclnnop/aclnn_lightning_indexer.h"
#include "aclnnop/aclnn_prompt_flash_attention.h"
#include "aclnnop/aclnn_prompt_flash_attention_v2.h"
#include "aclnnop/aclnn_prompt_flash_attention_v3.h"
#include "aclnnop/aclnn_scatter_pa_kv_cache.h"
#include "aclnnop/aclnn_sparse_flash_attention.h"
#include "aclnnop/aclnn_sparse_flash_attention_v2.h"
#include "kvflash/export.h"
#include "kvflash/status.h"
#include "kvflash/version.h"
#include "securec.h"
#include "securectype.h"

#define EXPECT(cond)                                                                 \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      printf("FAILED at line %d: %s (%s)\n", __LINE__, #cond, aclGetRecentErrMsg()); \
      return 1;                                                                      \
    }                                                                                \
  } while (0)

int main(void) {
  aclrtStream stream = NULL;
  void* dev = NULL;
  float host[4] = {1, 2, 3, 4}, back[4] = {0, 0, 0, 0};
  int64_t dims[2] = {2, 2}, strides[2] = {2, 1};
  aclTensor* t;
  aclOpExecutor* executor = (aclOpExecutor*)0x10;
  uint64_t ws = 0;
  char layout[] = "BSH";
  bool return_lse = false;
  char version[32];
  char word[8];
  int number = 0;
  aclFloat16 half;

  /* The library and the headers agree on the version. */
  EXPECT(strcmp(kvflash_version(), KVFLASH_VERSION_STRING) == 0);
  snprintf(version, sizeof(version), "%d.%d.%d", KVFLASH_VERSION_MAJOR, KVFLASH_VERSION_MINOR,
           KVFLASH_VERSION_PATCH);
  EXPECT(strcmp(version, KVFLASH_VERSION_STRING) == 0);
  EXPECT(KVFLASH_VERSION ==
         KVFLASH_VERSION_MAJOR * 10000 + KVFLASH_VERSION_MINOR * 100 + KVFLASH_VERSION_PATCH);
  printf("kvflash %s\n", kvflash_version());

  EXPECT(aclInit(NULL) == ACL_SUCCESS);
  EXPECT(aclrtSetDevice(0) == ACL_SUCCESS);
  EXPECT(aclrtCreateStream(&stream) == ACL_SUCCESS);
  EXPECT(aclrtMalloc(&dev, sizeof(host), ACL_MEM_MALLOC_HUGE_FIRST) == ACL_SUCCESS);
  EXPECT(aclrtMemcpy(dev, sizeof(host), host, sizeof(host) + 1, ACL_MEMCPY_HOST_TO_DEVICE) ==
         ACL_ERROR_INVALID_PARAM);
  EXPECT(aclrtMemcpy(dev, sizeof(host), host, sizeof(host), ACL_MEMCPY_HOST_TO_DEVICE) ==
         ACL_SUCCESS);
  EXPECT(aclrtMemcpyAsync(back, sizeof(back), dev, sizeof(back), ACL_MEMCPY_DEVICE_TO_HOST,
                          stream) == ACL_SUCCESS);
  EXPECT(aclrtSynchronizeStream(stream) == ACL_SUCCESS);
  EXPECT(memcmp(host, back, sizeof(host)) == 0);
  EXPECT(aclDataTypeSize(ACL_BF16) == 2);
  /* aclFloat16 and the secure C functions, from C. */
  half = aclFloatToFloat16(1.5f);
  EXPECT(half == 0x3e00 && aclFloat16ToFloat(half) == 1.5f);
  EXPECT(memcpy_s(back, sizeof(back), host, sizeof(host) + 1) == ERANGE_AND_RESET);
  EXPECT(back[0] == 0.0f && back[3] == 0.0f);
  EXPECT(strcpy_s(word, sizeof(word), "BNSD") == EOK && strcmp(word, "BNSD") == 0);
  EXPECT(sprintf_s(word, sizeof(word), "%d-%s", 42, "toolong") == -1 && word[0] == '\0');
  EXPECT(sscanf_s("7 abc", "%d %s", &number, word, (unsigned)sizeof(word)) == 2);
  EXPECT(number == 7 && strcmp(word, "abc") == 0);

  t = aclCreateTensor(dims, 2, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, dims, 2, dev);
  EXPECT(t != NULL);
  /* A null key list: 161001 and the executor slot cleared. */
  EXPECT(aclnnIncreFlashAttentionGetWorkspaceSize(t, NULL, NULL, NULL, NULL, NULL, 1, 1.0, layout,
                                                  0, t, &ws, &executor) == ACLNN_ERR_PARAM_NULLPTR);
  EXPECT(executor == NULL);
  EXPECT(strstr(aclGetRecentErrMsg(), "key") != NULL);
  EXPECT(aclnnIncreFlashAttentionV4(NULL, 0, NULL, stream) == ACLNN_ERR_PARAM_NULLPTR);
  EXPECT((int)ACLNN_ERR_PARAM_NULLPTR == (int)KVFLASH_ERR_PARAM_NULLPTR);
  EXPECT(strcmp(kvflash_last_error_message(), aclGetRecentErrMsg()) == 0);
  /* SparseFlashAttention (V1, V2): a null query is 161001 and clears the executor slot. */
  executor = (aclOpExecutor*)0x10;
  EXPECT(aclnnSparseFlashAttentionGetWorkspaceSize(
             NULL, t, t, t, NULL, NULL, NULL, t, t, 1.0, 1, layout, layout, 3, INT64_MAX, INT64_MAX,
             2, return_lse, t, NULL, NULL, &ws, &executor) == ACLNN_ERR_PARAM_NULLPTR);
  EXPECT(executor == NULL);
  executor = (aclOpExecutor*)0x10;
  EXPECT(aclnnSparseFlashAttentionV2GetWorkspaceSize(
             NULL, t, t, t, NULL, NULL, NULL, t, t, NULL, 1.0, 1, layout, layout, 3, INT64_MAX,
             INT64_MAX, 2, return_lse, t, NULL, NULL, &ws, &executor) == ACLNN_ERR_PARAM_NULLPTR);
  EXPECT(executor == NULL);
  EXPECT(aclnnSparseFlashAttention(NULL, 0, NULL, stream) == ACLNN_ERR_PARAM_NULLPTR);
  EXPECT(aclnnSparseFlashAttentionV2(NULL, 0, NULL, stream) == ACLNN_ERR_PARAM_NULLPTR);
  /* LightningIndexer: a null weights is 161001 naming it, and clears the executor slot. */
  executor = (aclOpExecutor*)0x10;
  EXPECT(aclnnLightningIndexerGetWorkspaceSize(t, t, NULL, NULL, NULL, NULL, NULL, NULL, 2048, 3,
                                               INT64_MAX, INT64_MAX, false, t, NULL, &ws,
                                               &executor) == ACLNN_ERR_PARAM_NULLPTR);
  EXPECT(executor == NULL);
  EXPECT(strstr(aclGetRecentErrMsg(), "weights") != NULL);
  EXPECT(aclnnLightningIndexer(NULL, 0, NULL, stream) == ACLNN_ERR_PARAM_NULLPTR);
  /* PromptFlashAttention V3: a null query is 161001 and clears the executor slot; FIA V3/V4 and
     PFA phase 2 without an executor are 161001. */
  executor = (aclOpExecutor*)0x10;
  EXPECT(aclnnPromptFlashAttentionV3GetWorkspaceSize(NULL, t, t, NULL, NULL, NULL, NULL, NULL, NULL,
                                                     NULL, NULL, NULL, 1, 1.0, INT64_MAX, INT64_MAX,
                                                     layout, 1, 0, 1, t, &ws,
                                                     &executor) == ACLNN_ERR_PARAM_NULLPTR);
  EXPECT(executor == NULL);
  EXPECT(strstr(aclGetRecentErrMsg(), "query") != NULL);
  EXPECT(aclnnPromptFlashAttentionV3(NULL, 0, NULL, stream) == ACLNN_ERR_PARAM_NULLPTR);
  /* FusedInferAttentionScore V1 (called from C: bool softmaxLseFlag): a null query is 161001. */
  executor = (aclOpExecutor*)0x10;
  EXPECT(aclnnFusedInferAttentionScoreGetWorkspaceSize(
             NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
             NULL, NULL, NULL, 1, 1.0, INT64_MAX, INT64_MAX, layout, 1, 0, 0, 0, 0, false, t, NULL,
             &ws, &executor) == ACLNN_ERR_PARAM_NULLPTR);
  EXPECT(executor == NULL);
  EXPECT(strstr(aclGetRecentErrMsg(), "query") != NULL);
  EXPECT(aclnnFusedInferAttentionScore(NULL, 0, NULL, stream) == ACLNN_ERR_PARAM_NULLPTR);
  EXPECT(aclnnFusedInferAttentionScoreV2(NULL, 0, NULL, stream) == ACLNN_ERR_PARAM_NULLPTR);
  EXPECT(aclnnFusedInferAttentionScoreV3(NULL, 0, NULL, stream) == ACLNN_ERR_PARAM_NULLPTR);
  EXPECT(aclnnFusedInferAttentionScoreV4(NULL, 0, NULL, stream) == ACLNN_ERR_PARAM_NULLPTR);
  EXPECT(aclnnFusedInferAttentionScoreV5(NULL, 0, NULL, stream) == ACLNN_ERR_PARAM_NULLPTR);
  /* ScatterPaKvCache, FlashAttentionScore (and VarLen), AttentionUpdate: a null required argument
     is 161001 naming it and clears the executor slot; phase 2 without an executor is 161001. */
  executor = (aclOpExecutor*)0x10;
  EXPECT(aclnnScatterPaKvCacheGetWorkspaceSize(t, t, NULL, t, t, NULL, NULL, NULL, NULL, NULL,
                                               NULL, NULL, &ws, &executor) ==
         ACLNN_ERR_PARAM_NULLPTR);
  EXPECT(executor == NULL);
  EXPECT(strstr(aclGetRecentErrMsg(), "slotMapping") != NULL);
  EXPECT(aclnnScatterPaKvCache(NULL, 0, NULL, stream) == ACLNN_ERR_PARAM_NULLPTR);
  executor = (aclOpExecutor*)0x10;
  EXPECT(aclnnFlashAttentionScoreGetWorkspaceSize(NULL, t, t, NULL, NULL, NULL, NULL, NULL, 1.0,
                                                  1.0, INT64_MAX, INT64_MAX, 1, layout, 0, 0, t, t,
                                                  NULL, t, &ws, &executor) ==
         ACLNN_ERR_PARAM_NULLPTR);
  EXPECT(executor == NULL);
  executor = (aclOpExecutor*)0x10;
  EXPECT(aclnnFlashAttentionVarLenScoreGetWorkspaceSize(
             NULL, t, t, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 1.0, 1.0, INT64_MAX, INT64_MAX,
             1, layout, 0, 0, t, t, NULL, t, &ws, &executor) == ACLNN_ERR_PARAM_NULLPTR);
  EXPECT(executor == NULL);
  EXPECT(aclnnFlashAttentionScore(NULL, 0, NULL, stream) == ACLNN_ERR_PARAM_NULLPTR);
  EXPECT(aclnnFlashAttentionVarLenScore(NULL, 0, NULL, stream) == ACLNN_ERR_PARAM_NULLPTR);
  executor = (aclOpExecutor*)0x10;
  EXPECT(aclnnAttentionUpdateGetWorkspaceSize(NULL, NULL, 0, t, NULL, &ws, &executor) ==
         ACLNN_ERR_PARAM_NULLPTR);
  EXPECT(executor == NULL);
  EXPECT(strstr(aclGetRecentErrMsg(), "lse") != NULL);
  EXPECT(aclnnAttentionUpdate(NULL, 0, NULL, stream) == ACLNN_ERR_PARAM_NULLPTR);
  EXPECT(aclDestroyTensor(t) == ACLNN_SUCCESS);

  EXPECT(aclrtFree(dev) == ACL_SUCCESS);
  EXPECT(aclrtDestroyStream(stream) == ACL_SUCCESS);
  EXPECT(aclrtResetDevice(0) == ACL_SUCCESS);
  EXPECT(aclFinalize() == ACL_SUCCESS);
  printf("c_consumer: PASS\n");
  return 0;
}
