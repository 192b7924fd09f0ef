// What a plan does with an operator's field table (core/fields.hpp): keep the creation
// arguments without their data (strip_fields), match a run against them (match_fields) and
// describe them as bytes (fingerprint_fields). One generic body for every operator; the messages
// name the argument by its table name.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/fields.hpp"
#include "core/fingerprint.hpp"
#include "core/view_check.hpp"
#include "kvflash/status.hpp"
#include "kvflash/tensor.hpp"

namespace kvflash::core {

inline void clear_data(TensorView& v) { v.data = nullptr; }
inline void clear_data(std::optional<TensorView>& v) {
  if (v) v->data = nullptr;
}
inline void clear_data(std::vector<TensorView>& list) {
  for (TensorView& v : list) v.data = nullptr;
}
template <class T>
void clear_data(T&) {}  // an attribute holds no data

/// args with every tensor's data pointer cleared.
template <class Args, class Fields>
Args strip_fields(const Fields& fields, const Args& args) {
  Args m = args;
  for_each_field(fields, [&](const auto& f) { clear_data(m.*f.member); });
  return m;
}

/// Attributes are compared as the kernels use them: a double (scale_value) as (float).
inline bool same_attr(double plan, double run) { return same_scale(plan, run); }
template <class T>
bool same_attr(const T& plan, const T& run) {
  return plan == run;
}

/// kInvalid unless run has plan's metadata for every field: each tensor's layout (match_view),
/// presence of each optional tensor, each list's length, each attribute; kNullPtr for a tensor
/// holding elements without data; then kInvalid for a negative num_threads. Allocates only to
/// report a failure: runs call it.
template <class Args, class Fields>
Status match_fields(const char* op, const Fields& fields, const Args& plan, const Args& run) {
  KVFLASH_RETURN_IF_ERROR(first_failure(fields, [&](const auto& f) -> Status {
    const auto& p = plan.*f.member;
    const auto& r = run.*f.member;
    using T = std::remove_cvref_t<decltype(p)>;
    if constexpr (kIsTensor<T>) {
      if constexpr (std::is_same_v<T, std::optional<TensorView>>) {
        if ((f.flags & kMatchIfPlanHas) && !p) return Status::kSuccess;
      }
      return match_view(op, p, r, f.name);
    } else {
      return match_attr(op, same_attr(p, r), f.name);
    }
  }));
  if (run.num_threads < 0) {
    return fail(
        Status::kInvalid, op,
        "num_threads (" + std::to_string(run.num_threads) + ") must be >= 0 (0 = library default)");
  }
  return Status::kSuccess;
}

/// Appends the fingerprint bytes of every field of args to *out (core/fingerprint.hpp).
template <class Args, class Fields>
void fingerprint_fields(const Fields& fields, const Args& args, std::string* out) {
  FingerprintWriter w(out);
  for_each_field(fields, [&](const auto& f) { append_fingerprint(w, args.*f.member); });
  w.flush();
}

}  // namespace kvflash::core
