// The bytes of a plan fingerprint (IfaPlan/SfaPlan/MergePlan::fingerprint): each argument's
// plan-relevant metadata as 64-bit words in native byte order, with its presence and length
// where those vary, so that two argument sets have equal bytes exactly when every tensor's
// dtype, rank, dims, strides, offset and device and every attribute are equal. No data pointer.
// Inline: the PyTorch operators fingerprint every call's arguments to find its plan.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "kvflash/tensor.hpp"

namespace kvflash::core {

inline void append_fingerprint(std::string* out, int64_t value) {
  char bytes[sizeof value];
  std::memcpy(bytes, &value, sizeof value);
  out->append(bytes, sizeof bytes);
}

inline void append_fingerprint(std::string* out, bool value) {
  append_fingerprint(out, static_cast<int64_t>(value));
}

// The bits of the double: a plan compares (float)scale_value, so equal bits are sufficient.
inline void append_fingerprint(std::string* out, double value) {
  append_fingerprint(out, std::bit_cast<int64_t>(value));
}

inline void append_fingerprint(std::string* out, const std::string& value) {
  append_fingerprint(out, static_cast<int64_t>(value.size()));
  out->append(value);
}

inline void append_fingerprint(std::string* out,
                               const std::optional<std::vector<int64_t>>& values) {
  append_fingerprint(out, values.has_value());
  if (!values) return;
  append_fingerprint(out, static_cast<int64_t>(values->size()));
  for (int64_t v : *values) append_fingerprint(out, v);
}

inline void append_fingerprint(std::string* out, const TensorView& v) {
  append_fingerprint(out, static_cast<int64_t>(v.dtype));
  append_fingerprint(out, static_cast<int64_t>(v.rank));
  const int rank = std::clamp(v.rank, 0, kMaxRank);
  for (int i = 0; i < rank; ++i) append_fingerprint(out, v.shape[i]);
  for (int i = 0; i < rank; ++i) append_fingerprint(out, v.strides[i]);
  append_fingerprint(out, v.offset);
  append_fingerprint(out, static_cast<int64_t>(v.device.type));
  append_fingerprint(out, static_cast<int64_t>(v.device.index));
}

inline void append_fingerprint(std::string* out, const std::optional<TensorView>& v) {
  append_fingerprint(out, v.has_value());
  if (v) append_fingerprint(out, *v);
}

inline void append_fingerprint(std::string* out, const std::vector<TensorView>& views) {
  append_fingerprint(out, static_cast<int64_t>(views.size()));
  for (const TensorView& v : views) append_fingerprint(out, v);
}

}  // namespace kvflash::core
