// An operator's arguments, declared once: a table with one entry per member of its public Args
// struct (name, aclnn parameter name, member pointer), in the order of the newest aclnn entry
// point's parameters. The plan (core/plan_fields.hpp: strip_data, check_matches_plan, the
// fingerprint) and the aclnn entry points (aclnn/acl_args.hpp) iterate it, so a new argument is
// one line of the table. Header-only, over the public types.
#pragma once

#include <cstddef>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/view_check.hpp"
#include "kvflash/status.hpp"
#include "kvflash/tensor.hpp"

namespace kvflash::core {

enum FieldFlags : unsigned {
  kNoFlags = 0,
  /// An optional tensor the operator's plan may drop from its metadata when it ignores it (IFA's
  /// inactive kv_padding_size, SFA's softmax outputs without return_softmax_lse): runs are
  /// matched against it only when the plan kept it.
  kMatchIfPlanHas = 1u << 0,
  /// A required tensor that the aclnn entry point may receive as null: its view stays empty and
  /// the validator names it (SFA's query_rope / key_rope, required by attention_mode 2 only).
  kAclMayBeNull = 1u << 1,
};

/// One argument: `name` is the C++ member's (and the PyTorch schema's) name, used in every
/// message; `acl_name` the aclnn parameter's, or nullptr for a kvflash extension that aclnn does
/// not have.
template <class Args, class T>
struct Field {
  using Owner = Args;
  using Type = T;
  const char* name;
  const char* acl_name;
  T Args::*member;
  unsigned flags;
};

template <class Args, class T>
constexpr Field<Args, T> field(const char* name, const char* acl_name, T Args::*member,
                               unsigned flags = kNoFlags) {
  return {name, acl_name, member, flags};
}

/// What kind of argument a member type is.
template <class T>
inline constexpr bool kIsTensor =
    std::is_same_v<T, TensorView> || std::is_same_v<T, std::optional<TensorView>> ||
    std::is_same_v<T, std::vector<TensorView>>;

/// Calls f(field) for every field of the table, in order.
template <class Fields, class F>
constexpr void for_each_field(const Fields& fields, F&& f) {
  std::apply([&](const auto&... fld) { (f(fld), ...); }, fields);
}

/// Calls f(field) (returning Status) in table order until one fails; returns that status.
template <class Fields, class F>
Status first_failure(const Fields& fields, F&& f) {
  Status s = Status::kSuccess;
  // The && fold stops at the first failure; s holds it, so the fold's value is not needed.
  std::apply(
      [&](const auto&... fld) { static_cast<void>((((s = f(fld)) == Status::kSuccess) && ...)); },
      fields);
  return s;
}

/// Calls f(view, name) (returning Status) for every tensor of args in table order until one
/// fails: each required view, each present optional one, each entry of a list (named by its
/// field). Args may be const (f takes const TensorView&) or not (f may change the views).
template <class Fields, class Args, class F>
Status for_each_view(const Fields& fields, Args& args, F&& f) {
  return first_failure(fields, [&](const auto& fld) -> Status {
    auto& v = args.*fld.member;
    using T = std::remove_cvref_t<decltype(v)>;
    if constexpr (std::is_same_v<T, TensorView>) {
      return f(v, fld.name);
    } else if constexpr (std::is_same_v<T, std::optional<TensorView>>) {
      return v ? f(*v, fld.name) : Status::kSuccess;
    } else if constexpr (std::is_same_v<T, std::vector<TensorView>>) {
      for (auto& e : v) {
        if (const Status s = f(e, fld.name); s != Status::kSuccess) return s;
      }
      return Status::kSuccess;
    } else {
      return Status::kSuccess;  // an attribute
    }
  });
}

/// A copy of args with canonical strides (canonical_strides) on every view of the table: what
/// each operator's validator checks, so that an extent of 1 never makes a stride matter.
template <class Fields, class Args>
Args with_canonical_strides(const Fields& fields, const Args& args) {
  Args a = args;
  for_each_view(fields, a, [](TensorView& v, const char*) {
    v = canonical_strides(v);
    return Status::kSuccess;
  });
  return a;
}

}  // namespace kvflash::core
