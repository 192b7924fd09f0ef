// aclTensor / aclTensorList / aclIntArray: creation (with the bounds checks that let operators
// trust a descriptor), destruction through registries (a dead handle is an error code, never a
// use-after-free), and conversion to kvflash views for the operator shims.
#include "aclnn/acl_objects.hpp"

#include <cstring>
#include <limits>
#include <mutex>
#include <unordered_map>

#include "aclnn/acl_backend.hpp"
#include "core/error.hpp"
#include "core/strings.hpp"

namespace kvflash::aclnn {
namespace {

// Owns every live object.
template <typename T>
class Registry {
 public:
  T* add(std::unique_ptr<T> obj) {
    T* raw = obj.get();
    std::lock_guard<std::mutex> lock(mu_);
    live_.emplace(raw, std::move(obj));
    return raw;
  }
  bool contains(const T* p) {
    std::lock_guard<std::mutex> lock(mu_);
    return live_.count(p) != 0;
  }
  std::unique_ptr<T> remove(const T* p) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = live_.find(p);
    if (it == live_.end()) return nullptr;
    std::unique_ptr<T> obj = std::move(it->second);
    live_.erase(it);
    return obj;
  }

 private:
  std::mutex mu_;
  std::unordered_map<const T*, std::unique_ptr<T>> live_;
};

// The registries are never destroyed: a static destructor of the program may still destroy its
// tensors after main (as CANN samples' cleanup guards do), and what the program never destroyed
// stays reachable until the process ends.
Registry<aclTensor>& tensors() {
  static auto* const r = new Registry<aclTensor>;
  return *r;
}
Registry<aclTensorList>& tensor_lists() {
  static auto* const r = new Registry<aclTensorList>;
  return *r;
}
Registry<aclIntArray>& int_arrays() {
  static auto* const r = new Registry<aclIntArray>;
  return *r;
}

using core::ptr_str;

std::string dims_str(const int64_t* dims, uint64_t n) {
  return core::dims_str(std::span<const int64_t>(dims, static_cast<size_t>(n)));
}

// Largest element index the view touches (offset + sum (dim-1)*stride), or -1 for an empty view;
// false on int64 overflow.
bool max_index(const int64_t* dims, const int64_t* strides, uint64_t n, int64_t offset,
               int64_t* out) {
  int64_t idx = offset;
  for (uint64_t i = 0; i < n; ++i) {
    if (dims[i] == 0) {
      *out = -1;
      return true;
    }
  }
  for (uint64_t i = 0; i < n; ++i) {
    int64_t step;
    if (__builtin_mul_overflow(dims[i] - 1, strides[i], &step) ||
        __builtin_add_overflow(idx, step, &idx))
      return false;
  }
  *out = idx;
  return true;
}

aclTensor* create_tensor(const int64_t* view_dims, uint64_t view_rank, int32_t dtype,
                         const int64_t* stride, int64_t offset, int32_t format,
                         const int64_t* storage_dims, uint64_t storage_rank, void* data) {
  auto reject = [](const std::string& why) -> aclTensor* {
    core::fail(Status::kInvalid, "aclCreateTensor", why);
    return nullptr;
  };
  if (view_rank > static_cast<uint64_t>(kMaxRank))
    return reject("viewDimsNum (" + std::to_string(view_rank) +
                  ") must be <= " + std::to_string(kMaxRank));
  if (view_rank > 0 && view_dims == nullptr)
    return reject("viewDims is null but viewDimsNum is " + std::to_string(view_rank));
  if (view_rank > 0 && stride == nullptr)
    return reject("stride is null but viewDimsNum is " + std::to_string(view_rank));
  if (storage_rank > 0 && storage_dims == nullptr)
    return reject("storageDims is null but storageDimsNum is " + std::to_string(storage_rank));
  if (offset < 0) return reject("offset (" + std::to_string(offset) + ") must be >= 0");
  for (uint64_t i = 0; i < view_rank; ++i) {
    if (view_dims[i] < 0)
      return reject("viewDims " + dims_str(view_dims, view_rank) + " has a negative dim");
    if (stride[i] < 0)
      return reject("stride " + dims_str(stride, view_rank) + " has a negative entry");
  }
  int64_t storage_numel = 1;
  for (uint64_t i = 0; i < storage_rank; ++i) {
    if (storage_dims[i] < 0)
      return reject("storageDims " + dims_str(storage_dims, storage_rank) + " has a negative dim");
    if (__builtin_mul_overflow(storage_numel, storage_dims[i], &storage_numel))
      return reject("storageDims " + dims_str(storage_dims, storage_rank) + " overflow int64");
  }
  int64_t last = 0;
  if (!max_index(view_dims, stride, view_rank, offset, &last))
    return reject("the view (dims " + dims_str(view_dims, view_rank) + ", stride " +
                  dims_str(stride, view_rank) + ") overflows int64");
  // The storage dims say how big the buffer is; a view reaching past them would make operators
  // read or write outside it. Without storage dims the view itself is the only description.
  if (storage_rank > 0 && last >= storage_numel)
    return reject("the view (dims " + dims_str(view_dims, view_rank) + ", stride " +
                  dims_str(stride, view_rank) + ", offset " + std::to_string(offset) +
                  ") reaches element " + std::to_string(last) + " but storageDims " +
                  dims_str(storage_dims, storage_rank) + " hold " + std::to_string(storage_numel));
  if (last >= 0 && data == nullptr) return reject("tensorData is null for a non-empty view");

  auto t = std::make_unique<aclTensor>();
  t->view.data = data;
  t->view.dtype = static_cast<DType>(dtype);
  t->view.rank = static_cast<int>(view_rank);
  for (uint64_t i = 0; i < view_rank; ++i) {
    t->view.shape[i] = view_dims[i];
    t->view.strides[i] = stride[i];
  }
  t->view.offset = offset;
  // The runtime's memory: host memory on the CPU runtime, the current CUDA device's on the CUDA
  // runtime (so the operators' plans pick their CUDA backend entries).
  t->view.device = acl_tensor_device();
  t->acl_dtype = dtype;
  t->format = format;
  t->storage_dims.assign(storage_dims, storage_dims + storage_rank);
  return tensors().add(std::move(t));
}

}  // namespace

bool is_live(const aclTensor* t) { return tensors().contains(t); }
bool is_live(const aclTensorList* l) { return tensor_lists().contains(l); }
bool is_live(const aclIntArray* a) { return int_arrays().contains(a); }

aclnnStatus null_arg(const char* op, const char* arg) {
  return to_aclnn(core::fail(Status::kNullPtr, op, std::string(arg) + " must not be null"));
}

aclnnStatus refuse_fp32_output(const char* op, const char* arg, const TensorView& out,
                               const char* upstream) {
  if (out.dtype != DType::kFloat32) return ACLNN_SUCCESS;
  return to_aclnn(core::fail(Status::kInvalid, op,
                             std::string(arg) + " dtype fp32 is not supported; expected " +
                                 upstream));
}

namespace {

// Shared by tensors reached directly and through a list (list copies are not in the registry).
Status convert(const char* op, const std::string& arg, const aclTensor& t, TensorView* out) {
  if (!dtype_is_known(t.view.dtype))
    return core::fail(Status::kInvalid, op,
                      arg + " dtype (aclDataType " + std::to_string(t.acl_dtype) +
                          ") is not supported (fp16, bf16, fp32, int8, uint8, bool, int32, int64)");
  *out = t.view;
  return Status::kSuccess;
}

}  // namespace

Status tensor_view(const char* op, const char* arg, const aclTensor* t, TensorView* out) {
  if (t == nullptr) return core::fail(Status::kNullPtr, op, std::string(arg) + " must not be null");
  if (!is_live(t))
    return core::fail(Status::kInvalid, op,
                      std::string(arg) + " (" + ptr_str(t) + ") is not a live aclTensor");
  return convert(op, arg, *t, out);
}

Status optional_view(const char* op, const char* arg, const aclTensor* t,
                     std::optional<TensorView>* out) {
  out->reset();
  if (t == nullptr) return Status::kSuccess;
  TensorView v;
  KVFLASH_RETURN_IF_ERROR(tensor_view(op, arg, t, &v));
  *out = v;
  return Status::kSuccess;
}

Status tensor_list_views(const char* op, const char* arg, const aclTensorList* l,
                         std::vector<TensorView>* out) {
  out->clear();
  if (l == nullptr) return core::fail(Status::kNullPtr, op, std::string(arg) + " must not be null");
  if (!is_live(l))
    return core::fail(Status::kInvalid, op,
                      std::string(arg) + " (" + ptr_str(l) + ") is not a live aclTensorList");
  for (size_t i = 0; i < l->tensors.size(); ++i) {
    const std::string name = std::string(arg) + "[" + std::to_string(i) + "]";
    if (!l->tensors[i]) return core::fail(Status::kNullPtr, op, name + " must not be null");
    TensorView v;
    KVFLASH_RETURN_IF_ERROR(convert(op, name, *l->tensors[i], &v));
    out->push_back(v);
  }
  return Status::kSuccess;
}

Status optional_int_array(const char* op, const char* arg, const aclIntArray* a,
                          std::optional<std::vector<int64_t>>* out) {
  out->reset();
  if (a == nullptr) return Status::kSuccess;
  if (!is_live(a))
    return core::fail(Status::kInvalid, op,
                      std::string(arg) + " (" + ptr_str(a) + ") is not a live aclIntArray");
  *out = a->values;
  return Status::kSuccess;
}

}  // namespace kvflash::aclnn

using namespace kvflash::aclnn;  // NOLINT: thin C entry points

extern "C" {

aclTensor* aclCreateTensor(const int64_t* viewDims, uint64_t viewDimsNum, aclDataType dataType,
                           const int64_t* stride, int64_t offset, aclFormat format,
                           const int64_t* storageDims, uint64_t storageDimsNum, void* tensorData) {
  return c_entry("aclCreateTensor", static_cast<aclTensor*>(nullptr), [&]() -> aclTensor* {
    try {
      return create_tensor(viewDims, viewDimsNum, raw_enum(dataType), stride, offset,
                           raw_enum(format), storageDims, storageDimsNum, tensorData);
    } catch (const std::bad_alloc&) {
      kvflash::core::fail(kvflash::Status::kRuntime, "aclCreateTensor", "out of memory");
      return nullptr;
    }
  });
}

aclTensorList* aclCreateTensorList(const aclTensor* const* value, uint64_t size) {
  return c_entry(
      "aclCreateTensorList", static_cast<aclTensorList*>(nullptr), [&]() -> aclTensorList* {
        if (size > 0 && value == nullptr) {
          kvflash::core::fail(kvflash::Status::kNullPtr, "aclCreateTensorList",
                              "value is null but size is " + std::to_string(size));
          return nullptr;
        }
        try {
          auto list = std::make_unique<aclTensorList>();
          list->tensors.reserve(size);
          for (uint64_t i = 0; i < size; ++i) {
            if (value[i] != nullptr && !is_live(value[i])) {
              kvflash::core::fail(kvflash::Status::kInvalid, "aclCreateTensorList",
                                  "value[" + std::to_string(i) + "] is not a live aclTensor");
              return nullptr;
            }
            list->tensors.push_back(value[i] ? std::make_unique<aclTensor>(*value[i]) : nullptr);
          }
          return tensor_lists().add(std::move(list));
        } catch (const std::bad_alloc&) {
          kvflash::core::fail(kvflash::Status::kRuntime, "aclCreateTensorList", "out of memory");
          return nullptr;
        }
      });
}

aclIntArray* aclCreateIntArray(const int64_t* value, uint64_t size) {
  return c_entry("aclCreateIntArray", static_cast<aclIntArray*>(nullptr), [&]() -> aclIntArray* {
    if (size > 0 && value == nullptr) {
      kvflash::core::fail(kvflash::Status::kNullPtr, "aclCreateIntArray",
                          "value is null but size is " + std::to_string(size));
      return nullptr;
    }
    try {
      auto array = std::make_unique<aclIntArray>();
      array->values.assign(value, value + size);
      return int_arrays().add(std::move(array));
    } catch (const std::bad_alloc&) {
      kvflash::core::fail(kvflash::Status::kRuntime, "aclCreateIntArray", "out of memory");
      return nullptr;
    }
  });
}

aclnnStatus aclDestroyTensor(const aclTensor* tensor) {
  return c_entry("aclDestroyTensor", static_cast<aclnnStatus>(ACLNN_ERR_RUNTIME_ERROR),
                 [&]() -> aclnnStatus {
                   if (tensor == nullptr) return ACLNN_SUCCESS;
                   if (!tensors().remove(tensor))
                     return to_aclnn(
                         kvflash::core::fail(kvflash::Status::kInvalid, "aclDestroyTensor",
                                             ptr_str(tensor) + " is not a live aclTensor"));
                   return ACLNN_SUCCESS;
                 });
}

aclnnStatus aclDestroyTensorList(const aclTensorList* array) {
  return c_entry("aclDestroyTensorList", static_cast<aclnnStatus>(ACLNN_ERR_RUNTIME_ERROR),
                 [&]() -> aclnnStatus {
                   if (array == nullptr) return ACLNN_SUCCESS;
                   if (!tensor_lists().remove(array))
                     return to_aclnn(
                         kvflash::core::fail(kvflash::Status::kInvalid, "aclDestroyTensorList",
                                             ptr_str(array) + " is not a live aclTensorList"));
                   return ACLNN_SUCCESS;
                 });
}

aclnnStatus aclDestroyIntArray(const aclIntArray* array) {
  return c_entry("aclDestroyIntArray", static_cast<aclnnStatus>(ACLNN_ERR_RUNTIME_ERROR),
                 [&]() -> aclnnStatus {
                   if (array == nullptr) return ACLNN_SUCCESS;
                   if (!int_arrays().remove(array))
                     return to_aclnn(
                         kvflash::core::fail(kvflash::Status::kInvalid, "aclDestroyIntArray",
                                             ptr_str(array) + " is not a live aclIntArray"));
                   return ACLNN_SUCCESS;
                 });
}

aclnnStatus aclGetDataType(const aclTensor* tensor, aclDataType* dataType) {
  return c_entry(
      "aclGetDataType", static_cast<aclnnStatus>(ACLNN_ERR_RUNTIME_ERROR), [&]() -> aclnnStatus {
        if (tensor == nullptr || dataType == nullptr)
          return null_arg("aclGetDataType", tensor ? "dataType" : "tensor");
        if (!is_live(tensor))
          return to_aclnn(kvflash::core::fail(kvflash::Status::kInvalid, "aclGetDataType",
                                              "tensor is not a live aclTensor"));
        std::memcpy(dataType, &tensor->acl_dtype, sizeof(int32_t));  // any int, as given
        return ACLNN_SUCCESS;
      });
}

aclnnStatus aclGetFormat(const aclTensor* tensor, aclFormat* format) {
  return c_entry(
      "aclGetFormat", static_cast<aclnnStatus>(ACLNN_ERR_RUNTIME_ERROR), [&]() -> aclnnStatus {
        if (tensor == nullptr || format == nullptr)
          return null_arg("aclGetFormat", tensor ? "format" : "tensor");
        if (!is_live(tensor))
          return to_aclnn(kvflash::core::fail(kvflash::Status::kInvalid, "aclGetFormat",
                                              "tensor is not a live aclTensor"));
        std::memcpy(format, &tensor->format, sizeof(int32_t));
        return ACLNN_SUCCESS;
      });
}

aclnnStatus aclGetTensorListSize(const aclTensorList* tensorList, uint64_t* size) {
  return c_entry("aclGetTensorListSize", static_cast<aclnnStatus>(ACLNN_ERR_RUNTIME_ERROR),
                 [&]() -> aclnnStatus {
                   if (tensorList == nullptr || size == nullptr)
                     return null_arg("aclGetTensorListSize", tensorList ? "size" : "tensorList");
                   if (!is_live(tensorList))
                     return to_aclnn(kvflash::core::fail(kvflash::Status::kInvalid,
                                                         "aclGetTensorListSize",
                                                         "tensorList is not a live aclTensorList"));
                   *size = tensorList->tensors.size();
                   return ACLNN_SUCCESS;
                 });
}

aclnnStatus aclGetIntArraySize(const aclIntArray* array, uint64_t* size) {
  return c_entry(
      "aclGetIntArraySize", static_cast<aclnnStatus>(ACLNN_ERR_RUNTIME_ERROR),
      [&]() -> aclnnStatus {
        if (array == nullptr || size == nullptr)
          return null_arg("aclGetIntArraySize", array ? "size" : "array");
        if (!is_live(array))
          return to_aclnn(kvflash::core::fail(kvflash::Status::kInvalid, "aclGetIntArraySize",
                                              "array is not a live aclIntArray"));
        *size = array->values.size();
        return ACLNN_SUCCESS;
      });
}

}  // extern "C"
