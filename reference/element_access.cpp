#include "element_access.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/half.hpp"

namespace kvflash::reference {

int64_t element_at(const TensorView& v, std::initializer_list<int64_t> idx) {
  int64_t e = v.offset;
  int k = 0;
  for (int64_t i : idx) e += i * v.strides[k++];
  return e;
}

int64_t element_at_flat(const TensorView& v, int64_t flat) {
  int64_t e = v.offset;
  for (int k = v.rank - 1; k >= 0; --k) {
    const int64_t n = std::max<int64_t>(v.shape[k], 1);
    e += (flat % n) * v.strides[k];
    flat /= n;
  }
  return e;
}

double load_element(const TensorView& v, int64_t elem) {
  const char* p =
      static_cast<const char*>(v.data) + elem * static_cast<int64_t>(dtype_size(v.dtype));
  switch (v.dtype) {
    case DType::kFloat16:
    case DType::kBFloat16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return v.dtype == DType::kFloat16 ? core::fp16_to_float(h) : core::bf16_to_float(h);
    }
    case DType::kFloat32: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    case DType::kInt8:
      return static_cast<int8_t>(*p);
    case DType::kUInt8:
    case DType::kBool:
      return static_cast<uint8_t>(*p);
    case DType::kInt32: {
      int32_t i;
      std::memcpy(&i, p, 4);
      return i;
    }
    case DType::kInt64: {
      int64_t i;
      std::memcpy(&i, p, 8);
      return static_cast<double>(i);
    }
  }
  return std::numeric_limits<double>::quiet_NaN();
}

namespace {

// x saturated to [lo, hi] and truncated toward zero; NaN stores 0 (a cast of NaN is undefined).
template <typename Int>
Int saturate(double x) {
  if (std::isnan(x)) return 0;
  constexpr double lo = static_cast<double>(std::numeric_limits<Int>::min());
  // The largest double below 2^63 for int64 (INT64_MAX itself is not representable).
  constexpr double hi = sizeof(Int) == 8 ? 9223372036854774784.0
                                         : static_cast<double>(std::numeric_limits<Int>::max());
  return static_cast<Int>(std::clamp(x, lo, hi));
}

}  // namespace

void store_element(const TensorView& v, int64_t elem, double x) {
  char* p = static_cast<char*>(v.data) + elem * static_cast<int64_t>(dtype_size(v.dtype));
  switch (v.dtype) {
    case DType::kFloat32: {
      const float f = static_cast<float>(x);
      std::memcpy(p, &f, 4);
      break;
    }
    case DType::kFloat16:
    case DType::kBFloat16: {
      const float f = static_cast<float>(x);
      const uint16_t h =
          v.dtype == DType::kFloat16 ? core::float_to_fp16(f) : core::float_to_bf16(f);
      std::memcpy(p, &h, 2);
      break;
    }
    case DType::kInt8:
      *p = static_cast<char>(saturate<int8_t>(x));
      break;
    case DType::kUInt8:
    case DType::kBool:
      *p = static_cast<char>(saturate<uint8_t>(x));
      break;
    case DType::kInt32: {
      const int32_t i = saturate<int32_t>(x);
      std::memcpy(p, &i, 4);
      break;
    }
    case DType::kInt64: {
      const int64_t i = saturate<int64_t>(x);
      std::memcpy(p, &i, 8);
      break;
    }
  }
}

}  // namespace kvflash::reference
