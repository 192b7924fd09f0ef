#include "harness.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "core/checked_math.hpp"
#include "core/half.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define KVFLASH_FUZZ_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KVFLASH_FUZZ_ASAN 1
#endif
#endif
#ifdef KVFLASH_FUZZ_ASAN
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace kvflash::fuzz {
namespace {
std::string& context_storage() {
  static std::string* s = new std::string;
  return *s;
}
}  // namespace

Stats& stats() {
  static Stats* const s = [] {
    auto* st = new Stats;
    if (std::getenv("KVFLASH_FUZZ_STATS") != nullptr) {
      std::atexit([] {
        const Stats& x = stats();
        std::fprintf(
            stderr,
            "fuzz stats: inputs %llu, skipped %llu, refused %llu, planned only %llu, "
            "ran %llu (faulted %llu), compared with the reference %llu\n",
            static_cast<unsigned long long>(x.inputs), static_cast<unsigned long long>(x.skipped),
            static_cast<unsigned long long>(x.refused),
            static_cast<unsigned long long>(x.planned_only), static_cast<unsigned long long>(x.ran),
            static_cast<unsigned long long>(x.faulted),
            static_cast<unsigned long long>(x.compared));
      });
    }
    return st;
  }();
  return *s;
}

void set_context(std::string c) { context_storage() = std::move(c); }
void add_context(const std::string& note) {
  std::string& c = context_storage();
  if (c.size() < 4000) c += " | " + note;
}
const std::string& context() { return context_storage(); }

void violated(const std::string& what) {
  std::fprintf(stderr, "\n==== fuzz invariant violated: %s\n==== input: %s\n", what.c_str(),
               context().c_str());
  std::fflush(stderr);
  std::abort();
}

Guarded::Guarded(size_t bytes, size_t misalign, uint8_t fill) {
  size_ = bytes;
  before_ = kGuard + (misalign % 64);
  total_ = before_ + bytes + kGuard;
  raw_ = static_cast<std::byte*>(std::aligned_alloc(64, (total_ + 63) / 64 * 64));
  if (raw_ == nullptr) violated("the harness could not allocate " + std::to_string(total_));
  std::memset(raw_, kPattern, total_);
  data_ = raw_ + before_;
  std::memset(data_, fill, bytes);
  POISON(raw_, before_);
  POISON(data_ + size_, kGuard);
}

Guarded::~Guarded() {
  UNPOISON(raw_, total_);
  std::free(raw_);
}

void Guarded::check_guards(const std::string& what) const {
  UNPOISON(raw_, before_);
  UNPOISON(data_ + size_, kGuard);
  for (size_t i = 0; i < before_; ++i) {
    if (static_cast<uint8_t>(raw_[i]) != kPattern)
      violated(what + ": guard byte " + std::to_string(before_ - i) + " before it was written");
  }
  for (size_t i = 0; i < kGuard; ++i) {
    if (static_cast<uint8_t>(data_[size_ + i]) != kPattern)
      violated(what + ": guard byte " + std::to_string(i) + " after it was written");
  }
  POISON(raw_, before_);
  POISON(data_ + size_, kGuard);
}

std::optional<uint64_t> view_bytes(const TensorView& v) {
  const int64_t es = static_cast<int64_t>(dtype_size(v.dtype));
  if (es == 0 || v.rank < 0 || v.rank > kMaxRank || v.offset < 0) return std::nullopt;
  for (int i = 0; i < v.rank; ++i) {
    if (v.shape[i] < 0 || v.strides[i] < 0) return std::nullopt;
  }
  for (int i = 0; i < v.rank; ++i) {
    if (v.shape[i] == 0) return 0;
  }
  std::optional<int64_t> last = v.offset;
  for (int i = 0; i < v.rank && last; ++i) {
    const auto span = core::checked_mul(v.shape[i] - 1, v.strides[i]);
    last = span ? core::checked_add(*last, *span) : std::nullopt;
  }
  if (!last) return std::nullopt;
  const auto n = core::checked_add(*last, 1);
  const auto bytes = n ? core::checked_mul(*n, es) : std::nullopt;
  if (!bytes) return std::nullopt;
  return static_cast<uint64_t>(*bytes);
}

int64_t safe_numel(const TensorView& v) {
  if (v.rank < 0 || v.rank > kMaxRank) return -1;
  const auto n = core::checked_product(v.shape.data(), v.rank);
  return n ? *n : -1;
}

void* unreadable_page() {
  static void* const page = [] {
    void* p = mmap(nullptr, 1 << 16, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) violated("mmap of the unreadable page failed");
    return p;
  }();
  return page;
}

uint64_t hash_bytes(const void* p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  const auto* b = static_cast<const uint8_t*>(p);
  for (size_t i = 0; i < n; ++i) {
    h ^= b[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

void Unchanged::add(const void* p, size_t n, std::string name) {
  if (p == nullptr || n == 0) return;
  regions_.push_back({p, n, hash_bytes(p, n), std::move(name)});
}

void Unchanged::check(const std::string& when) const {
  for (const Region& r : regions_) {
    if (hash_bytes(r.p, r.n) != r.hash) violated(when + ": input " + r.name + " was modified");
  }
}

namespace {

using Wide = __int128;  // offsets of views whose shapes and strides may be anything

Wide floor_div(Wide a, Wide b) {
  const Wide q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
Wide ceil_div(Wide a, Wide b) { return -floor_div(-a, b); }

// Marks in `may` the bytes of `view`'s elements that lie inside the buffer `buf` (may.size()
// bytes). A mutated view (an output the call does not use, resized by a mutation) may claim
// billions of elements over a buffer of a few bytes, so the elements are not enumerated one by
// one: a stride-0 dimension counts once (its indices share an address), and at every dimension
// only the indices whose elements can still land inside the buffer are visited. Views whose
// elements overlap each other many times over may still visit too many: past kMaxVisits the whole
// part of the buffer the view spans is marked (weaker, never a false failure).
class ViewMarker {
 public:
  ViewMarker(const TensorView& v, const std::byte* buf, std::vector<char>& may)
      : v_(v), es_(static_cast<int64_t>(dtype_size(v.dtype))), may_(may) {
    // The buffer's first byte, counted from v.data (an address the view may point anywhere).
    lo_byte_ = static_cast<Wide>(reinterpret_cast<intptr_t>(buf)) -
               static_cast<Wide>(reinterpret_cast<intptr_t>(v.data));
    emin_ = ceil_div(lo_byte_, es_);
    emax_ = floor_div(lo_byte_ + static_cast<Wide>(may.size()) - es_, es_);
    inner_lo_[v.rank] = inner_hi_[v.rank] = 0;
    for (int k = v.rank - 1; k >= 0; --k) {
      const Wide reach = static_cast<Wide>(v.shape[k] - 1) * v.strides[k];
      inner_lo_[k] = inner_lo_[k + 1] + std::min<Wide>(reach, 0);
      inner_hi_[k] = inner_hi_[k + 1] + std::max<Wide>(reach, 0);
    }
  }

  void run() {
    if (!walk(0, v_.offset)) mark_range(v_.offset + inner_lo_[0], v_.offset + inner_hi_[0]);
  }

 private:
  static constexpr int64_t kMaxVisits = int64_t{1} << 22;

  // False when the visits ran out.
  bool walk(int k, Wide base) {
    if (k == v_.rank) {
      if (++visits_ > kMaxVisits) return false;
      mark_range(base, base);
      return true;
    }
    const int64_t n = v_.shape[k], st = v_.strides[k];
    if (st == 0) return walk(k + 1, base);
    // base + i * st + [inner_lo_, inner_hi_] of dimension k + 1 must meet [emin_, emax_].
    const Wide a = emin_ - inner_hi_[k + 1] - base, b = emax_ - inner_lo_[k + 1] - base;
    Wide first = st > 0 ? ceil_div(a, st) : ceil_div(b, st);
    Wide last = st > 0 ? floor_div(b, st) : floor_div(a, st);
    first = std::max<Wide>(first, 0);
    last = std::min<Wide>(last, n - 1);
    for (Wide i = first; i <= last; ++i) {
      if (!walk(k + 1, base + i * st)) return false;
    }
    return true;
  }

  // Marks the bytes of elements [e0, e1] that are inside the buffer.
  void mark_range(Wide e0, Wide e1) {
    e0 = std::max(e0, emin_);
    e1 = std::min(e1, emax_);
    if (e0 > e1) return;
    const auto from = static_cast<ptrdiff_t>(e0 * es_ - lo_byte_);
    const auto to = static_cast<ptrdiff_t>((e1 + 1) * es_ - lo_byte_);
    std::fill(may_.begin() + from, may_.begin() + to, 1);
  }

  const TensorView& v_;
  const int64_t es_;
  std::vector<char>& may_;
  Wide lo_byte_ = 0, emin_ = 0, emax_ = 0;
  std::array<Wide, kMaxRank + 1> inner_lo_{}, inner_hi_{};
  int64_t visits_ = 0;
};

}  // namespace

void OutputBuffer::check(const TensorView& view, bool written) const {
  mem->check_guards("output " + name);
  const std::byte* now = mem->data();
  std::vector<char> may(before.size(), 0);
  // A view with a bad rank, a dimension <= 0, an element count past int64 or an unknown dtype
  // (size 0) has no elements to write.
  const bool has_elements =
      safe_numel(view) > 0 && std::all_of(view.shape.begin(), view.shape.begin() + view.rank,
                                          [](int64_t d) { return d > 0; });
  if (written && view.data != nullptr && has_elements && dtype_size(view.dtype) > 0 &&
      !may.empty()) {
    ViewMarker(view, now, may).run();
  }
  for (size_t i = 0; i < before.size(); ++i) {
    if (!may[i] && now[i] != before[i]) {
      violated("output " + name + ": byte " + std::to_string(i) + " outside " +
               (written ? "the output's elements" : "any output (the call failed)") +
               " was written");
    }
  }
}

bool documented_status(int64_t status) {
  return status == 0 || status == 161001 || status == 161002 || status == 361001;
}

bool has_word(const std::string& text, const std::string& word) {
  const auto ident = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  };
  for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) {
    const bool left = at == 0 || !ident(text[at - 1]);
    const size_t end = at + word.size();
    const bool right = end == text.size() || !ident(text[end]);
    if (left && right) return true;
  }
  return false;
}

void check_status(int64_t status, const char* message, const char* op,
                  const std::vector<const char*>& names, const std::string& where) {
  if (!documented_status(status))
    violated(where + ": status " + std::to_string(status) + " is not a documented code");
  if (status == 0) return;
  const std::string msg = message ? message : "";
  const std::string head = std::string("[") + op + "]";
  if (msg.rfind(head, 0) != 0 && msg.rfind("[acl]", 0) != 0)
    violated(where + ": status " + std::to_string(status) + " with message '" + msg +
             "', which does not start with " + head);
  for (const char* n : names) {
    if (has_word(msg, n)) return;
  }
  violated(where + ": status " + std::to_string(status) + " with message '" + msg +
           "', which names no argument");
}

}  // namespace kvflash::fuzz
