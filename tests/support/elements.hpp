// Reading and writing single elements of a TensorView in tests: the oracle's own element access
// (reference/element_access.hpp), under the names the case builders and comparators use.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "element_access.hpp"  // reference/

namespace kvflash::testing {

using reference::element_at;
using reference::element_at_flat;
using reference::load_element;
using reference::load_element_flat;
using reference::store_element;
using reference::store_element_flat;

/// Stores x into the first n elements of v's buffer, counted from v.data as contiguous elements of
/// v.dtype (a strided view's gaps included): x is encoded once (store_element) and the filled
/// prefix doubled until it covers them, the same bits as store_element on each element, which
/// was most of building a case.
inline void fill_elements(const TensorView& v, int64_t n, double x) {
  if (n <= 0) return;
  store_element(v, 0, x);
  auto* const p = static_cast<std::byte*>(v.data);
  const size_t total = static_cast<size_t>(n) * dtype_size(v.dtype);
  for (size_t filled = dtype_size(v.dtype); filled < total;) {
    const size_t k = std::min(filled, total - filled);
    std::memcpy(p + filled, p, k);
    filled += k;
  }
}

/// A view of `shape` over a new buffer appended to `buffers`, every byte of it (gaps included)
/// holding `fill`: contiguous, or with strided set one element of padding after every non-last
/// dim, an offset of 3 elements and a last-dim stride of last_stride, so that the kernels'
/// strided (gather) paths run. The SFA and indexer case builders' tensors.
inline TensorView padded_view(std::vector<std::vector<std::byte>>& buffers, DType dtype,
                              const std::vector<int64_t>& shape, bool strided, int64_t last_stride,
                              double fill) {
  const int rank = static_cast<int>(shape.size());
  TensorView v;
  v.dtype = dtype;
  v.rank = rank;
  const int64_t pad = strided ? 1 : 0;
  if (rank > 0) {
    v.strides[rank - 1] = strided ? last_stride : 1;
    int64_t next = std::max<int64_t>(shape[rank - 1], 1) * v.strides[rank - 1] + pad;
    for (int i = rank - 2; i >= 0; --i) {
      v.strides[i] = next;
      next = v.strides[i] * std::max<int64_t>(shape[i], 1) + pad;
    }
  }
  v.offset = strided ? 3 : 0;
  int64_t span = v.offset + 1;
  for (int i = 0; i < rank; ++i) {
    v.shape[i] = shape[i];
    span += std::max<int64_t>(shape[i] - 1, 0) * v.strides[i];
  }
  buffers.emplace_back(static_cast<size_t>(span) * dtype_size(dtype) + 64);
  v.data = buffers.back().data();
  fill_elements(v, span, fill);
  return v;
}

}  // namespace kvflash::testing
