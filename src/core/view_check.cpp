#include "core/view_check.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

#include "core/checked_math.hpp"
#include "core/error.hpp"

namespace kvflash::core {

namespace {
Status invalid(const char* op, const std::string& message) {
  return fail(Status::kInvalid, op, message);
}
}  // namespace

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

Status check_view(const char* op, const TensorView& v, const std::string& name, int64_t* numel) {
  if (!dtype_is_known(v.dtype)) {
    return invalid(
        op, name + " has an unknown dtype (" + std::to_string(static_cast<int>(v.dtype)) + ")");
  }
  if (v.rank < 0 || v.rank > kMaxRank) {
    return invalid(op, name + " rank (" + std::to_string(v.rank) + ") must be in [0, " +
                           std::to_string(kMaxRank) + "]");
  }
  for (int i = 0; i < v.rank; ++i) {
    if (v.shape[i] < 0) {
      return invalid(op, name + " dim " + std::to_string(i) + " (" + std::to_string(v.shape[i]) +
                             ") must be >= 0");
    }
    if (v.strides[i] < 0) {
      return invalid(op, name + " stride " + std::to_string(i) + " (" +
                             std::to_string(v.strides[i]) +
                             ") must be >= 0 (negative strides are not "
                             "supported)");
    }
  }
  if (v.offset < 0) {
    return invalid(op, name + " offset (" + std::to_string(v.offset) + ") must be >= 0");
  }
  const auto count = checked_product(v.shape.data(), v.rank);
  if (!count) return invalid(op, name + " element count overflows int64, got " + v.describe());
  *numel = *count;
  if (*count == 0) return Status::kSuccess;  // nothing is ever addressed
  // The furthest element (and its last byte) must be addressable without int64 overflow.
  std::optional<int64_t> furthest = v.offset;
  for (int i = 0; i < v.rank && furthest; ++i) {
    const auto span = checked_mul(v.shape[i] - 1, v.strides[i]);
    furthest = span ? checked_add(*furthest, *span) : std::nullopt;
  }
  const int64_t elem = static_cast<int64_t>(dtype_size(v.dtype));
  std::optional<int64_t> end_byte;
  if (furthest) {
    const auto bytes = checked_mul(*furthest, elem);
    if (bytes) end_byte = checked_add(*bytes, elem);
  }
  if (!end_byte) {
    return invalid(op, name + " view " + v.describe() + " with offset " + std::to_string(v.offset) +
                           " addresses beyond the int64 range");
  }
  if (v.data == nullptr) {
    return invalid(op, name + " has " + std::to_string(*count) + " elements but no data (null)");
  }
  return Status::kSuccess;
}

TensorView canonical_strides(const TensorView& v) {
  TensorView c = v;
  if (c.rank < 0 || c.rank > kMaxRank) return c;  // invalid: check_view rejects it
  bool empty = false;
  for (int i = 0; i < c.rank; ++i) empty = empty || c.shape[i] == 0;
  for (int i = 0; i < c.rank; ++i) {
    if (empty || c.shape[i] == 1) c.strides[i] = 0;
  }
  return c;
}

Status scaled_stride(const char* op, int64_t a, int64_t b, const std::string& name,
                     int64_t* result) {
  const auto r = checked_mul(a, b);
  if (!r) return invalid(op, name + " stride overflows int64");
  *result = *r;
  return Status::kSuccess;
}

void* element0(const TensorView& v) { return v.numel() == 0 ? nullptr : v.base(); }

std::string dims_str(const TensorView& v) {
  return dims_str(std::span<const int64_t>(v.shape.data(),
                                           static_cast<size_t>(std::clamp(v.rank, 0, kMaxRank))));
}

bool same_dims(const TensorView& a, const TensorView& b) {
  if (a.rank != b.rank) return false;
  for (int i = 0; i < a.rank; ++i) {
    if (a.shape[i] != b.shape[i]) return false;
  }
  return true;
}

}  // namespace kvflash::core

namespace kvflash::core {

bool same_layout(const TensorView& a, const TensorView& b) {
  if (a.dtype != b.dtype || a.device != b.device || a.offset != b.offset || !same_dims(a, b)) {
    return false;
  }
  for (int i = 0; i < a.rank && i < kMaxRank; ++i) {
    if (a.strides[i] != b.strides[i]) return false;
  }
  return true;
}

Status match_view(const char* op, const TensorView& plan, const TensorView& run, const char* name,
                  int64_t index) {
  const bool same = same_layout(plan, run);
  if (same && !is_null_view(run)) return Status::kSuccess;
  std::string what = name;
  if (index >= 0) what += "[" + std::to_string(index) + "]";
  if (!same) {
    return invalid(op, "run: " + what + " (" + run.describe() + " on " + device_name(run.device) +
                           ") does not match the plan's (" + plan.describe() + " on " +
                           device_name(plan.device) +
                           "): dtype, dims, strides, offset and device must be those of create()");
  }
  return fail(Status::kNullPtr, op, "run: " + what + " has elements but no data");
}

Status match_view(const char* op, const std::optional<TensorView>& plan,
                  const std::optional<TensorView>& run, const char* name) {
  if (plan.has_value() != run.has_value()) {
    return invalid(op, std::string("run: ") + name + " is " + (run ? "given" : "absent") +
                           " but the plan was created " + (plan ? "with" : "without") + " it");
  }
  return plan ? match_view(op, *plan, *run, name) : Status::kSuccess;
}

Status match_view(const char* op, const std::vector<TensorView>& plan,
                  const std::vector<TensorView>& run, const char* name) {
  if (plan.size() != run.size()) {
    return invalid(op, std::string("run: ") + name + " has " + std::to_string(run.size()) +
                           " tensors but the plan has " + std::to_string(plan.size()));
  }
  for (size_t i = 0; i < plan.size(); ++i) {
    KVFLASH_RETURN_IF_ERROR(match_view(op, plan[i], run[i], name, static_cast<int64_t>(i)));
  }
  return Status::kSuccess;
}

bool same_scale(double plan, double run) {
  const float p = static_cast<float>(plan), r = static_cast<float>(run);
  return p == r || (std::isnan(p) && std::isnan(r));
}

Status match_attr(const char* op, bool same, const char* name) {
  return same ? Status::kSuccess
              : invalid(op, std::string("run: ") + name +
                                " differs from the plan's; create a plan for the new value");
}

}  // namespace kvflash::core
