// A C++ program against an installed kvflash, through the C++ API only (kvflash/*.hpp and the
// opdev fp16 type): built by the find_package consumer (tests/aclnn/find_package_consumer, which
// does not set a C++ standard: the exported target must bring C++20) and through pkg-config.
// One small IFA call checked against a direct computation, a refused call, the version and the
// thread setting. Exit 0 on success.
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include "aclnn/opdev/fp16_t.h"
#include "kvflash/ifa.hpp"
#include "kvflash/version.h"

static_assert(__cplusplus >= 202002L, "kvflash's C++ API needs C++20");

#define EXPECT(cond)                                                                               \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      std::printf("FAILED at line %d: %s (%s)\n", __LINE__, #cond, kvflash::last_error_message()); \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

int main() {
  using kvflash::DType;
  using kvflash::TensorView;
  EXPECT(std::strcmp(kvflash_version(), KVFLASH_VERSION_STRING) == 0);
  std::printf("kvflash %s (headers %d.%d.%d)\n", kvflash_version(), KVFLASH_VERSION_MAJOR,
              KVFLASH_VERSION_MINOR, KVFLASH_VERSION_PATCH);

  // BSH fp16, B = 1, N = 2 query heads sharing 1 KV head, D = 8, S = 5.
  constexpr int64_t kN = 2, kD = 8, kS = 5;
  std::vector<op::fp16_t> q(kN * kD), k(kS * kD), v(kS * kD), out(kN * kD);
  for (int64_t i = 0; i < kN * kD; ++i) q[i] = 0.125 * static_cast<double>(i % 7) - 0.25;
  for (int64_t i = 0; i < kS * kD; ++i) {
    k[i] = 0.0625 * static_cast<double>(i % 11) - 0.3;
    v[i] = 0.5 * static_cast<double>(i % 5) - 1.0;
  }
  const std::array<int64_t, 3> q_shape{1, 1, kN * kD}, kv_shape{1, kS, kD};
  kvflash::IfaArgs args;
  args.query = TensorView::contiguous(q.data(), DType::kFloat16, std::span(q_shape));
  args.key = {TensorView::contiguous(k.data(), DType::kFloat16, std::span(kv_shape))};
  args.value = {TensorView::contiguous(v.data(), DType::kFloat16, std::span(kv_shape))};
  args.attention_out = TensorView::contiguous(out.data(), DType::kFloat16, std::span(q_shape));
  args.num_heads = kN;
  args.num_key_value_heads = 1;
  args.scale_value = 1.0 / std::sqrt(static_cast<double>(kD));
  EXPECT(args.query.describe() == "fp16[1,1,16]");

  std::unique_ptr<kvflash::IfaPlan> plan;
  EXPECT(kvflash::IfaPlan::create(args, &plan) == kvflash::Status::kSuccess);
  std::vector<std::byte> ws(plan->workspace_size());
  EXPECT(plan->run(args, ws.data(), ws.size()) == kvflash::Status::kSuccess);

  for (int64_t n = 0; n < kN; ++n) {
    double s[kS], m = -INFINITY, sum = 0;
    for (int64_t j = 0; j < kS; ++j) {
      s[j] = 0;
      for (int64_t d = 0; d < kD; ++d) s[j] += double(float(q[n * kD + d])) * float(k[j * kD + d]);
      s[j] *= args.scale_value;
      m = std::fmax(m, s[j]);
    }
    for (int64_t j = 0; j < kS; ++j) sum += std::exp(s[j] - m);
    for (int64_t d = 0; d < kD; ++d) {
      double o = 0;
      for (int64_t j = 0; j < kS; ++j) o += std::exp(s[j] - m) / sum * float(v[j * kD + d]);
      const double got = float(out[n * kD + d]);
      if (std::fabs(got - o) > 2e-2 * (1 + std::fabs(o))) {
        std::printf("FAILED: out[%lld][%lld] = %g, expected %g\n", static_cast<long long>(n),
                    static_cast<long long>(d), got, o);
        return 1;
      }
    }
  }

  // A refused call says why.
  kvflash::IfaArgs bad = args;
  bad.num_heads = 3;
  EXPECT(kvflash::incre_flash_attention(bad) == kvflash::Status::kInvalid);
  EXPECT(std::strlen(kvflash::last_error_message()) > 0);
  EXPECT(std::strcmp(kvflash::last_error_message(), kvflash_last_error_message()) == 0);

  kvflash::set_num_threads(1);
  EXPECT(kvflash::get_num_threads() == 1);
  kvflash::set_num_threads(0);
  EXPECT(kvflash::dtype_size(DType::kBFloat16) == 2 && kvflash::dtype_is_known(DType::kInt8));
  std::printf("cpp_consumer: PASS\n");
  return 0;
}
