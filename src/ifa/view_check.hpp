// Generic checks on user tensor views, shared by the IFA validator's parts. Every check that
// fails records a message through core::fail and returns the status, so callers only propagate.
#pragma once

#include <cstdint>
#include <string>

#include "kvflash/status.hpp"
#include "kvflash/tensor.hpp"

namespace kvflash::ifa {

inline constexpr const char* kIfaOp = "incre_flash_attention";

/// Propagates a non-success Status from the current function.
#define KVFLASH_RETURN_IF_ERROR(expr)                                           \
  do {                                                                          \
    const ::kvflash::Status kvflash_status_ = (expr);                           \
    if (kvflash_status_ != ::kvflash::Status::kSuccess) return kvflash_status_; \
  } while (0)

/// core::fail(kInvalid, "incre_flash_attention", message).
Status invalid(const std::string& message);
/// core::fail(kNullPtr, "incre_flash_attention", message).
Status null_ptr(const std::string& message);

/// True when the view has no data pointer although it may hold elements. A view whose dims are
/// valid and include a 0 holds nothing, so a null pointer is legal there.
bool is_null_view(const TensorView& v);

/// The geometry every input view must have: a known dtype, rank in [0, kMaxRank], dims, strides
/// and offset >= 0 (Decision: negative strides are not supported), and a furthest element whose
/// byte offset fits int64 (checked, so no later index computation can overflow). A view holding
/// elements must have data. `name` is the argument name used in messages. *numel gets the count.
Status check_view(const TensorView& v, const std::string& name, int64_t* numel);

/// Pointer to element `index` (counted from data, including the view's offset) of a view that
/// passed check_view, or nullptr for an empty view (never dereferenced).
const void* element_ptr(const TensorView& v, int64_t index);

/// a * b for stride scaling; fails with a message naming `name` when it overflows.
Status scaled_stride(int64_t a, int64_t b, const std::string& name, int64_t* result);

/// "[2,1,16]" — the dims only.
std::string dims_str(const TensorView& v);
/// True when a and b have the same rank and dims.
bool same_dims(const TensorView& a, const TensorView& b);

}  // namespace kvflash::ifa
