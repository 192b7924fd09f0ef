#include "core/device_fault.hpp"

#include <string>

#include "core/error.hpp"

namespace kvflash::core {

Status unreadable_fault(const char* op, const FaultRecord& r) {
  return fail(Status::kRuntime, op,
              "the device run left a fault record that cannot be decoded (status " +
                  std::to_string(r.status) + ", operator " + std::to_string(r.op) + ", kind " +
                  std::to_string(r.kind) + ")");
}

}  // namespace kvflash::core
