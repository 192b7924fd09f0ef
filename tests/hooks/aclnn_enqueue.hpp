// Host work queued on an aclrtStream of the CPU runtime, for tests that need a task of their own
// in stream order (a gate that holds a stream, a probe of the order two streams run in). The
// library queues only executors (aclnn/acl_objects.hpp: launch); this is a test hook, not part of
// libkvflash.
#pragma once

#include <functional>

#include "acl/acl_base.h"
#include "kvflash/status.hpp"

namespace kvflash::aclnn {

/// Enqueues work on stream (null = the default stream). kInvalid if stream is not live, kRuntime
/// on the CUDA runtime (host work has no place on a CUDA stream) or while the stream is being
/// destroyed.
Status enqueue(const char* op, aclrtStream stream, std::function<Status()> work);

}  // namespace kvflash::aclnn
