#include "schema_args.hpp"

#include <c10/util/Exception.h>

#include <algorithm>

namespace kvflash::torch_ext {
namespace {

// Whether a schema argument's type can be read into a member of the kind.
bool suits(MemberKind kind, const c10::TypePtr& type) {
  const auto* opt = type->castRaw<c10::OptionalType>();
  const c10::TypePtr& t = opt ? opt->getElementType() : type;
  const auto* list = t->castRaw<c10::ListType>();
  const auto element = [&](c10::TypeKind k) { return list && list->getElementType()->kind() == k; };
  switch (kind) {
    case MemberKind::kTensor: return t->kind() == c10::TypeKind::TensorType;
    case MemberKind::kTensorList:
      return !opt && (t->kind() == c10::TypeKind::TensorType || element(c10::TypeKind::TensorType));
    case MemberKind::kIntList: return element(c10::TypeKind::IntType);
    case MemberKind::kInt: return !opt && t->kind() == c10::TypeKind::IntType;
    case MemberKind::kFloat: return !opt && t->kind() == c10::TypeKind::FloatType;
    case MemberKind::kBool: return !opt && t->kind() == c10::TypeKind::BoolType;
    // str? (npu_scatter_pa_kv_cache's cache_mode): None leaves the member at its default.
    case MemberKind::kString: return t->kind() == c10::TypeKind::StringType;
  }
  return false;
}

}  // namespace

SchemaIndex::SchemaIndex(const c10::FunctionSchema& schema, const std::vector<const char*>& fields,
                         const std::vector<MemberKind>& kinds,
                         std::initializer_list<std::string_view> extras)
    : SchemaIndex(schema, fields, kinds, std::vector<std::string_view>(extras), {}) {}

SchemaIndex::SchemaIndex(const c10::FunctionSchema& schema, const std::vector<const char*>& fields,
                         const std::vector<MemberKind>& kinds,
                         const std::vector<std::string_view>& extras,
                         const std::vector<std::pair<std::string_view, std::string_view>>& renames)
    : op_(schema.name()), field_(fields.size(), -1) {
  for (const c10::Argument& a : schema.arguments()) {
    names_.push_back(a.name());
    optional_.push_back(a.type()->kind() == c10::TypeKind::OptionalType);
  }
  // The schema argument each field is read from.
  std::vector<std::string_view> bound(fields.begin(), fields.end());
  for (const auto& [field, argument] : renames) {
    const auto it = std::find(bound.begin(), bound.end(), field);
    TORCH_CHECK(it != bound.end(), "[", op_, "] renames a field the table does not have: ", field);
    *it = argument;
  }
  for (size_t i = 0; i < fields.size(); ++i) {
    field_[i] = bound[i].empty() ? -1 : find(bound[i]);
    if (field_[i] < 0) continue;
    const c10::TypePtr& type = schema.arguments()[static_cast<size_t>(field_[i])].type();
    TORCH_CHECK(suits(kinds[i], type), "[", op_, "] the schema's argument ", bound[i], " (",
                type->str(), ") does not suit its field's member type (", fields[i], ")");
  }
  for (const std::string& name : names_) {
    const bool field = std::find(bound.begin(), bound.end(), name) != bound.end();
    const bool extra = std::find(extras.begin(), extras.end(), name) != extras.end();
    TORCH_CHECK(field || extra, "[", op_, "] the schema's argument ", name,
                " is neither a field of the operator's table nor read by its kernel");
  }
}

int SchemaIndex::find(std::string_view name) const {
  const auto it = std::find(names_.begin(), names_.end(), name);
  return it == names_.end() ? -1 : static_cast<int>(it - names_.begin());
}

int SchemaIndex::at(std::string_view name) const {
  const int i = find(name);
  TORCH_CHECK(i >= 0, "[", op_, "] the schema has no argument ", name);
  return i;
}

void read_value(const c10::IValue& v, const char* op, const char* name, TensorView* out) {
  if (!v.isNone()) *out = view_of(v.toTensor(), op, name);
}

void read_value(const c10::IValue& v, const char* op, const char* name,
                std::optional<TensorView>* out) {
  if (v.isNone() || !v.toTensor().defined()) {
    out->reset();
    return;
  }
  *out = view_of(v.toTensor(), op, name);
}

// A single tensor is named `name`, list entries name[i].
void read_value(const c10::IValue& v, const char* op, const char* name,
                std::vector<TensorView>* out) {
  out->clear();
  if (v.isTensor()) {
    out->push_back(view_of(v.toTensor(), op, name));
    return;
  }
  const auto list = v.toListRef();
  out->reserve(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    const int64_t index = list.size() == 1 ? -1 : static_cast<int64_t>(i);
    out->push_back(view_of(list[i].toTensor(), op, name, index));
  }
}

void read_value(const c10::IValue& v, const char* /*op*/, const char* /*name*/,
                std::optional<std::vector<int64_t>>* out) {
  if (v.isNone()) {
    out->reset();
    return;
  }
  *out = v.toIntVector();
}

void read_value(const c10::IValue& v, const char*, const char*, int64_t* out) { *out = v.toInt(); }
void read_value(const c10::IValue& v, const char*, const char*, double* out) {
  *out = v.toDouble();
}
void read_value(const c10::IValue& v, const char*, const char*, bool* out) { *out = v.toBool(); }
void read_value(const c10::IValue& v, const char*, const char*, std::string* out) {
  if (!v.isNone()) *out = v.toStringRef();  // None (str?) leaves the member as it is
}

void check_same_devices(const SchemaIndex& index, c10::ArrayRef<c10::IValue> in) {
  // The first argument, or the first tensor of a first list argument (npu_attention_update's).
  const bool list = in[0].isTensorList();
  TORCH_CHECK_VALUE(!list || !in[0].toListRef().empty(), "[", index.op(), "] ", index.name(0),
                    " must hold at least one tensor");
  const at::Tensor first = list ? in[0].toListRef()[0].toTensor() : in[0].toTensor();
  check_defined(first, index.op(), index.name(0));
  const c10::Device device = first.device();
  // An undefined tensor is None from Python: absent where the schema allows it, else named.
  const auto check = [&](const at::Tensor& t, size_t i) {
    if (!t.defined()) {
      TORCH_CHECK_VALUE(index.optional(i), "[", index.op(), "] ", index.name(i),
                        " is an undefined tensor");
      return;
    }
    TORCH_CHECK_VALUE(t.device() == device, "[", index.op(), "] ", index.name(i), " is on ",
                      t.device().str(), " but ", index.name(0), " is on ", device.str(),
                      ": every tensor must be on one device");
  };
  for (size_t i = list ? 0 : 1; i < in.size(); ++i) {
    if (in[i].isTensor()) {
      check(in[i].toTensor(), i);
    } else if (in[i].isTensorList()) {
      for (const c10::IValue& t : in[i].toListRef()) check(t.toTensor(), i);
    }
  }
}

}  // namespace kvflash::torch_ext
