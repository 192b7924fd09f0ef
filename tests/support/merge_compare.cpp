#include "support/merge_compare.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <sstream>

#include "core/half.hpp"
#include "support/compare.hpp"  // nonfinite_aware_pass, ifa_rtol

namespace kvflash::testing {

::testing::AssertionResult compare_merge_output(const std::string& case_name, const MergeArgs& args,
                                                const reference::MergeReference& ref) {
  const DType dt = args.out.dtype;
  const double rtol = ifa_rtol(dt);
  int64_t bad = 0;
  double worst_excess = -1.0;
  std::string worst;
  auto check = [&](double got, double want, double bound, bool exact, const std::string& what) {
    const double err = std::fabs(got - want);
    const bool ok = exact ? (got == want || (std::isnan(got) && std::isnan(want)))
                          : nonfinite_aware_pass(got, want, err <= bound);
    if (ok) return;
    ++bad;
    const double excess = std::isnan(err) ? 1e300 : err - bound;
    if (excess > worst_excess) {
      worst_excess = excess;
      std::ostringstream m;
      m << what << " = " << got << ", want " << want << " (bound " << bound << ")";
      worst = m.str();
    }
  };
  // Outputs are read by memcpy: the fuzz target places them at any byte address.
  const auto f32 = [](const void* base, int64_t i) {
    float x;
    std::memcpy(&x, static_cast<const std::byte*>(base) + i * int64_t{sizeof(float)}, sizeof(x));
    return x;
  };
  const auto u16 = [](const void* base, int64_t i) {
    uint16_t x;
    std::memcpy(&x, static_cast<const std::byte*>(base) + i * int64_t{sizeof(x)}, sizeof(x));
    return x;
  };
  const void* out = args.out.base();
  for (int64_t r = 0; r < ref.num_rows; ++r) {
    const bool live = ref.nonempty[r];
    const double atol = rtol * ref.out_absmax[r];
    for (int64_t d = 0; d < ref.head_dim; ++d) {
      const int64_t i = r * ref.head_dim + d;
      double got;
      if (dt == DType::kFloat32) {
        got = f32(out, i);
      } else {
        const uint16_t h = u16(out, i);
        got = dt == DType::kBFloat16 ? core::bf16_to_float(h) : core::fp16_to_float(h);
      }
      const double want = ref.out[i];
      check(got, want, atol + rtol * std::fabs(want), !live,
            "out(row " + std::to_string(r) + ", d " + std::to_string(d) + ")");
    }
    if (args.out_lse) {
      const double got = f32(args.out_lse->base(), r);
      check(got, ref.lse[r], 0x1p-10 + 0x1p-16 * std::fabs(ref.lse[r]), !live,
            "lse(row " + std::to_string(r) + ")");
    }
    if (args.out_max) {
      const double got_m = f32(args.out_max->base(), r);
      const double got_s = f32(args.out_sum->base(), r);
      check(got_m, ref.max[r], 0.0, true, "max(row " + std::to_string(r) + ")");
      check(got_s, ref.sum[r], 0x1p-16 * std::fabs(ref.sum[r]), !live,
            "sum(row " + std::to_string(r) + ")");
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << case_name << ": " << bad << " values out of tolerance; "
                                       << "worst: " << worst;
}

}  // namespace kvflash::testing
