// The bytes of a plan fingerprint (IfaPlan/SfaPlan/MergePlan::fingerprint): each argument's
// plan-relevant metadata as 64-bit words in native byte order, with its presence and length
// where those vary, so that two argument sets have equal bytes exactly when every tensor's
// dtype, rank, dims, strides, offset and device and every attribute are equal. No data pointer.
// The PyTorch operators fingerprint every call's arguments to find its plan
// (python/src/plan_cache.hpp includes this header and writes into a buffer it reuses), so the
// words are gathered in a local buffer and appended in a few blocks, not one by one, and a string
// is packed into whole words: the bytes are always a whole number of words, which the cache
// hashes word by word. Header-only over the public types.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "core/fields.hpp"
#include "kvflash/tensor.hpp"

namespace kvflash::core {

class FingerprintWriter {
 public:
  explicit FingerprintWriter(std::string* out) : out_(out) {}
  FingerprintWriter(const FingerprintWriter&) = delete;
  FingerprintWriter& operator=(const FingerprintWriter&) = delete;

  /// Room for n (at most kWords) words: write them at the pointer returned, then commit() the
  /// end. A view's words go in one block, with no bound check per word.
  int64_t* reserve(size_t n) {
    if (n_ + n > kWords) flush();
    return words_ + n_;
  }
  void commit(const int64_t* end) { n_ = static_cast<size_t>(end - words_); }
  void word(int64_t w) {
    *reserve(1) = w;
    ++n_;
  }
  void text(const std::string& s) {
    word(static_cast<int64_t>(s.size()));
    for (size_t i = 0; i < s.size(); i += sizeof(int64_t)) {
      int64_t w = 0;
      std::memcpy(&w, s.data() + i, std::min(sizeof w, s.size() - i));
      word(w);
    }
  }
  /// Appends what is buffered to the output; call it once at the end.
  void flush() {
    out_->append(reinterpret_cast<const char*>(words_), n_ * sizeof(int64_t));
    n_ = 0;
  }

  static constexpr size_t kWords = 128;

 private:
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

// A view's words at p: dtype, rank, dims, strides, offset, device; returns the end.
inline int64_t* put_view(int64_t* p, const TensorView& v) {
  *p++ = static_cast<int64_t>(v.dtype);
  *p++ = v.rank;
  const int rank = std::clamp(v.rank, 0, kMaxRank);
  for (int i = 0; i < rank; ++i) *p++ = v.shape[i];
  for (int i = 0; i < rank; ++i) *p++ = v.strides[i];
  *p++ = v.offset;
  *p++ = static_cast<int64_t>(v.device.type);
  *p++ = v.device.index;
  return p;
}
inline constexpr size_t kViewWords = 5 + 2 * kMaxRank;

inline void append_fingerprint(FingerprintWriter& w, const TensorView& v) {
  w.commit(put_view(w.reserve(kViewWords), v));
}
// Most optional tensors are absent: that case is one word, small enough to inline at every field.
inline void append_fingerprint(FingerprintWriter& w, const std::optional<TensorView>& v) {
  w.word(v.has_value());
  if (v) append_fingerprint(w, *v);
}
inline void append_fingerprint(FingerprintWriter& w, const std::vector<TensorView>& views) {
  w.word(static_cast<int64_t>(views.size()));
  for (const TensorView& v : views) append_fingerprint(w, v);
}

/// Appends the fingerprint bytes of every field of args to *out.
template <class Args, class Fields>
void fingerprint_fields(const Fields& fields, const Args& args, std::string* out) {
  FingerprintWriter w(out);
  for_each_field(fields, [&](const auto& f) { append_fingerprint(w, args.*f.member); });
  w.flush();
}

}  // namespace kvflash::core
