// Shared helpers of the example programs (examples/*.cpp), in the style of CANN's samples: the
// CHECK_RET / LOG_PRINT macros, device buffers and aclTensors, fp16 data as aclFloat16 (converted
// with aclFloatToFloat16 / aclFloat16ToFloat), deterministic data, and a small double-precision
// attention row that each example uses to compute its own expected output. Header-only and C++11,
// so each example builds with CANN's documented compile line (g++ -std=c++11 ...).
#ifndef KVFLASH_EXAMPLES_ATTENTION_EXAMPLE_UTIL_H_
#define KVFLASH_EXAMPLES_ATTENTION_EXAMPLE_UTIL_H_

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <vector>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "securec.h"

#define CHECK_RET(cond, return_expr) \
  do {                               \
    if (!(cond)) {                   \
      return_expr;                   \
    }                                \
  } while (0)

#define LOG_PRINT(...)     \
  do {                     \
    printf(__VA_ARGS__);   \
  } while (0)

inline int64_t GetShapeSize(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (size_t i = 0; i < shape.size(); ++i) n *= shape[i];
  return n;
}

// CANN's sample helper: device memory for hostData, copied in, and a contiguous ND aclTensor over
// it.
template <typename T>
int CreateAclTensor(const std::vector<T>& hostData, const std::vector<int64_t>& shape,
                    void** deviceAddr, aclDataType dataType, aclTensor** tensor) {
  const size_t size = static_cast<size_t>(GetShapeSize(shape)) * sizeof(T);
  auto ret = aclrtMalloc(deviceAddr, size, ACL_MEM_MALLOC_HUGE_FIRST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMalloc failed. ERROR: %d\n", ret); return ret);
  ret = aclrtMemcpy(*deviceAddr, size, hostData.data(), size, ACL_MEMCPY_HOST_TO_DEVICE);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMemcpy failed. ERROR: %d\n", ret); return ret);
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; i--) {
    strides[i] = shape[i + 1] * strides[i + 1];
  }
  *tensor = aclCreateTensor(shape.data(), shape.size(), dataType, strides.data(), 0,
                            ACL_FORMAT_ND, shape.data(), shape.size(), *deviceAddr);
  CHECK_RET(*tensor != nullptr, LOG_PRINT("aclCreateTensor failed: %s\n", aclGetRecentErrMsg());
            return 1);
  return 0;
}

// A device buffer with the aclTensor that describes it.
struct DeviceTensor {
  void* addr;
  aclTensor* tensor;
  size_t bytes;
  DeviceTensor() : addr(nullptr), tensor(nullptr), bytes(0) {}
};

template <typename T>
int CreateAclTensor(const std::vector<T>& hostData, const std::vector<int64_t>& shape,
                    aclDataType dataType, DeviceTensor* out) {
  out->bytes = static_cast<size_t>(GetShapeSize(shape)) * sizeof(T);
  return CreateAclTensor(hostData, shape, &out->addr, dataType, &out->tensor);
}

inline void DestroyDeviceTensor(DeviceTensor* t) {
  if (t->tensor != nullptr) aclDestroyTensor(t->tensor);
  if (t->addr != nullptr) aclrtFree(t->addr);
  *t = DeviceTensor();
}

// The value of x once stored as fp16 (what the operator reads).
inline double RoundToFp16(double x) {
  return aclFloat16ToFloat(aclFloatToFloat16(static_cast<float>(x)));
}

// Deterministic pseudo-random numbers (a 32-bit LCG), so every run checks the same data.
struct Lcg {
  uint32_t state;
  explicit Lcg(uint32_t seed) : state(seed) {}
  double Uniform(double lo, double hi) {
    state = state * 1664525u + 1013904223u;
    return lo + (hi - lo) * ((state >> 8) * (1.0 / 16777216.0));
  }
  // Uniform in [-1, 1), rounded to fp16.
  double Next() { return RoundToFp16(Uniform(-1.0, 1.0)); }
};

// Random values already rounded to fp16, as doubles: the expected result then uses exactly the
// numbers the operator reads.
inline std::vector<double> RandomFp16Values(Lcg* rng, int64_t n, double lo, double hi) {
  std::vector<double> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i) v[i] = RoundToFp16(rng->Uniform(lo, hi));
  return v;
}

inline std::vector<aclFloat16> ToFp16(const std::vector<double>& v) {
  std::vector<aclFloat16> h(v.size());
  for (size_t i = 0; i < v.size(); ++i) h[i] = aclFloatToFloat16(static_cast<float>(v[i]));
  return h;
}

// One attention row in double precision: scores are q.k scaled by the fp32 scale, plus an
// optional bias; `masked` positions get the score -1e12 (IncreFlashAttention's rule, so a fully
// masked row is the mean of V); a softmax over the positions (with an optional sink in the
// denominator, FusedInferAttentionScore's learnable sink), then the weighted sum of values. No
// position -> zeros and *lse = +inf; otherwise *lse (if given) = log(sum exp(score)). Operators
// that leave masked positions out altogether (FusedInferAttentionScore / PromptFlashAttention)
// pass only the visible positions.
inline std::vector<double> AttendRow(const std::vector<double>& q,
                                     const std::vector<int64_t>& positions,
                                     const std::function<double(int64_t, int64_t)>& key,
                                     const std::function<double(int64_t, int64_t)>& value,
                                     double scaleValue,
                                     const std::function<bool(int64_t)>& masked = nullptr,
                                     const std::function<double(int64_t)>& bias = nullptr,
                                     const double* sink = nullptr, double* lse = nullptr) {
  const int64_t dCount = static_cast<int64_t>(q.size());
  std::vector<double> out(q.size(), 0.0);
  const double scale = static_cast<float>(scaleValue);
  std::vector<double> score;
  std::vector<int64_t> used;
  double maxScore = -INFINITY;
  for (size_t i = 0; i < positions.size(); ++i) {
    const int64_t j = positions[i];
    double raw = 0;
    for (int64_t d = 0; d < dCount; ++d) raw += q[d] * key(j, d);
    double s = raw * scale;
    if (bias) s += bias(j);
    if (masked && masked(j)) s = -1e12;
    score.push_back(s);
    used.push_back(j);
    maxScore = std::fmax(maxScore, s);
  }
  if (used.empty()) {
    if (lse != nullptr) *lse = INFINITY;  // an empty row's LSE
    return out;
  }
  double sum = 0;
  for (size_t i = 0; i < score.size(); ++i) sum += (score[i] = std::exp(score[i] - maxScore));
  if (sink != nullptr) sum += std::exp(*sink - maxScore);
  for (size_t i = 0; i < used.size(); ++i) {
    for (int64_t d = 0; d < dCount; ++d) out[d] += score[i] / sum * value(used[i], d);
  }
  if (lse != nullptr) *lse = maxScore + std::log(sum);
  return out;
}

// fp16 output check of docs/semantics.md §0.2: |got - want| <= atol + rtol * |want|, rtol = 2^-10,
// atol = rtol * max|V| of the row. Prints the first mismatches; returns their count.
inline int CheckFp16Row(const char* what, const aclFloat16* got, const std::vector<double>& want,
                        double vAbsMax) {
  const double rtol = 1.0 / 1024;
  int bad = 0;
  for (size_t d = 0; d < want.size(); ++d) {
    const double g = aclFloat16ToFloat(got[d]);
    if (!(std::fabs(g - want[d]) <= rtol * vAbsMax + rtol * std::fabs(want[d]))) {
      if (bad++ < 5) LOG_PRINT("MISMATCH %s d=%zu: got %.6f, expected %.6f\n", what, d, g, want[d]);
    }
  }
  return bad;
}

// Softmax LSE check (fp32 output): within 1e-4 (1 + |want|); a row with nothing to attend has
// LSE +inf (FusedInferAttentionScore's rule, AttendRow's value), which must come back exactly.
// Prints the first mismatches; returns 1 on a mismatch, else 0.
inline int CheckLse(const char* what, float got, double want, int badSoFar) {
  const bool ok = std::isinf(want) ? static_cast<double>(got) == want
                                   : std::fabs(got - want) <= 1e-4 * (1.0 + std::fabs(want));
  if (ok) return 0;
  if (badSoFar < 5) LOG_PRINT("MISMATCH lse %s: got %.6f, expected %.6f\n", what, got, want);
  return 1;
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

// The 2048 x 2048 mask CANN's sparse modes 2, 3 and 4 take (1 = masked: the strict upper
// triangle), as its documents build it.
inline std::vector<uint8_t> CompressedCausalMask() {
  const int64_t n = 2048;
  std::vector<uint8_t> mask(static_cast<size_t>(n * n));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) mask[i * n + j] = j > i ? 1 : 0;
  return mask;
}

// The largest |v| of a set of values (the check's atol scale).
inline double AbsMax(const std::vector<double>& v) {
  double m = 0;
  for (size_t i = 0; i < v.size(); ++i) m = std::fmax(m, std::fabs(v[i]));
  return m;
}

#endif  // KVFLASH_EXAMPLES_ATTENTION_EXAMPLE_UTIL_H_
