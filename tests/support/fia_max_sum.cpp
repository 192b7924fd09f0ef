#include "support/fia_max_sum.hpp"

#include <cmath>

namespace kvflash::testing {
namespace {

constexpr int64_t kWidth = 8;

// Row (r, h)'s first element: 8 times its index in a contiguous softmax_lse.
int64_t element(const FiaCase& c, int64_t rows, int64_t r, int64_t h) {
  const int64_t N = c.num_heads;
  if (c.tnd()) return kWidth * (r * N + h);
  const int64_t S1 = rows / c.batch(), b = r / S1, s = r % S1;
  return kWidth * ((b * N + h) * S1 + s);
}

}  // namespace

FiaMaxSum::FiaMaxSum(const FiaCaseData& data) {
  const FiaCase& c = data.spec();
  const int64_t N = c.num_heads;
  shape = c.tnd() ? std::vector<int64_t>{data.rows(), N, kWidth}
                  : std::vector<int64_t>{c.batch(), N, data.rows() / c.batch(), kWidth};
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  max.assign(static_cast<size_t>(n), std::nanf(""));
  sum.assign(static_cast<size_t>(n), std::nanf(""));
}

TensorView FiaMaxSum::max_view() {
  return TensorView::contiguous(max.data(), DType::kFloat32, shape);
}
TensorView FiaMaxSum::sum_view() {
  return TensorView::contiguous(sum.data(), DType::kFloat32, shape);
}

::testing::AssertionResult compare_fia_max_sum(const FiaCaseData& data,
                                               const reference::FiaReference& ref,
                                               const FiaMaxSum& got) {
  const FiaCase& c = data.spec();
  for (int64_t r = 0; r < ref.rows; ++r) {
    for (int64_t h = 0; h < ref.num_heads; ++h) {
      const double wm = ref.softmax_max[ref.row(r, h)], ws = ref.softmax_sum[ref.row(r, h)];
      const int64_t e = element(c, data.rows(), r, h);
      const bool empty = ref.row_kind[ref.row(r, h)] != reference::FiaRowKind::kNormal;
      for (int64_t w = 0; w < kWidth; ++w) {
        const double gm = got.max[e + w], gs = got.sum[e + w];
        const bool ok_m = std::fabs(gm - wm) <= 0x1p-10 + 0x1p-16 * std::fabs(wm);
        const bool ok_s = std::fabs(gs - ws) <= 0x1p-9 * ws;
        if (empty ? (gm != 0.0 || gs != 0.0) : !(ok_m && ok_s)) {
          return ::testing::AssertionFailure()
                 << c.name() << " (r=" << r << ", h=" << h << ", w=" << w << "): max " << gm
                 << " want " << wm << ", sum " << gs << " want " << ws;
        }
      }
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace kvflash::testing
