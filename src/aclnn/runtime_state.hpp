// Internal access to the runtime's state: the current device, which every runtime shares
// (runtime.cpp), and the host runtime's streams (runtime_host.cpp), for host work queued by test
// hooks.
#pragma once

#include <cstdint>
#include <memory>

#include "acl/acl_base.h"
#include "aclnn/stream.hpp"

namespace kvflash::aclnn {

/// The device of the last aclrtSetDevice / aclrtCreateContext / aclrtSetCurrentContext; -1 when
/// none is set (or after aclrtResetDevice / aclFinalize).
int32_t current_device();

/// The host runtime's live stream behind handle; a null handle means its default stream (created
/// on first use). nullptr if handle is not a live stream of the host runtime.
std::shared_ptr<Stream> find_stream(aclrtStream handle);

}  // namespace kvflash::aclnn
