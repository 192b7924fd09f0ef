// The bytes of a plan fingerprint (IfaPlan/SfaPlan/MergePlan::fingerprint): each argument's
// plan-relevant metadata as 64-bit words in native byte order, with its presence and length
// where those vary, so that two argument sets have equal bytes exactly when every tensor's
// dtype, rank, dims, strides, offset and device and every attribute are equal. No data pointer.
// The PyTorch operators fingerprint every call's arguments to find its plan, so the words are
// gathered in a local buffer and appended in a few blocks, not one by one.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kvflash/tensor.hpp"

namespace kvflash::core {

class FingerprintWriter {
 public:
  explicit FingerprintWriter(std::string* out) : out_(out) {}
  FingerprintWriter(const FingerprintWriter&) = delete;
  FingerprintWriter& operator=(const FingerprintWriter&) = delete;

  void word(int64_t w) {
    if (n_ == kWords) flush();
    words_[n_++] = w;
  }
  void text(const std::string& s) {
    word(static_cast<int64_t>(s.size()));
    flush();
    out_->append(s);
  }
  /// Appends what is buffered to the output; call it once at the end.
  void flush() {
    out_->append(reinterpret_cast<const char*>(words_), n_ * sizeof(int64_t));
    n_ = 0;
  }

 private:
  static constexpr size_t kWords = 128;
  int64_t words_[kWords];
  size_t n_ = 0;
  std::string* out_;
};

inline void append_fingerprint(FingerprintWriter& w, int64_t value) { w.word(value); }
inline void append_fingerprint(FingerprintWriter& w, bool value) { w.word(value); }
// The bits of the double: a plan compares (float)scale_value, so equal bits are sufficient.
inline void append_fingerprint(FingerprintWriter& w, double value) {
  w.word(std::bit_cast<int64_t>(value));
}
inline void append_fingerprint(FingerprintWriter& w, const std::string& value) { w.text(value); }
inline void append_fingerprint(FingerprintWriter& w,
                               const std::optional<std::vector<int64_t>>& values) {
  w.word(values.has_value());
  if (!values) return;
  w.word(static_cast<int64_t>(values->size()));
  for (int64_t v : *values) w.word(v);
}
inline void append_fingerprint(FingerprintWriter& w, const TensorView& v) {
  w.word(static_cast<int64_t>(v.dtype));
  w.word(v.rank);
  const int rank = std::clamp(v.rank, 0, kMaxRank);
  for (int i = 0; i < rank; ++i) w.word(v.shape[i]);
  for (int i = 0; i < rank; ++i) w.word(v.strides[i]);
  w.word(v.offset);
  w.word(static_cast<int64_t>(v.device.type));
  w.word(v.device.index);
}
inline void append_fingerprint(FingerprintWriter& w, const std::optional<TensorView>& v) {
  w.word(v.has_value());
  if (v) append_fingerprint(w, *v);
}
inline void append_fingerprint(FingerprintWriter& w, const std::vector<TensorView>& views) {
  w.word(static_cast<int64_t>(views.size()));
  for (const TensorView& v : views) append_fingerprint(w, v);
}

}  // namespace kvflash::core
