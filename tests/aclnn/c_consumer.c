/* A pure C program against the CANN-compatible headers: every header that is C in CANN must
 * compile as C (C99) and link, and the runtime must behave as documented. Exit 0 on success. */
#include <stdio.h>
#include <string.h>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "aclnn/aclnn_base.h"
#include "aclnnop/aclnn_incre_flash_attention.h"
#include "aclnnop/aclnn_incre_flash_attention_v2.h"
#include "aclnnop/aclnn_incre_flash_attention_v3.h"
#include "aclnnop/aclnn_incre_flash_attention_v4.h"

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

  t = aclCreateTensor(dims, 2, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, dims, 2, dev);
  EXPECT(t != NULL);
  /* A null key list: 161001 and the executor slot cleared. */
  EXPECT(aclnnIncreFlashAttentionGetWorkspaceSize(t, NULL, NULL, NULL, NULL, NULL, 1, 1.0, layout,
                                                  0, t, &ws, &executor) == ACLNN_ERR_PARAM_NULLPTR);
  EXPECT(executor == NULL);
  EXPECT(strstr(aclGetRecentErrMsg(), "key") != NULL);
  EXPECT(aclnnIncreFlashAttentionV4(NULL, 0, NULL, stream) == ACLNN_ERR_PARAM_NULLPTR);
  EXPECT(aclDestroyTensor(t) == ACLNN_SUCCESS);

  EXPECT(aclrtFree(dev) == ACL_SUCCESS);
  EXPECT(aclrtDestroyStream(stream) == ACL_SUCCESS);
  EXPECT(aclrtResetDevice(0) == ACL_SUCCESS);
  EXPECT(aclFinalize() == ACL_SUCCESS);
  printf("c_consumer: PASS\n");
  return 0;
}
