// Reading and writing single elements of a TensorView in tests: the oracle's own element access
// (reference/element_access.hpp), under the names the case builders and comparators use.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

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

}  // namespace kvflash::testing
