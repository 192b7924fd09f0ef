/* ACL calls whose enum arguments are plain ints (see acl_raw.c). */
#ifndef KVFLASH_TESTS_SUPPORT_ACL_RAW_H_
#define KVFLASH_TESTS_SUPPORT_ACL_RAW_H_

#include <stddef.h>
#include <stdint.h>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

aclTensor *kvflash_raw_create_tensor(const int64_t *dims, uint64_t n, int32_t dtype,
                                     const int64_t *strides, int64_t offset, int32_t format,
                                     const int64_t *storage, uint64_t m, void *data);
/* aclGetDataType's result as an int (status in *status). */
int32_t kvflash_raw_get_data_type(const aclTensor *t, aclnnStatus *status);
size_t kvflash_raw_data_type_size(int32_t dtype);
aclError kvflash_raw_malloc(void **p, size_t size, int32_t policy);
aclError kvflash_raw_memcpy(void *dst, size_t dest_max, const void *src, size_t count,
                            int32_t kind);

#ifdef __cplusplus
}
#endif

#endif /* KVFLASH_TESTS_SUPPORT_ACL_RAW_H_ */
