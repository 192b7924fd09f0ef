#include "harness.hpp"

#include <sys/mman.h>

#include <algorithm>
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

void OutputBuffer::check(const TensorView& view, bool written) const {
  mem->check_guards("output " + name);
  const std::byte* now = mem->data();
  std::vector<char> may(before.size(), 0);
  if (written && view.data != nullptr) {
    const int64_t n = safe_numel(view);
    const size_t es = dtype_size(view.dtype);
    const auto* base = static_cast<const std::byte*>(view.data);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t e = element_at_flat(view, i);
      const std::byte* p = base + e * static_cast<int64_t>(es);
      if (p < now || p + es > now + before.size()) continue;  // outside: never written
      std::fill_n(may.begin() + (p - now), es, 1);
    }
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
