#include "support/sfa_compare.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>

#include "core/half.hpp"
#include "support/compare.hpp"  // nonfinite_aware_pass

namespace kvflash::testing {

double sfa_rtol(DType dtype) {
  if (dtype == DType::kFloat32) return 0x1p-16;
  return dtype == DType::kBFloat16 ? 0x1p-7 : 0x1p-10;
}

::testing::AssertionResult compare_sfa_output(const std::string& case_name, const SfaArgs& args,
                                              const reference::SfaReference& ref,
                                              bool allow_mostly_empty, double* worst_ratio) {
  using reference::SfaRowKind;
  const DType dt = args.attention_out.dtype;
  const double rtol = sfa_rtol(dt);
  const uint16_t* out = static_cast<const uint16_t*>(args.attention_out.base());
  const int64_t n1 = ref.num_heads;
  constexpr int64_t kD = reference::SfaReference::kHeadDim;

  int64_t normal_rows = 0, bad = 0;
  double worst_excess = -1.0, ratio = 0.0;
  std::ostringstream worst;
  auto note = [&](double excess, const std::string& what) {
    ++bad;
    if (excess > worst_excess) {
      worst_excess = excess;
      worst.str("");
      worst << what;
    }
  };
  for (int64_t r = 0; r < ref.num_rows; ++r) {
    const bool normal = ref.row_kind[r] == SfaRowKind::kNormal;
    normal_rows += normal;
    const double atol = rtol * ref.v_absmax[r];
    for (int64_t h = 0; h < n1; ++h) {
      for (int64_t d = 0; d < kD; ++d) {
        const int64_t i = ref.index(r, h, d);
        const double got = dt == DType::kFloat32
                               ? static_cast<const float*>(args.attention_out.base())[i]
                               : (dt == DType::kBFloat16 ? core::bf16_to_float(out[i])
                                                         : core::fp16_to_float(out[i]));
        const double want = ref.attention[i];
        const double bound = normal ? atol + rtol * std::fabs(want) : 0.0;
        const double err = std::fabs(got - want);
        const bool pass = nonfinite_aware_pass(got, want, err <= bound);
        if (normal && std::isfinite(want)) {
          ratio = std::max(ratio, !pass ? 1.0 : (bound > 0.0 ? err / bound : 0.0));
        }
        if (!pass) {
          std::ostringstream m;
          m << "out(row " << r << ", head " << h << ", d " << d << ") = " << got << ", want "
            << want << " (bound " << bound << ", row kind " << static_cast<int>(ref.row_kind[r])
            << ")";
          note(std::isnan(err) ? 1e300 : err - bound, m.str());
        }
      }
      if (args.return_softmax_lse) {
        const float* mx = static_cast<const float*>(args.softmax_max->base());
        const float* sm = static_cast<const float*>(args.softmax_sum->base());
        const int64_t j = ref.row(r, h);
        const double m_want = ref.softmax_max[j], l_want = ref.softmax_sum[j];
        const bool zero_row =
            ref.row_kind[r] == SfaRowKind::kInvalid || ref.row_kind[r] == SfaRowKind::kUncovered;
        // Scores carry an fp32 error of about 2^-14 (1 + |m|); l inherits it relatively.
        const double m_tol = zero_row ? 0.0 : 0x1p-14 * (1.0 + std::fabs(m_want));
        const double l_tol = zero_row ? 0.0 : 0x1p-12 * (1.0 + std::fabs(m_want)) * l_want + 1e-6;
        const double em = std::fabs(mx[j] - m_want), el = std::fabs(sm[j] - l_want);
        if (!nonfinite_aware_pass(mx[j], m_want, em <= m_tol) ||
            !nonfinite_aware_pass(sm[j], l_want, el <= l_tol)) {
          std::ostringstream m;
          m << "softmax(row " << r << ", head " << h << ") = (" << mx[j] << ", " << sm[j]
            << "), want (" << m_want << ", " << l_want << ")";
          note(std::isnan(em + el) ? 1e300 : std::max(em - m_tol, el - l_tol), m.str());
        }
      }
    }
  }
  if (worst_ratio != nullptr) *worst_ratio = ratio;
  if (bad > 0)
    return ::testing::AssertionFailure()
           << case_name << ": " << bad << " elements out of tolerance; worst: " << worst.str();
  if (!allow_mostly_empty && normal_rows * 4 < ref.num_rows)
    return ::testing::AssertionFailure()
           << case_name << ": only " << normal_rows << " of " << ref.num_rows
           << " rows attend anything; the comparison would prove little";
  return ::testing::AssertionSuccess();
}

}  // namespace kvflash::testing
