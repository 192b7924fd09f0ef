/* CANN-compatible aclnn base header (aclnn/aclnn_base.h): what every operator header needs.
 * Pure C; C linkage. */
#ifndef KVFLASH_ACLNN_ACLNN_BASE_H_
#define KVFLASH_ACLNN_ACLNN_BASE_H_

#include "acl/acl_base.h"
#include "aclnn/acl_meta.h"

#endif /* KVFLASH_ACLNN_ACLNN_BASE_H_ */
