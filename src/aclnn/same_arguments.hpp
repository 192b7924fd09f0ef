// Whether two argument sets of an operator are identical in every field of its table
// (core/fields.hpp): every tensor view's data pointer, dtype, rank, dims, strides, offset and
// device, the presence and contents of every optional and list, every attribute (a double by its
// bits, so -0.0 and 0.0 differ and a NaN equals only itself). Stricter than the plan fingerprint
// (core/fingerprint.hpp), which leaves data pointers out: IFA's phase 1 reuses a plan only for a
// call whose arguments are the same in everything validation could read (acl_objects.hpp,
// plan_executor_reusing).
#pragma once

#include <bit>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "core/fields.hpp"
#include "kvflash/tensor.hpp"

namespace kvflash::aclnn {
namespace same_arguments_detail {

// Declared first: each template below finds the others whatever the nesting
// (optional<vector<int64_t>>).
inline bool same(const TensorView& a, const TensorView& b);
inline bool same(double a, double b);
inline bool same(const std::string& a, const std::string& b);
template <class T>
  requires std::is_integral_v<T> || std::is_enum_v<T>
bool same(T a, T b);
template <class T>
bool same(const std::optional<T>& a, const std::optional<T>& b);
template <class T>
bool same(const std::vector<T>& a, const std::vector<T>& b);

inline bool same(const TensorView& a, const TensorView& b) {
  // A member added to TensorView must be compared here (and this size updated).
  static_assert(sizeof(TensorView) == 2 * sizeof(void*) + 2 * kMaxRank * sizeof(int64_t) +
                                          sizeof(int64_t) + sizeof(Device),
                "TensorView changed: compare every member in same()");
  return a.data == b.data && a.dtype == b.dtype && a.rank == b.rank && a.shape == b.shape &&
         a.strides == b.strides && a.offset == b.offset && a.device == b.device;
}
inline bool same(double a, double b) {
  return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b);
}
inline bool same(const std::string& a, const std::string& b) { return a == b; }
template <class T>
  requires std::is_integral_v<T> || std::is_enum_v<T>
bool same(T a, T b) {
  return a == b;
}
template <class T>
bool same(const std::optional<T>& a, const std::optional<T>& b) {
  return a.has_value() == b.has_value() && (!a || same(*a, *b));
}
template <class T>
bool same(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!same(a[i], b[i])) return false;
  return true;
}

}  // namespace same_arguments_detail

/// True when a and b are equal in every field of kFields (see the file comment). Members outside
/// the table are the caller's to compare.
template <const auto& kFields, class Args>
bool same_arguments(const Args& a, const Args& b) {
  bool equal = true;
  core::for_each_field(kFields, [&](const auto& f) {
    equal = equal && same_arguments_detail::same(a.*f.member, b.*f.member);
  });
  return equal;
}

}  // namespace kvflash::aclnn
