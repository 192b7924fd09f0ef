// The IFA validator's failure helpers: every rejection names the operator the same way.
#pragma once

#include <string>

#include "core/error.hpp"
#include "kvflash/status.hpp"

namespace kvflash::ifa {

inline constexpr const char* kIfaOp = "incre_flash_attention";

/// core::fail(kInvalid, "incre_flash_attention", message).
inline Status invalid(const std::string& message) {
  return core::fail(Status::kInvalid, kIfaOp, message);
}
/// core::fail(kNullPtr, "incre_flash_attention", message).
inline Status null_ptr(const std::string& message) {
  return core::fail(Status::kNullPtr, kIfaOp, message);
}

}  // namespace kvflash::ifa
