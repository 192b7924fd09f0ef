/* CANN-compatible aclnn meta types (aclnn/acl_meta.h), kvflash CPU edition.
 *
 * aclTensor, aclTensorList, aclIntArray and aclOpExecutor are opaque. Objects are owned by the
 * caller until the matching aclDestroy* call; a tensor list holds its own copies of the tensor
 * descriptors, so destroying a list and destroying the tensors it was made from are independent
 * (either order, either or both). Anything still alive is released when the library unloads.
 * Pure C; C linkage. */
#ifndef KVFLASH_ACLNN_ACL_META_H_
#define KVFLASH_ACLNN_ACL_META_H_

#include <stddef.h>
#include <stdint.h>

#include "acl/acl_base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef int32_t aclnnStatus;

#define ACLNN_SUCCESS 0
#define ACLNN_ERR_PARAM_NULLPTR 161001
#define ACLNN_ERR_PARAM_INVALID 161002
#define ACLNN_ERR_RUNTIME_ERROR 361001
#define ACLNN_ERR_INNER 561000
#define ACLNN_ERR_INNER_INFERSHAPE_ERROR 561001
#define ACLNN_ERR_INNER_TILING_ERROR 561002
#define ACLNN_ERR_INNER_FIND_KERNEL_ERROR 561003
#define ACLNN_ERR_INNER_CREATE_EXECUTOR 561101
#define ACLNN_ERR_INNER_NULLPTR 561103

typedef struct aclOpExecutor aclOpExecutor;
typedef struct aclTensor aclTensor;
typedef struct aclTensorList aclTensorList;
typedef struct aclIntArray aclIntArray;

/** A tensor descriptor over caller memory. Element (i0..ik) lives at
 *  tensorData + (offset + sum_k i_k * stride[k]) * elementsize. Returns null (reason in
 *  aclGetRecentErrMsg) if viewDimsNum > 8, a needed pointer is null, a dim or stride is negative,
 *  or the view reaches outside the storage described by storageDims. */
ACL_FUNC_VISIBILITY aclTensor *aclCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum,
                                               aclDataType dataType, const int64_t *stride,
                                               int64_t offset, aclFormat format,
                                               const int64_t *storageDims, uint64_t storageDimsNum,
                                               void *tensorData);
/** Copies the descriptors of value[0..size); null entries stay null (operators reject them). */
ACL_FUNC_VISIBILITY aclTensorList *aclCreateTensorList(const aclTensor *const *value,
                                                       uint64_t size);
/** Copies value[0..size). */
ACL_FUNC_VISIBILITY aclIntArray *aclCreateIntArray(const int64_t *value, uint64_t size);

/* Destroy functions: ACLNN_SUCCESS, also for null; ACLNN_ERR_PARAM_INVALID for a pointer that is
 * not a live object of that kind (double destroy, foreign pointer). */
ACL_FUNC_VISIBILITY aclnnStatus aclDestroyTensor(const aclTensor *tensor);
ACL_FUNC_VISIBILITY aclnnStatus aclDestroyTensorList(const aclTensorList *array);
ACL_FUNC_VISIBILITY aclnnStatus aclDestroyIntArray(const aclIntArray *array);

/* Queries. */
ACL_FUNC_VISIBILITY aclnnStatus aclGetDataType(const aclTensor *tensor, aclDataType *dataType);
ACL_FUNC_VISIBILITY aclnnStatus aclGetFormat(const aclTensor *tensor, aclFormat *format);
ACL_FUNC_VISIBILITY aclnnStatus aclGetTensorListSize(const aclTensorList *tensorList,
                                                     uint64_t *size);
ACL_FUNC_VISIBILITY aclnnStatus aclGetIntArraySize(const aclIntArray *array, uint64_t *size);

/** Lets the executor be launched any number of times; it then lives until aclDestroyAclOpExecutor.
 */
ACL_FUNC_VISIBILITY aclnnStatus aclSetAclOpExecutorRepeatable(aclOpExecutor *executor);
/** Releases an executor that has not been consumed (or a repeatable one). */
ACL_FUNC_VISIBILITY aclnnStatus aclDestroyAclOpExecutor(aclOpExecutor *executor);

#ifdef __cplusplus
}
#endif

#endif /* KVFLASH_ACLNN_ACL_META_H_ */
