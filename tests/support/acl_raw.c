/* ACL calls with C enum arguments given as plain ints, made from C. A C program may pass any int
 * as an aclDataType, aclFormat, aclrtMemcpyKind or aclrtMemMallocPolicy; in C++ an enum holding a
 * value outside its enumerators' range is undefined behaviour, so tests and fuzz targets that pass
 * such values go through these. */
#include "support/acl_raw.h"

aclTensor *kvflash_raw_create_tensor(const int64_t *dims, uint64_t n, int32_t dtype,
                                     const int64_t *strides, int64_t offset, int32_t format,
                                     const int64_t *storage, uint64_t m, void *data) {
  return aclCreateTensor(dims, n, (aclDataType)dtype, strides, offset, (aclFormat)format, storage,
                         m, data);
}

int32_t kvflash_raw_get_data_type(const aclTensor *t, aclnnStatus *status) {
  aclDataType dt = ACL_DT_UNDEFINED;
  *status = aclGetDataType(t, &dt);
  return (int32_t)dt;
}

size_t kvflash_raw_data_type_size(int32_t dtype) { return aclDataTypeSize((aclDataType)dtype); }

aclError kvflash_raw_malloc(void **p, size_t size, int32_t policy) {
  return aclrtMalloc(p, size, (aclrtMemMallocPolicy)policy);
}

aclError kvflash_raw_memcpy(void *dst, size_t dest_max, const void *src, size_t count,
                            int32_t kind) {
  return aclrtMemcpy(dst, dest_max, src, count, (aclrtMemcpyKind)kind);
}
