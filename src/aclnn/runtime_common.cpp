#include "aclnn/runtime_common.hpp"

#include "aclnn/acl_backend.hpp"
#include "core/error.hpp"

namespace kvflash::aclnn {
namespace {
constexpr const char* kRt = "acl";
}  // namespace

aclError rt_fail(aclError code, const std::string& message) {
  core::fail(Status::kRuntime, kRt, message + " (aclError " + std::to_string(code) + ")");
  return code;
}

aclError runtime_ready(const char* fn) {
  const AclBackendChoice& c = acl_backend();
  if (c.error != ACL_SUCCESS) return rt_fail(c.error, std::string(fn) + ": " + c.message);
  return ACL_SUCCESS;
}

aclError not_live(const char* fn, const void* handle, const char* what) {
  return rt_fail(ACL_ERROR_INVALID_PARAM,
                 std::string(fn) + ": " + ptr_str(handle) + " is not a live " + what);
}

aclError check_malloc_policy(const char* fn, int32_t policy) {
  if (policy < ACL_MEM_MALLOC_HUGE_FIRST || policy > ACL_MEM_MALLOC_NORMAL_ONLY_P2P)
    return rt_fail(ACL_ERROR_INVALID_PARAM, std::string(fn) + ": policy (" +
                                                std::to_string(policy) +
                                                ") is not an aclrtMemMallocPolicy");
  return ACL_SUCCESS;
}

aclError check_alloc(const char* fn, void** ptr, size_t size) {
  if (ptr == nullptr)
    return rt_fail(ACL_ERROR_INVALID_PARAM, std::string(fn) + ": pointer slot is null");
  *ptr = nullptr;
  if (size == 0) return rt_fail(ACL_ERROR_INVALID_PARAM, std::string(fn) + ": size must be > 0");
  return ACL_SUCCESS;
}

aclError check_memcpy(const char* fn, void* dst, size_t dest_max, const void* src, size_t count,
                      int32_t kind) {
  if (kind != ACL_MEMCPY_HOST_TO_HOST && kind != ACL_MEMCPY_HOST_TO_DEVICE &&
      kind != ACL_MEMCPY_DEVICE_TO_HOST && kind != ACL_MEMCPY_DEVICE_TO_DEVICE)
    return rt_fail(ACL_ERROR_INVALID_PARAM, std::string(fn) + ": kind (" + std::to_string(kind) +
                                                ") is not an aclrtMemcpyKind");
  if (count > dest_max)
    return rt_fail(ACL_ERROR_INVALID_PARAM, std::string(fn) + ": count (" + std::to_string(count) +
                                                ") exceeds destMax (" + std::to_string(dest_max) +
                                                ")");
  if (count > 0 && (dst == nullptr || src == nullptr))
    return rt_fail(ACL_ERROR_INVALID_PARAM, std::string(fn) + ": dst and src must not be null");
  return ACL_SUCCESS;
}

aclError check_memset(const char* fn, void* ptr, size_t max_count, size_t count) {
  if (count > max_count)
    return rt_fail(ACL_ERROR_INVALID_PARAM, std::string(fn) + ": count (" + std::to_string(count) +
                                                ") exceeds maxCount (" +
                                                std::to_string(max_count) + ")");
  if (count > 0 && ptr == nullptr)
    return rt_fail(ACL_ERROR_INVALID_PARAM, std::string(fn) + ": devPtr is null");
  return ACL_SUCCESS;
}

aclError report(const char* fn, const std::optional<Stream::Failure>& failure) {
  if (!failure) return ACL_SUCCESS;
  core::fail(failure->status, kRt,
             std::string(fn) + ": a task failed with status " +
                 std::to_string(static_cast<int>(failure->status)) + ": " + failure->message);
  return failure->status == Status::kInvalid ? ACL_ERROR_RT_AICORE_EXCEPTION
                                             : ACL_ERROR_INTERNAL_ERROR;
}

}  // namespace kvflash::aclnn
