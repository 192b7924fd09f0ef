#include "aclnn/acl_backend.hpp"

#include <cstdlib>
#include <cstring>

#include "aclnn/runtime_state.hpp"
#include "cuda/device.hpp"

namespace kvflash::aclnn {

bool parse_acl_backend(const char* value, AclBackend* out, std::string* error) {
  if (value == nullptr || value[0] == '\0' || std::strcmp(value, "cpu") == 0) {
    *out = AclBackend::kCpu;
    return true;
  }
  if (std::strcmp(value, "cuda") == 0) {
    *out = AclBackend::kCuda;
    return true;
  }
  *error = std::string("KVFLASH_ACL_BACKEND='") + value +
           "' is not a runtime kvflash has: use 'cpu' (the default) or 'cuda'";
  return false;
}

AclBackendChoice decide_acl_backend(const char* value) {
  AclBackendChoice c;
  if (!parse_acl_backend(value, &c.backend, &c.message)) {
    c.error = ACL_ERROR_INVALID_PARAM;
    return c;
  }
  if (c.backend != AclBackend::kCuda) return c;
#if defined(KVFLASH_HAVE_CUDA)
  if (!cuda::device_present()) {
    c.error = ACL_ERROR_INVALID_DEVICE;
    c.message = "KVFLASH_ACL_BACKEND=cuda but CUDA cannot be used here: " +
                cuda::device_info().reason;
  }
#else
  c.error = ACL_ERROR_API_NOT_SUPPORT;
  c.message =
      "KVFLASH_ACL_BACKEND=cuda but this kvflash was built without CUDA (KVFLASH_CUDA=OFF or no "
      "nvcc at configure time)";
#endif
  return c;
}

const AclBackendChoice& acl_backend() {
  // Magic static: read once, thread-safe; never destroyed (static destructors of the program may
  // still call acl functions after main).
  static const AclBackendChoice* const choice =
      new AclBackendChoice(decide_acl_backend(std::getenv("KVFLASH_ACL_BACKEND")));
  return *choice;
}

Device acl_tensor_device() {
  if (!cuda_runtime()) return Device{};
  const int32_t current = current_device();
  return Device{DeviceType::kCuda, current < 0 ? 0 : current};
}

}  // namespace kvflash::aclnn
