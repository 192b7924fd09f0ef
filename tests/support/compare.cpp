#include "support/compare.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <set>
#include <sstream>

#include "core/half.hpp"
#include "support/elements.hpp"

namespace kvflash::testing {
namespace {

// LSE tolerance: the kernels' fp32 scores and log carry a few ulp of the score magnitude.
constexpr double kLseAtol = 0x1p-10;
constexpr double kLseRtol = 0x1p-16;
// A non-flagged case fails when fewer than this fraction of its reference outputs are informative.
constexpr double kMinInformative = 0.5;

int64_t out_elem(const IfaArgs& a, int64_t b, int64_t h, int64_t d, int64_t D) {
  const TensorView& o = a.attention_out;
  if (a.input_layout == "BSH") return o.offset + b * o.strides[0] + (h * D + d) * o.strides[2];
  if (a.input_layout == "BSND")
    return o.offset + b * o.strides[0] + h * o.strides[2] + d * o.strides[3];
  return o.offset + b * o.strides[0] + h * o.strides[1] + d * o.strides[3];
}

}  // namespace

bool nonfinite_aware_pass(double got, double want, bool within_tolerance) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return within_tolerance;  // false when got is NaN or infinite (the difference is not finite)
}

double ifa_rtol(DType out_dtype) {
  switch (out_dtype) {
    case DType::kFloat16:
      return 0x1p-10;
    case DType::kBFloat16:
      return 0x1p-7;
    case DType::kFloat32:
      return 0x1p-16;
    default:
      return 0.0;
  }
}

::testing::AssertionResult compare_ifa_output(const std::string& case_name, const IfaArgs& args,
                                              const reference::IfaReference& ref,
                                              const IfaCompareOptions& options) {
  const int64_t B = ref.batch, N = ref.num_heads, D = ref.head_dim;
  const bool int8_out = ref.out_dtype == DType::kInt8;
  const double rtol = ifa_rtol(ref.out_dtype);
  std::ostringstream msg;
  msg.precision(9);
  bool ok = true;

  // ---- the case must not be vacuous ----
  int64_t informative = 0;
  std::set<double> int8_values;
  for (int64_t i = 0; i < B * N * D; ++i) {
    if (ref.attention[i] != 0.0) ++informative;
    if (int8_out && int8_values.size() < 3) int8_values.insert(ref.rounded[i]);
  }
  if (!options.allow_mostly_empty) {
    const double frac = static_cast<double>(informative) / static_cast<double>(B * N * D);
    if (frac < kMinInformative) {
      ok = false;
      msg << "[" << case_name << "] the reference output is almost all zero (" << informative
          << " of " << B * N * D << " elements nonzero): the case proves nothing\n";
    }
    if (int8_out && int8_values.size() < 3) {
      ok = false;
      msg << "[" << case_name << "] the int8 reference output takes fewer than 3 distinct values\n";
    }
  }

  // ---- every output element ----
  int64_t failures = 0;
  double worst_ratio = -1.0;
  int64_t wb = 0, wh = 0, wd = 0;
  double w_got = 0, w_want = 0, w_bound = 0;
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < N; ++h) {
      const int64_t row = ref.row(b, h);
      const bool attends_nothing = std::isinf(ref.lse[row]) && ref.lse[row] < 0;
      for (int64_t d = 0; d < D; ++d) {
        const int64_t i = ref.index(b, h, d);
        const double got = load_element(args.attention_out, out_elem(args, b, h, d, D));
        double want, bound;
        if (int8_out) {
          want = ref.rounded[i];
          // A NaN element is exactly 0 (int8 cannot hold NaN; docs/conventions.md).
          bound = attends_nothing || std::isnan(ref.expected[i]) ? 0.0 : 1.0;
        } else {
          want = ref.expected[i];
          bound = rtol * ref.v_absmax[row] + rtol * std::fabs(want);
        }
        const double diff = std::fabs(got - want);
        const bool pass = nonfinite_aware_pass(got, want, diff <= bound);
        if (!pass) ++failures;
        const double ratio = !pass ? (bound > 0 && std::isfinite(diff) ? diff / bound : 1e300)
                                   : (bound > 0 ? diff / bound : 0.0);
        if (ratio > worst_ratio) {
          worst_ratio = ratio;
          wb = b, wh = h, wd = d;
          w_got = got, w_want = want, w_bound = bound;
        }
      }
    }
  }
  if (options.worst != nullptr) *options.worst = worst_ratio;
  if (std::getenv("KVFLASH_TEST_VERBOSE") != nullptr) {
    // Margin report, to see how far below the bound the kernels are (and tighten it when they
    // allow).
    std::printf("[compare] %s worst |diff|/bound %.4g at (b=%lld, h=%lld, d=%lld)\n",
                case_name.c_str(), worst_ratio, static_cast<long long>(wb),
                static_cast<long long>(wh), static_cast<long long>(wd));
  }
  if (failures > 0) {
    ok = false;
    msg << "[" << case_name << "] " << failures << " of " << B * N * D
        << " output elements out of tolerance; worst at (b=" << wb << ", h=" << wh << ", d=" << wd
        << "): got " << w_got << ", want " << w_want << " (|diff| " << std::fabs(w_got - w_want)
        << " > bound " << w_bound << ", row max|V| " << ref.v_absmax[ref.row(wb, wh)] << ")\n";
  }

  // ---- LSE ----
  if (args.softmax_lse) {
    const TensorView& l = *args.softmax_lse;
    int64_t lse_failures = 0;
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t h = 0; h < N; ++h) {
        const double want = ref.lse[ref.row(b, h)];
        const double got = load_element(l, l.offset + b * l.strides[0] + h * l.strides[1]);
        const bool pass = nonfinite_aware_pass(
            got, want, std::fabs(got - want) <= kLseAtol + kLseRtol * std::fabs(want));
        if (!pass) {
          if (lse_failures == 0) {
            msg << "[" << case_name << "] softmax_lse at (b=" << b << ", h=" << h << "): got "
                << got << ", want " << want << "\n";
          }
          ++lse_failures;
        }
      }
    }
    if (lse_failures > 0) {
      ok = false;
      msg << "[" << case_name << "] " << lse_failures << " of " << B * N
          << " softmax_lse elements out of tolerance\n";
    }
  }
  if (ok) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << msg.str();
}

}  // namespace kvflash::testing
