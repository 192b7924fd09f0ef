// The two phases of an aclnn operator with a kvflash plan, written once over the operator's field
// table (core/fields.hpp). Phase 1 takes the parameters of the operator's newest aclnn entry
// point as a tuple in table order (they are the table's first entries), refuses a null required
// argument naming its aclnn parameter (161001), converts each into its Args member, applies the
// entry point's own rule (`check`), then plans; older entry points forward to the newest one.
// Phase 2 is the common launch. Nothing is computed here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "aclnn/acl_objects.hpp"
#include "core/error.hpp"
#include "core/fields.hpp"
#include "kvflash/status.hpp"

namespace kvflash::aclnn {

namespace acl_args_detail {

inline Status convert(const char* op, const char* name, unsigned flags, const aclTensor* t,
                      TensorView* out) {
  if (t == nullptr && (flags & core::kAclMayBeNull)) return Status::kSuccess;  // stays empty
  return tensor_view(op, name, t, out);
}
inline Status convert(const char* op, const char* name, unsigned, const aclTensor* t,
                      std::optional<TensorView>* out) {
  return optional_view(op, name, t, out);
}
inline Status convert(const char* op, const char* name, unsigned, const aclTensorList* l,
                      std::vector<TensorView>* out) {
  return tensor_list_views(op, name, l, out);
}
// One tensor as a one-element list (PromptFlashAttention's key / value are FiaArgs's lists).
inline Status convert(const char* op, const char* name, unsigned, const aclTensor* t,
                      std::vector<TensorView>* out) {
  out->assign(1, TensorView{});
  return tensor_view(op, name, t, &out->front());
}
inline Status convert(const char* op, const char* name, unsigned, const aclIntArray* a,
                      std::optional<std::vector<int64_t>>* out) {
  return optional_int_array(op, name, a, out);
}
inline Status convert(const char*, const char*, unsigned, const char* s, std::string* out) {
  *out = s;  // null was refused before
  return Status::kSuccess;
}
template <class T>
requires std::is_arithmetic_v<T> Status convert(const char*, const char*, unsigned, T value,
                                                T* out) {
  *out = value;
  return Status::kSuccess;
}

// Null is refused for a required tensor, list or string unless the table allows it.
template <class Args, class T, class A>
aclnnStatus require(const char* op, const core::Field<Args, T>& f, const A& acl) {
  if constexpr (std::is_pointer_v<A>) {
    constexpr bool required = std::is_same_v<T, TensorView> ||
                              std::is_same_v<T, std::vector<TensorView>> ||
                              std::is_same_v<T, std::string>;
    if (required && acl == nullptr && !(f.flags & core::kAclMayBeNull)) {
      return null_arg(op, f.acl_name);
    }
  }
  return ACLNN_SUCCESS;
}

// f(field, acl argument) over the pairs, in order, until one fails.
template <const auto& kFields, class Acl, class F>
aclnnStatus each_pair(const Acl& acl, F&& f) {
  aclnnStatus s = ACLNN_SUCCESS;
  [&]<size_t... I>(std::index_sequence<I...>) {
    // The && fold stops at the first failure; s holds it, so the fold's value is not needed.
    static_cast<void>((((s = f(std::get<I>(kFields), std::get<I>(acl))) == ACLNN_SUCCESS) && ...));
  }
  (std::make_index_sequence<std::tuple_size_v<Acl>>{});
  return s;
}

// True when exactly the first n fields have aclnn names.
template <const auto& kFields, size_t n>
constexpr bool acl_prefix() {
  constexpr size_t total = std::tuple_size_v<std::remove_cvref_t<decltype(kFields)>>;
  return [&]<size_t... I>(std::index_sequence<I...>) {
    return (((std::get<I>(kFields).acl_name != nullptr) == (I < n)) && ...);
  }
  (std::make_index_sequence<total>{});
}

}  // namespace acl_args_detail

/// Phase 1 (aclnn*GetWorkspaceSize): acl holds the newest entry point's parameters but the last
/// two, in table order; check(Args&) -> aclnnStatus is the entry point's own rule on the
/// converted arguments (it may also set what the entry point implies: PFA's FiaArgs::prompt).
/// *executor is null unless it succeeds; no exception leaves (361001). kSame, when given, is
/// bool(const Args&, const Args&) saying two calls are identical: the operator's plan is a
/// function of its arguments alone, and phase 1 reuses the last plan (plan_executor_reusing).
template <class Plan, const auto& kFields, auto kSame = nullptr, class... Acl, class Check>
aclnnStatus plan_phase1(const char* op, const std::tuple<Acl...>& acl, Check&& check,
                        uint64_t* workspace_size, aclOpExecutor** executor) {
  static_assert(acl_args_detail::acl_prefix<kFields, sizeof...(Acl)>(),
                "the aclnn parameters must be the field table's first entries");
  core::clear_error();
  if (executor != nullptr) *executor = nullptr;
  return c_entry(op, static_cast<aclnnStatus>(ACLNN_ERR_RUNTIME_ERROR), [&]() -> aclnnStatus {
    if (workspace_size == nullptr) return null_arg(op, "workspaceSize");
    if (executor == nullptr) return null_arg(op, "executor");
    aclnnStatus s = acl_args_detail::each_pair<kFields>(
        acl, [&](const auto& f, const auto& a) { return acl_args_detail::require(op, f, a); });
    if (s != ACLNN_SUCCESS) return s;
    using Args = typename std::remove_cvref_t<decltype(std::get<0>(kFields))>::Owner;
    Args args;
    s = acl_args_detail::each_pair<kFields>(acl, [&](const auto& f, const auto& a) {
      return to_aclnn(acl_args_detail::convert(op, f.acl_name, f.flags, a, &(args.*f.member)));
    });
    if (s == ACLNN_SUCCESS) s = check(args);
    if (s != ACLNN_SUCCESS) return s;
    if constexpr (std::is_null_pointer_v<decltype(kSame)>) {
      return plan_executor<Plan>(op, std::move(args), workspace_size, executor);
    } else {
      return plan_executor_reusing<Plan, kSame>(op, std::move(args), workspace_size, executor);
    }
  });
}

/// Phase 2 (aclnn*): the common launch; std::bad_alloc, or the std::system_error of a default
/// stream whose thread cannot start, is 361001 and the executor stays usable (launch consumes it
/// only once the work is queued).
inline aclnnStatus plan_phase2(const char* op, void* workspace, uint64_t workspace_size,
                               aclOpExecutor* executor, aclrtStream stream) {
  return c_entry(op, static_cast<aclnnStatus>(ACLNN_ERR_RUNTIME_ERROR), [&]() -> aclnnStatus {
    return launch(op, workspace, workspace_size, executor, stream);
  });
}

}  // namespace kvflash::aclnn
