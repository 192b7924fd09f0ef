#include "kvflash/tensor.hpp"

#include <algorithm>
#include <limits>

#include "core/view_check.hpp"

namespace kvflash {

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return 4;
    case DType::kFloat16:
      return 2;
    case DType::kBFloat16:
      return 2;
    case DType::kInt8:
      return 1;
    case DType::kUInt8:
      return 1;
    case DType::kBool:
      return 1;
    case DType::kInt32:
      return 4;
    case DType::kInt64:
      return 8;
  }
  return 0;
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return "fp32";
    case DType::kFloat16:
      return "fp16";
    case DType::kBFloat16:
      return "bf16";
    case DType::kInt8:
      return "int8";
    case DType::kUInt8:
      return "uint8";
    case DType::kBool:
      return "bool";
    case DType::kInt32:
      return "int32";
    case DType::kInt64:
      return "int64";
  }
  return "unknown";
}

bool dtype_is_known(DType dtype) { return dtype_size(dtype) != 0; }

std::string device_name(Device device) {
  switch (device.type) {
    case DeviceType::kHost:
      return "cpu";
    case DeviceType::kCuda:
      return "cuda:" + std::to_string(device.index);
  }
  return "unknown device " + std::to_string(static_cast<int>(device.type));
}

TensorView TensorView::contiguous(void* data, DType dtype, std::span<const int64_t> shape) {
  TensorView v;
  v.data = data;
  v.dtype = dtype;
  v.rank = static_cast<int>(std::min<size_t>(shape.size(), kMaxRank));
  int64_t stride = 1;
  for (int i = v.rank - 1; i >= 0; --i) {
    v.shape[i] = shape[i];
    v.strides[i] = stride;
    stride *= std::max<int64_t>(shape[i], 1);
  }
  return v;
}

// These take any field values (they run on unvalidated views, in messages too): dims beyond
// kMaxRank are never read, and products never overflow.
int64_t TensorView::numel() const {
  const int r = std::clamp(rank, 0, kMaxRank);
  for (int i = 0; i < r; ++i) {
    if (shape[i] == 0) return 0;
  }
  int64_t n = 1;
  for (int i = 0; i < r; ++i) {
    if (shape[i] < 0 || __builtin_mul_overflow(n, shape[i], &n))
      return std::numeric_limits<int64_t>::max();
  }
  return n;
}

bool TensorView::is_contiguous() const {
  if (offset != 0 || rank < 0 || rank > kMaxRank) return false;
  int64_t expected = 1;
  for (int i = rank - 1; i >= 0; --i) {
    if (shape[i] != 1 && strides[i] != expected) return false;
    if (shape[i] < 0 || __builtin_mul_overflow(expected, shape[i], &expected)) return false;
  }
  return true;
}

std::string TensorView::describe() const {
  return dtype_name(dtype) + core::dims_str(*this);
}

}  // namespace kvflash
