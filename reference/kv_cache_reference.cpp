#include "kv_cache_reference.hpp"

#include <cstddef>
#include <cstring>
#include <set>

#include "element_access.hpp"

namespace kvflash::reference {
namespace {

int64_t flat_count(const TensorView& v) {
  int64_t n = 1;
  for (int i = 0; i < v.rank; ++i) n *= v.shape[i];
  return n;
}

// The byte offset of element (b, p, n, x) of a 4-D cache in its row-major image.
int64_t image_at(const TensorView& c, int64_t b, int64_t p, int64_t n, int64_t x) {
  return (((b * c.shape[1] + p) * c.shape[2] + n) * c.shape[3] + x) *
         static_cast<int64_t>(dtype_size(c.dtype));
}

// Copies element (t, n, x) of src over element (b, p, n, x) of the cache image.
void copy_element(const TensorView& src, int64_t t, int64_t n, int64_t x, const TensorView& cache,
                  int64_t b, int64_t p, std::vector<uint8_t>* image) {
  const size_t es = dtype_size(src.dtype);
  const auto* from =
      static_cast<const uint8_t*>(src.data) + element_at(src, {t, n, x}) * static_cast<int64_t>(es);
  std::memcpy(image->data() + image_at(cache, b, p, n, x), from, es);
}

}  // namespace

std::vector<uint8_t> element_bytes(const TensorView& v) {
  const size_t es = dtype_size(v.dtype);
  const int64_t n = flat_count(v);
  std::vector<uint8_t> out(static_cast<size_t>(n) * es);
  for (int64_t i = 0; i < n; ++i) {
    const auto* from =
        static_cast<const uint8_t*>(v.data) + element_at_flat(v, i) * static_cast<int64_t>(es);
    std::memcpy(out.data() + i * static_cast<int64_t>(es), from, es);
  }
  return out;
}

// slot_mapping[t], exactly (an int64 slot past 2^53 is not a double).
static int64_t slot(const TensorView& v, int64_t t) {
  const auto* at = static_cast<const std::byte*>(v.data) +
                   element_at(v, {t}) * static_cast<int64_t>(dtype_size(v.dtype));
  if (v.dtype == DType::kInt64) {
    int64_t x;
    std::memcpy(&x, at, sizeof x);
    return x;
  }
  int32_t x;
  std::memcpy(&x, at, sizeof x);
  return x;
}

KvCacheReference kv_cache_reference(const ScatterPaKvCacheArgs& a) {
  KvCacheReference r;
  r.key_cache = element_bytes(a.key_cache);
  const bool has_value = a.value.has_value();
  if (has_value) r.value_cache = element_bytes(*a.value_cache);
  const int64_t tokens = a.key.shape[0];
  const int64_t block_size = a.key_cache.shape[1];
  const int64_t slots = a.key_cache.shape[0] * block_size;
  std::set<int64_t> seen;
  for (int64_t t = 0; t < tokens; ++t) {
    const int64_t s = slot(a.slot_mapping, t);
    if (s < 0) continue;
    if (s >= slots || !seen.insert(s).second) {
      r.slots_ok = false;
      r.key_cache = element_bytes(a.key_cache);
      if (has_value) r.value_cache = element_bytes(*a.value_cache);
      return r;
    }
    const int64_t b = s / block_size, p = s % block_size;
    for (int64_t n = 0; n < a.key.shape[1]; ++n) {
      for (int64_t x = 0; x < a.key.shape[2]; ++x)
        copy_element(a.key, t, n, x, a.key_cache, b, p, &r.key_cache);
      if (!has_value) continue;
      for (int64_t x = 0; x < a.value->shape[2]; ++x) {
        copy_element(*a.value, t, n, x, *a.value_cache, b, p, &r.value_cache);
      }
    }
  }
  return r;
}

}  // namespace kvflash::reference
