// A boxed call's schema arguments, bound to an operator's field table (core/fields.hpp): the
// kernels of torch.ops.kvflash and torch.ops.kvflash_testing read every table field the schema
// has by its name, so an argument is declared by its table line and its schema string, not by
// kernel parameters and copies. The argument positions are looked up once per operator.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

#include <array>
#include <cstddef>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/fields.hpp"
#include "kvflash/tensor.hpp"
#include "views.hpp"

namespace kvflash::torch_ext {

/// What kind of member a field fills, for SchemaIndex's type check.
enum class MemberKind { kTensor, kTensorList, kIntList, kInt, kFloat, kBool, kString };

/// Where a schema's arguments are, by name; built once per operator from the registered schema.
class SchemaIndex {
 public:
  /// Throws c10::Error (an internal error, at the operator's first call) unless every argument is
  /// either in `fields` or in `extras` (those the kernel reads itself), and every field's type
  /// suits its member (`kinds`, parallel to `fields`).
  SchemaIndex(const c10::FunctionSchema& schema, const std::vector<const char*>& fields,
              const std::vector<MemberKind>& kinds,
              std::initializer_list<std::string_view> extras);
  /// As above, with each {field, argument} of `renames` read from that schema argument instead
  /// of the one named as the field (an empty argument name: the field is not read from the
  /// schema at all). For schemas that name a field otherwise (FIA v2's num_query_heads is
  /// FiaArgs::num_heads).
  SchemaIndex(const c10::FunctionSchema& schema, const std::vector<const char*>& fields,
              const std::vector<MemberKind>& kinds, const std::vector<std::string_view>& extras,
              const std::vector<std::pair<std::string_view, std::string_view>>& renames);

  /// The operator's name, "kvflash::npu_incre_flash_attention": the prefix of every message.
  const char* op() const { return op_.c_str(); }
  size_t num_arguments() const { return names_.size(); }
  /// The position of field i of the table, or -1 where the schema does not have it.
  int field(size_t i) const { return field_[i]; }
  /// The position of the argument `name`, or -1.
  int find(std::string_view name) const;
  /// The position of the argument `name`, which the schema must have (else c10::Error).
  int at(std::string_view name) const;
  const char* name(size_t position) const { return names_[position].c_str(); }
  /// Whether the argument at `position` may be None (a `Tensor?`, ...).
  bool optional(size_t position) const { return optional_[position]; }

 private:
  std::string op_;
  std::vector<std::string> names_;
  std::vector<bool> optional_;
  std::vector<int> field_;
};

template <class T>
constexpr MemberKind member_kind() {
  using K = MemberKind;
  if constexpr (std::is_same_v<T, std::vector<TensorView>>) return K::kTensorList;
  else if constexpr (core::kIsTensor<T>) return K::kTensor;
  else if constexpr (std::is_same_v<T, std::optional<std::vector<int64_t>>>) return K::kIntList;
  else if constexpr (std::is_same_v<T, bool>) return K::kBool;
  else if constexpr (std::is_same_v<T, int64_t>) return K::kInt;
  else if constexpr (std::is_same_v<T, double>) return K::kFloat;
  else {
    static_assert(std::is_same_v<T, std::string>, "a member type the torch binding cannot fill");
    return K::kString;
  }
}

// One stack value into one member; `name` names it in a message (a dtype kvflash has no name
// for, a device it does not run on). None leaves the member as it is: absent, or the empty view
// the library names (SFA's ropes).
void read_value(const c10::IValue& v, const char* op, const char* name, TensorView* out);
void read_value(const c10::IValue& v, const char* op, const char* name,
                std::optional<TensorView>* out);
void read_value(const c10::IValue& v, const char* op, const char* name,
                std::vector<TensorView>* out);
void read_value(const c10::IValue& v, const char* op, const char* name,
                std::optional<std::vector<int64_t>>* out);
void read_value(const c10::IValue& v, const char* op, const char* name, int64_t* out);
void read_value(const c10::IValue& v, const char* op, const char* name, double* out);
void read_value(const c10::IValue& v, const char* op, const char* name, bool* out);
void read_value(const c10::IValue& v, const char* op, const char* name, std::string* out);

/// The schema of an operator whose Args are described by kFields.
template <const auto& kFields>
class SchemaArgs {
 public:
  SchemaArgs(const c10::FunctionSchema& schema, std::initializer_list<std::string_view> extras)
      : index_(schema, names(), kinds(), extras) {}
  /// With renamed fields (SchemaIndex).
  SchemaArgs(const c10::FunctionSchema& schema, const std::vector<std::string_view>& extras,
             const std::vector<std::pair<std::string_view, std::string_view>>& renames)
      : index_(schema, names(), kinds(), extras, renames) {}

  const SchemaIndex& index() const { return index_; }
  const char* op() const { return index_.op(); }

  /// Fills every field of *args that the schema has from the call's arguments `in` (the last
  /// index().num_arguments() values of the stack), in table order.
  template <class Args>
  void read(c10::ArrayRef<c10::IValue> in, Args* args) const {
    size_t i = 0;
    core::for_each_field(kFields, [&](const auto& f) {
      const int at = index_.field(i++);
      if (at >= 0) read_value(in[static_cast<size_t>(at)], op(), f.name, &(args->*f.member));
    });
  }

 private:
  static std::vector<const char*> names() {
    std::vector<const char*> n;
    core::for_each_field(kFields, [&](const auto& f) { n.push_back(f.name); });
    return n;
  }
  static std::vector<MemberKind> kinds() {
    std::vector<MemberKind> k;
    core::for_each_field(kFields, [&](const auto& f) {
      k.push_back(member_kind<typename std::remove_cvref_t<decltype(f)>::Type>());
    });
    return k;
  }

  SchemaIndex index_;
};

/// The call's arguments on the stack (the last n values).
inline c10::ArrayRef<c10::IValue> arguments(const torch::jit::Stack& stack, size_t n) {
  return torch::jit::last(stack, n);
}

/// Throws c10::ValueError unless every tensor argument of the call is defined (or may be absent)
/// and on the first argument's device (the fake kernels check this; a real call reaches the CPU
/// kernel only with CPU tensors), naming the argument.
void check_same_devices(const SchemaIndex& index, c10::ArrayRef<c10::IValue> in);

/// Replaces the call's arguments on the stack by its results.
template <class... T>
void finish(torch::jit::Stack* stack, size_t num_arguments, T&&... results) {
  torch::jit::drop(*stack, num_arguments);
  (stack->emplace_back(std::forward<T>(results)), ...);
}

}  // namespace kvflash::torch_ext
