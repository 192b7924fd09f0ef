/* CANN-compatible umbrella header (acl/acl.h), kvflash CPU edition. Pure C; C linkage. */
#ifndef KVFLASH_ACL_ACL_H_
#define KVFLASH_ACL_ACL_H_

#include "acl/acl_base.h"
#include "acl/acl_rt.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Initialises the runtime. configPath may be null or ""; any other path must name a readable file
 * (its contents are ignored). A second aclInit without aclFinalize returns
 * ACL_ERROR_REPEAT_INITIALIZE. */
ACL_FUNC_VISIBILITY aclError aclInit(const char *configPath);
/** Drains and destroys every stream and resets the device. Without a prior aclInit it returns
 * ACL_ERROR_REPEAT_FINALIZE. */
ACL_FUNC_VISIBILITY aclError aclFinalize(void);
/** The reason for the most recent failure on the calling thread (runtime or operator); "" if
 * none. Valid until the next kvflash call on this thread. Never null. */
ACL_FUNC_VISIBILITY const char *aclGetRecentErrMsg(void);

#ifdef __cplusplus
}
#endif

#endif /* KVFLASH_ACL_ACL_H_ */
