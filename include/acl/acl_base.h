/* CANN-compatible base types of the ACL runtime (acl/acl_base.h), kvflash CPU edition.
 *
 * The numeric values of every enumerator and error constant are CANN's, so code that prints or
 * compares them behaves the same on an Ascend device and on kvflash. Pure C; C linkage. */
#ifndef KVFLASH_ACL_ACL_BASE_H_
#define KVFLASH_ACL_ACL_BASE_H_

#include <stddef.h>
#include <stdint.h>

#include "kvflash/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* CANN's export macro; in kvflash it is the library's own (kvflash/export.h). */
#ifndef ACL_FUNC_VISIBILITY
#define ACL_FUNC_VISIBILITY KVFLASH_API
#endif

typedef int aclError;
/* The bit pattern of an IEEE binary16 value (CANN's fp16 host type). */
typedef uint16_t aclFloat16;
typedef void *aclrtStream;
typedef void *aclrtEvent;
typedef void *aclrtContext;

/* Error codes (CANN values). */
#define ACL_SUCCESS 0
#define ACL_ERROR_NONE 0
#define ACL_ERROR_INVALID_PARAM 100000
#define ACL_ERROR_UNINITIALIZE 100001
#define ACL_ERROR_REPEAT_INITIALIZE 100002
#define ACL_ERROR_INVALID_FILE 100003
#define ACL_ERROR_REPEAT_FINALIZE 100037
#define ACL_ERROR_BAD_ALLOC 200000
#define ACL_ERROR_API_NOT_SUPPORT 200001
#define ACL_ERROR_INVALID_DEVICE 200002
#define ACL_ERROR_INTERNAL_ERROR 500000
#define ACL_ERROR_FAILURE 500001
/* A kernel found bad device data while running (kvflash: an out-of-range block id, actual lengths
 * out of range); reported by the next synchronisation of its stream, as CANN reports AI Core
 * exceptions. */
#define ACL_ERROR_RT_AICORE_EXCEPTION 507015

typedef enum {
  ACL_DT_UNDEFINED = -1,
  ACL_FLOAT = 0,
  ACL_FLOAT16 = 1,
  ACL_INT8 = 2,
  ACL_INT32 = 3,
  ACL_UINT8 = 4,
  ACL_INT16 = 6,
  ACL_UINT16 = 7,
  ACL_UINT32 = 8,
  ACL_INT64 = 9,
  ACL_UINT64 = 10,
  ACL_DOUBLE = 11,
  ACL_BOOL = 12,
  ACL_STRING = 13,
  ACL_COMPLEX64 = 16,
  ACL_COMPLEX128 = 17,
  ACL_BF16 = 27,
  ACL_INT4 = 29
} aclDataType;

typedef enum {
  ACL_FORMAT_UNDEFINED = -1,
  ACL_FORMAT_NCHW = 0,
  ACL_FORMAT_NHWC = 1,
  ACL_FORMAT_ND = 2,
  ACL_FORMAT_NC1HWC0 = 3,
  ACL_FORMAT_FRACTAL_Z = 4,
  ACL_FORMAT_FRACTAL_NZ = 29,
  ACL_FORMAT_NCDHW = 30
} aclFormat;

/** Bytes per element of dataType; 0 for ACL_DT_UNDEFINED, ACL_STRING, ACL_INT4 and unknown values.
 */
ACL_FUNC_VISIBILITY size_t aclDataTypeSize(aclDataType dataType);

/** The value of an fp16 bit pattern; exact for every pattern (NaN stays NaN). */
ACL_FUNC_VISIBILITY float aclFloat16ToFloat(aclFloat16 value);
/** value rounded to fp16, to nearest with ties to even: beyond the largest finite fp16 (65504)
 * by half a unit or more gives +-inf; values below the normal range round to subnormals or zero;
 * NaN gives a quiet NaN of the same sign. */
ACL_FUNC_VISIBILITY aclFloat16 aclFloatToFloat16(float value);

#ifdef __cplusplus
}
#endif

#endif /* KVFLASH_ACL_ACL_BASE_H_ */
