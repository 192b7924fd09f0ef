/* kvflash status codes and the last-error message (C linkage).
 *
 * The numeric values are the aclnn return codes (docs/semantics.md §0.3), so a status returned by
 * the C++ API, the C API and the aclnn-compatible API means the same thing everywhere. Pure C; C
 * linkage. */
#ifndef KVFLASH_STATUS_H_
#define KVFLASH_STATUS_H_

#include <stdint.h>

#include "kvflash/export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum kvflash_status {
  KVFLASH_SUCCESS = 0,
  /** A required pointer (input, output, attribute, workspace-size or executor slot) is null. */
  KVFLASH_ERR_PARAM_NULLPTR = 161001,
  /** A dtype, shape, layout, value or combination is outside the operator's contract. */
  KVFLASH_ERR_PARAM_INVALID = 161002,
  /** A runtime failure: allocation failed, a stream could not run the work, an unsupported profile.
   */
  KVFLASH_ERR_RUNTIME = 361001,
} kvflash_status;

/** The message of the most recent failure on the calling thread ("" if none). The pointer stays
 * valid until the next kvflash call on this thread. */
KVFLASH_API const char *kvflash_last_error_message(void);

#ifdef __cplusplus
}
#endif

#endif /* KVFLASH_STATUS_H_ */
