#include "hooks/aclnn_enqueue.hpp"

#include <memory>
#include <utility>

#include "aclnn/acl_backend.hpp"
#include "aclnn/runtime_state.hpp"
#include "aclnn/stream.hpp"
#include "core/error.hpp"
#include "core/strings.hpp"

namespace kvflash::aclnn {

Status enqueue(const char* op, aclrtStream stream, std::function<Status()> work) {
  if (cuda_runtime())  // host work has no place on a CUDA stream here
    return core::fail(Status::kRuntime, op, "host work cannot be queued on the CUDA runtime");
  std::shared_ptr<Stream> s = find_stream(stream);
  if (!s)
    return core::fail(Status::kInvalid, op,
                      "stream (" + core::ptr_str(stream) + ") is not a live aclrtStream");
  if (!s->submit(std::move(work)))
    return core::fail(Status::kRuntime, op,
                      "stream (" + core::ptr_str(stream) + ") is being destroyed");
  return Status::kSuccess;
}

}  // namespace kvflash::aclnn
