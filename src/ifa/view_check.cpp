#include "ifa/view_check.hpp"

#include <optional>

#include "core/checked_math.hpp"
#include "core/error.hpp"

namespace kvflash::ifa {

Status invalid(const std::string& message) { return core::fail(Status::kInvalid, kIfaOp, message); }

Status null_ptr(const std::string& message) {
  return core::fail(Status::kNullPtr, kIfaOp, message);
}

bool is_null_view(const TensorView& v) {
  if (v.data != nullptr) return false;
  if (v.rank < 0 || v.rank > kMaxRank) return true;
  bool has_zero = false;
  for (int i = 0; i < v.rank; ++i) {
    if (v.shape[i] < 0) return true;  // not provably empty
    if (v.shape[i] == 0) has_zero = true;
  }
  return !has_zero;
}

Status check_view(const TensorView& v, const std::string& name, int64_t* numel) {
  if (!dtype_is_known(v.dtype)) {
    return invalid(name + " has an unknown dtype (" + std::to_string(static_cast<int>(v.dtype)) +
                   ")");
  }
  if (v.rank < 0 || v.rank > kMaxRank) {
    return invalid(name + " rank (" + std::to_string(v.rank) + ") must be in [0, " +
                   std::to_string(kMaxRank) + "]");
  }
  for (int i = 0; i < v.rank; ++i) {
    if (v.shape[i] < 0) {
      return invalid(name + " dim " + std::to_string(i) + " (" + std::to_string(v.shape[i]) +
                     ") must be >= 0");
    }
    if (v.strides[i] < 0) {
      return invalid(name + " stride " + std::to_string(i) + " (" + std::to_string(v.strides[i]) +
                     ") must be >= 0 (negative strides are not "
                     "supported)");
    }
  }
  if (v.offset < 0) {
    return invalid(name + " offset (" + std::to_string(v.offset) + ") must be >= 0");
  }
  const auto count = core::checked_product(v.shape.data(), v.rank);
  if (!count) return invalid(name + " element count overflows int64, got " + v.describe());
  *numel = *count;
  if (*count == 0) return Status::kSuccess;  // nothing is ever addressed
  // The furthest element (and its last byte) must be addressable without int64 overflow.
  std::optional<int64_t> furthest = v.offset;
  for (int i = 0; i < v.rank && furthest; ++i) {
    const auto span = core::checked_mul(v.shape[i] - 1, v.strides[i]);
    furthest = span ? core::checked_add(*furthest, *span) : std::nullopt;
  }
  const int64_t elem = static_cast<int64_t>(dtype_size(v.dtype));
  std::optional<int64_t> end_byte;
  if (furthest) {
    const auto bytes = core::checked_mul(*furthest, elem);
    if (bytes) end_byte = core::checked_add(*bytes, elem);
  }
  if (!end_byte) {
    return invalid(name + " view " + v.describe() + " with offset " + std::to_string(v.offset) +
                   " addresses beyond the int64 range");
  }
  if (v.data == nullptr) {
    return invalid(name + " has " + std::to_string(*count) + " elements but no data (null)");
  }
  return Status::kSuccess;
}

const void* element_ptr(const TensorView& v, int64_t index) {
  // An empty view is never dereferenced, and its offset and strides were not bounded.
  if (v.data == nullptr || v.numel() == 0) return nullptr;
  return static_cast<const char*>(v.data) +
         (v.offset + index) * static_cast<int64_t>(dtype_size(v.dtype));
}

Status scaled_stride(int64_t a, int64_t b, const std::string& name, int64_t* result) {
  const auto r = core::checked_mul(a, b);
  if (!r) return invalid(name + " stride overflows int64");
  *result = *r;
  return Status::kSuccess;
}

std::string dims_str(const TensorView& v) {
  std::string s = "[";
  for (int i = 0; i < v.rank && i < kMaxRank; ++i) {
    if (i) s += ",";
    s += std::to_string(v.shape[i]);
  }
  return s + "]";
}

bool same_dims(const TensorView& a, const TensorView& b) {
  if (a.rank != b.rank) return false;
  for (int i = 0; i < a.rank; ++i) {
    if (a.shape[i] != b.shape[i]) return false;
  }
  return true;
}

}  // namespace kvflash::ifa
