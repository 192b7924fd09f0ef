// Reading and writing single elements of a TensorView, for every dtype kvflash knows: the one
// implementation the oracles, the tests' case builders and comparators, and the fuzz harness share.
// Plain and slow on purpose (a switch per element): nothing here is on a kernel's path.
#pragma once

#include <cstdint>
#include <initializer_list>

#include "kvflash/tensor.hpp"

namespace kvflash::reference {

/// Element offset (from data, in elements) of the logical index idx: offset + sum idx_k * stride_k.
int64_t element_at(const TensorView& v, std::initializer_list<int64_t> idx);
/// Element offset of the row-major flat index `flat` over the view's shape (where the spec says
/// "the dims flatten to ...", e.g. per-channel scales of any accepted shape).
int64_t element_at_flat(const TensorView& v, int64_t flat);

/// The element at offset elem, widened exactly (fp16/bf16/fp32, integers, bool).
double load_element(const TensorView& v, int64_t elem);
/// Stores x at offset elem: rounded to nearest even for fp16/bf16/fp32; integers saturate at their
/// range (int32/int64 truncate toward zero inside it), so no value of x is undefined behaviour.
void store_element(const TensorView& v, int64_t elem, double x);

inline double load_element(const TensorView& v, std::initializer_list<int64_t> idx) {
  return load_element(v, element_at(v, idx));
}
inline double load_element_flat(const TensorView& v, int64_t flat) {
  return load_element(v, element_at_flat(v, flat));
}
inline void store_element(const TensorView& v, std::initializer_list<int64_t> idx, double x) {
  store_element(v, element_at(v, idx), x);
}
inline void store_element_flat(const TensorView& v, int64_t flat, double x) {
  store_element(v, element_at_flat(v, flat), x);
}

}  // namespace kvflash::reference
