// Shared helpers of the IncreFlashAttention example programs (examples/ifa_*.cpp), in the style
// of the CANN samples: device buffers and aclTensors, deterministic data, and a small
// double-precision attention loop that each example uses to compute its own expected output.
// Header-only so each example builds with the one documented compile line.
#ifndef KVFLASH_EXAMPLES_IFA_EXAMPLE_UTIL_H_
#define KVFLASH_EXAMPLES_IFA_EXAMPLE_UTIL_H_

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <vector>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "aclnn/opdev/fp16_t.h"

#define CHECK_RET(cond, return_expr) \
  do {                               \
    if (!(cond)) {                   \
      return_expr;                   \
    }                                \
  } while (0)

#define LOG_PRINT(message, ...)     \
  do {                              \
    printf(message, ##__VA_ARGS__); \
  } while (0)

inline int64_t GetShapeSize(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// A device buffer with the aclTensor that describes it (contiguous, ND).
struct DeviceTensor {
  void* addr = nullptr;
  aclTensor* tensor = nullptr;
  size_t bytes = 0;
};

template <typename T>
int CreateAclTensor(const std::vector<T>& hostData, const std::vector<int64_t>& shape,
                    aclDataType dataType, DeviceTensor* out) {
  out->bytes = static_cast<size_t>(GetShapeSize(shape)) * sizeof(T);
  auto ret = aclrtMalloc(&out->addr, out->bytes, ACL_MEM_MALLOC_HUGE_FIRST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMalloc failed. ERROR: %d\n", ret); return ret);
  ret = aclrtMemcpy(out->addr, out->bytes, hostData.data(), out->bytes, ACL_MEMCPY_HOST_TO_DEVICE);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMemcpy failed. ERROR: %d\n", ret); return ret);
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; i--) {
    strides[i] = shape[i + 1] * strides[i + 1];
  }
  out->tensor = aclCreateTensor(shape.data(), shape.size(), dataType, strides.data(), 0,
                                ACL_FORMAT_ND, shape.data(), shape.size(), out->addr);
  CHECK_RET(out->tensor != nullptr, LOG_PRINT("aclCreateTensor failed: %s\n", aclGetRecentErrMsg());
            return 1);
  return 0;
}

inline void DestroyDeviceTensor(DeviceTensor* t) {
  if (t->tensor != nullptr) aclDestroyTensor(t->tensor);
  if (t->addr != nullptr) aclrtFree(t->addr);
  *t = DeviceTensor{};
}

// Deterministic pseudo-random numbers (a 32-bit LCG), so every run checks the same data.
struct Lcg {
  uint32_t state;
  explicit Lcg(uint32_t seed) : state(seed) {}
  double Uniform(double lo, double hi) {
    state = state * 1664525u + 1013904223u;
    return lo + (hi - lo) * ((state >> 8) * (1.0 / 16777216.0));
  }
};

// Random values already rounded to fp16, as doubles: the expected result then uses exactly the
// numbers the operator reads.
inline std::vector<double> RandomFp16Values(Lcg* rng, int64_t n, double lo, double hi) {
  std::vector<double> v(static_cast<size_t>(n));
  for (auto& x : v) x = static_cast<float>(op::fp16_t(rng->Uniform(lo, hi)));
  return v;
}

inline std::vector<op::fp16_t> ToFp16(const std::vector<double>& v) {
  return std::vector<op::fp16_t>(v.begin(), v.end());
}

// One attention row in double precision, as specified for IFA: scores are q.k scaled by the fp32
// scale, plus an optional bias, masked positions replaced by -1e12, a softmax over the attended
// positions, then the weighted sum of values. No positions -> zeros.
inline std::vector<double> AttendRow(const std::vector<double>& q,
                                     const std::vector<int64_t>& positions,
                                     const std::function<double(int64_t, int64_t)>& key,
                                     const std::function<double(int64_t, int64_t)>& value,
                                     double scaleValue,
                                     const std::function<bool(int64_t)>& masked = nullptr,
                                     const std::function<double(int64_t)>& bias = nullptr) {
  const int64_t d_count = static_cast<int64_t>(q.size());
  std::vector<double> out(q.size(), 0.0);
  if (positions.empty()) return out;
  const double scale = static_cast<float>(scaleValue);
  std::vector<double> score;
  double max_score = -INFINITY;
  for (int64_t j : positions) {
    double raw = 0;
    for (int64_t d = 0; d < d_count; ++d) raw += q[d] * key(j, d);
    double s = raw * scale;
    if (bias) s += bias(j);
    if (masked && masked(j)) s = -1e12;
    score.push_back(s);
    max_score = std::fmax(max_score, s);
  }
  double sum = 0;
  for (double& s : score) sum += (s = std::exp(s - max_score));
  for (size_t i = 0; i < positions.size(); ++i) {
    for (int64_t d = 0; d < d_count; ++d) out[d] += score[i] / sum * value(positions[i], d);
  }
  return out;
}

// fp16 output check of docs/semantics.md §0.2: |got - want| <= atol + rtol * |want|, rtol = 2^-10,
// atol = rtol * max|V| of the row. Prints the first mismatches; returns their count.
inline int CheckFp16Row(const char* what, const op::fp16_t* got, const std::vector<double>& want,
                        double v_absmax) {
  const double rtol = 1.0 / 1024;
  int bad = 0;
  for (size_t d = 0; d < want.size(); ++d) {
    const double g = static_cast<float>(got[d]);
    if (!(std::fabs(g - want[d]) <= rtol * v_absmax + rtol * std::fabs(want[d]))) {
      if (bad++ < 5) LOG_PRINT("MISMATCH %s d=%zu: got %.6f, expected %.6f\n", what, d, g, want[d]);
    }
  }
  return bad;
}

// int8 output check: within 1 LSB of round-half-even(o * scale + offset), saturated.
inline int CheckInt8Row(const char* what, const int8_t* got, const std::vector<double>& o,
                        double scale, double offset) {
  int bad = 0;
  for (size_t d = 0; d < o.size(); ++d) {
    double want = std::nearbyint(o[d] * scale + offset);
    want = std::fmin(127.0, std::fmax(-128.0, want));
    if (std::fabs(got[d] - want) > 1.0) {
      if (bad++ < 5) LOG_PRINT("MISMATCH %s d=%zu: got %d, expected %.0f\n", what, d, got[d], want);
    }
  }
  return bad;
}

#endif  // KVFLASH_EXAMPLES_IFA_EXAMPLE_UTIL_H_
