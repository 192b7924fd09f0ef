// Internal access to the runtime's stream table (runtime.cpp), for phase 2 and async copies.
#pragma once

#include <memory>

#include "acl/acl_base.h"
#include "aclnn/stream.hpp"

namespace kvflash::aclnn {

/// The live stream behind handle; a null handle means the process-wide default stream (created
/// on first use). nullptr if handle is not a live stream.
std::shared_ptr<Stream> find_stream(aclrtStream handle);

/// The device of the last aclrtSetDevice / aclrtCreateContext / aclrtSetCurrentContext; -1 when
/// none is set (or after aclrtResetDevice / aclFinalize).
int32_t current_device();

}  // namespace kvflash::aclnn
