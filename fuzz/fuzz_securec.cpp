// Fuzz target: the secure C functions of securec.h (include/securec.h, src/securec/).
//
// The first decision picks a family:
//   - memory and strings: memcpy_s, memmove_s, memset_s, strcpy_s, strncpy_s, strcat_s and
//     strncat_s on one guarded arena, so destination and source may overlap in any way; sizes,
//     offsets and counts from the input (now and then 0, null, or above SECUREC_*_MAX_LEN). For the
//     string functions the source may instead be a guarded array of its own holding exactly the
//     bytes the function may read (unterminated when the input says so), so that any over-read is
//     an AddressSanitizer report;
//   - formatting: sprintf_s, snprintf_s and snprintf_truncated_s on a format built from the input;
//   - scanning: sscanf_s on a format and an input built from the input, first with large buffers,
//     then with small ones (guarded, exactly their size).
//
// Invariants (docs/testing.md): no crash or sanitizer report; nothing outside [dest, dest +
// destMax) is written; the return code and every byte of the arena afterwards are those of a plain
// byte-by-byte model of the documented rules (docs/api.md, "securec"); formatting agrees with the
// C library's snprintf; sscanf_s with large buffers agrees with the C library's sscanf, and with
// small ones stops exactly at the first field that does not fit, storing "" there and nothing else.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "fuzz_input.hpp"
#include "harness.hpp"
#include "securec.h"

namespace kvflash::fuzz {
namespace {

constexpr size_t kArena = 256;  // destination and arena-source offsets are below kHalf, sizes at
constexpr size_t kHalf = 128;   // most kHalf: every access the rules allow stays in the arena
constexpr size_t kLimit = 0x7fffffffUL;  // SECUREC_STRING_MAX_LEN and SECUREC_MEM_MAX_LEN

char* bytes(Guarded& g) { return reinterpret_cast<char*>(g.data()); }

/// A size from the input: mostly in [0, typical_max], now and then past the limit.
size_t pick_size(FuzzInput* in, size_t typical_max) {
  switch (in->below(16)) {
    case 0: return kLimit + 1 + in->below(3);
    case 1: return static_cast<size_t>(-1);
    default: return in->below(static_cast<uint32_t>(typical_max + 1));
  }
}

// ---- memory and strings -----------------------------------------------------------------------

enum Op { kMemcpy, kMemmove, kMemset, kStrcpy, kStrncpy, kStrcat, kStrncat, kNumOps };
const char* const kOpNames[] = {"memcpy_s",  "memmove_s", "memset_s", "strcpy_s",
                                "strncpy_s", "strcat_s",  "strncat_s"};

struct Call {
  Op op = kMemcpy;
  bool dest_null = false, src_null = false;
  bool own_source = false;  // the source is a separate array (else it is in the arena)
  size_t dest = 0, src = 0;  // offsets: dest into the arena; src into the arena or the array
  size_t dest_max = 0, count = 0;
  int fill = 0;
};

// The documented rules, written out byte by byte on copies of the memory.
class Model {
 public:
  Model(const Call& c, std::vector<char> arena, std::vector<char> own)
      : c_(c), arena_(std::move(arena)), own_(std::move(own)) {}

  int run() {
    const bool is_memory = c_.op <= kMemset;
    if (c_.dest_max == 0 || c_.dest_max > kLimit) return ERANGE;
    if (c_.dest_null) return EINVAL;
    if (c_.op != kMemset && c_.src_null) return reset(is_memory ? kAll : kFirst, 0, EINVAL_AND_RESET);
    if (is_memory) return memory();
    return string();
  }
  const std::vector<char>& arena() const { return arena_; }
  /// The model read past the end of the separate source: it is too short for the call.
  bool source_too_short() const { return source_too_short_; }

 private:
  enum Reset { kFirst, kAll };

  int reset(Reset what, char value, int code) {
    if (what == kAll) std::fill_n(arena_.begin() + static_cast<long>(c_.dest), c_.dest_max, value);
    else arena_[c_.dest] = '\0';
    return code;
  }
  char src_at(size_t i) {
    if (!c_.own_source) return arena_[c_.src + i];
    if (c_.src + i >= own_.size()) {
      source_too_short_ = true;
      return '\0';
    }
    return own_[c_.src + i];
  }
  // Bytes [a, a + a_len) of the arena against [src, src + b_len) of the source.
  bool hits_source(size_t a, size_t a_len, size_t b_len) const {
    if (c_.own_source || a_len == 0 || b_len == 0) return false;
    return a < c_.src + b_len && c_.src < a + a_len;
  }

  int memory() {
    if (c_.count > c_.dest_max)
      return reset(kAll, c_.op == kMemset ? static_cast<char>(c_.fill) : 0, ERANGE_AND_RESET);
    if (c_.op == kMemcpy && c_.dest != c_.src && hits_source(c_.dest, c_.count, c_.count))
      return reset(kAll, 0, EOVERLAP_AND_RESET);
    std::vector<char> from(c_.count);
    for (size_t i = 0; i < c_.count; ++i)
      from[i] = c_.op == kMemset ? static_cast<char>(c_.fill) : src_at(i);
    std::copy(from.begin(), from.end(), arena_.begin() + static_cast<long>(c_.dest));
    return EOK;
  }

  int string() {
    const bool counted = c_.op == kStrncpy || c_.op == kStrncat;
    const bool append = c_.op == kStrcat || c_.op == kStrncat;
    if (counted && c_.count > kLimit) return reset(kFirst, 0, ERANGE_AND_RESET);
    size_t at = c_.dest, room = c_.dest_max;
    if (append) {
      size_t len = 0;
      while (len < c_.dest_max && arena_[c_.dest + len] != '\0') ++len;
      if (len == c_.dest_max) return reset(kFirst, 0, EINVAL_AND_RESET);  // unterminated
      if (!c_.own_source && c_.src == c_.dest) return reset(kFirst, 0, EOVERLAP_AND_RESET);
      at += len;
      room -= len;
    }
    const size_t scan = counted ? std::min(c_.count, room) : room;
    size_t n = 0;
    while (n < scan && src_at(n) != '\0') ++n;
    if (n == room) return reset(kFirst, 0, ERANGE_AND_RESET);  // no room for the terminator
    if (!append && !c_.own_source && c_.src == c_.dest) {
      arena_[c_.dest + n] = '\0';
      return EOK;
    }
    if (hits_source(at, n + 1, n < scan ? n + 1 : n)) return reset(kFirst, 0, EOVERLAP_AND_RESET);
    for (size_t i = 0; i < n; ++i) arena_[at + i] = src_at(i);
    arena_[at + n] = '\0';
    return EOK;
  }

  Call c_;
  std::vector<char> arena_, own_;
  bool source_too_short_ = false;
};

int call_function(const Call& c, char* dest, const char* src) {
  switch (c.op) {
    case kMemcpy: return memcpy_s(dest, c.dest_max, src, c.count);
    case kMemmove: return memmove_s(dest, c.dest_max, src, c.count);
    case kMemset: return memset_s(dest, c.dest_max, c.fill, c.count);
    case kStrcpy: return strcpy_s(dest, c.dest_max, src);
    case kStrncpy: return strncpy_s(dest, c.dest_max, src, c.count);
    case kStrcat: return strcat_s(dest, c.dest_max, src);
    default: return strncat_s(dest, c.dest_max, src, c.count);
  }
}

void fuzz_memory_and_strings(FuzzInput* in) {
  Call c;
  c.op = static_cast<Op>(in->below(kNumOps));
  const bool is_string = c.op >= kStrcpy;
  c.dest = in->below(kHalf);
  c.dest_max = pick_size(in, kHalf - c.dest);
  c.count = pick_size(in, std::min(c.dest_max, kHalf) + 4);
  c.dest_null = in->rare(16);
  c.src_null = in->rare(16);
  c.fill = static_cast<int>(in->byte()) - 128;
  c.own_source = is_string && in->flag();
  c.src = c.own_source ? 0 : in->below(kHalf);
  std::vector<char> arena(kArena);
  for (char& b : arena) {
    const uint8_t v = in->byte();
    b = is_string && v % 5 == 0 ? '\0' : static_cast<char>(v);  // strings: frequent terminators
  }
  std::vector<char> own;
  if (c.own_source) {
    const size_t len = in->below(80);
    for (size_t i = 0; i < len; ++i) own.push_back(static_cast<char>('a' + in->below(26)));
    if (in->flag()) own.push_back('\0');
  }
  Model model(c, arena, own);
  int want_rc = model.run();
  if (model.source_too_short()) {
    // The rules let the function read further than this unterminated array: terminate it.
    own.push_back('\0');
    model = Model(c, arena, own);
    want_rc = model.run();
  }
  Guarded mem(kArena);
  std::copy(arena.begin(), arena.end(), bytes(mem));
  std::unique_ptr<Guarded> own_mem;
  const char* src = c.src_null ? nullptr : bytes(mem) + c.src;
  if (c.own_source && !c.src_null) {
    own_mem = std::make_unique<Guarded>(own.size());
    std::copy(own.begin(), own.end(), bytes(*own_mem));
    src = bytes(*own_mem);
  }
  set_context(std::string(kOpNames[c.op]) + " dest " + (c.dest_null ? "null" : std::to_string(c.dest)) +
              " destMax " + std::to_string(c.dest_max) + " src " +
              (c.src_null ? "null" : c.own_source ? "own[" + std::to_string(own.size()) + "]"
                                                  : std::to_string(c.src)) +
              " count " + std::to_string(c.count));
  const int rc = call_function(c, c.dest_null ? nullptr : bytes(mem) + c.dest, src);
  mem.check_guards("arena");
  if (own_mem) own_mem->check_guards("source");
  if (rc != want_rc)
    violated("returned " + std::to_string(rc) + ", the model " + std::to_string(want_rc));
  for (size_t i = 0; i < kArena; ++i) {
    if (bytes(mem)[i] == model.arena()[i]) continue;
    const bool inside = !c.dest_null && i >= c.dest && i - c.dest < c.dest_max;
    violated("arena byte " + std::to_string(i) + (inside ? " (inside" : " (outside") +
             " the destination) differs from the model");
  }
  if (own_mem && !own.empty() && std::memcmp(bytes(*own_mem), own.data(), own.size()) != 0)
    violated("the source changed");
  // A successful string copy or append is also what the C library's strncat gives.
  if (rc == EOK && is_string && c.own_source) {
    std::vector<char> lib(kArena + own.size() + 1, '\0');
    const bool append = c.op == kStrcat || c.op == kStrncat;
    if (append) std::strcpy(lib.data(), arena.data() + c.dest);
    const bool counted = c.op == kStrncpy || c.op == kStrncat;
    if (!own.empty()) std::strncat(lib.data(), own.data(), counted ? c.count : own.size());
    if (std::strcmp(lib.data(), bytes(mem) + c.dest) != 0) violated("differs from strncat");
  }
}

// ---- formatting --------------------------------------------------------------------------------

// A format of pieces that take an int, a string or nothing; the arguments go in fixed slots as
// 64-bit integers (the calling convention passes ints and pointers alike), so sprintf_s and the C
// library read the same values.
void fuzz_format(FuzzInput* in) {
  struct Piece {
    const char* text;
    char arg;  // 'i' an int, 's' a string, 0 none
  };
  static const Piece kPieces[] = {{"%d", 'i'},  {"%5d", 'i'},   {"%-4x", 'i'}, {"%s", 's'},
                                  {"%.3s", 's'}, {"%8s", 's'},  {"%c", 'i'},   {"%%", 0},
                                  {"ab", 0},     {" ", 0},      {"%05u", 'i'}, {"%+d", 'i'},
                                  {"%o", 'i'},   {"%-12s|", 's'}};
  constexpr int kSlots = 8;
  std::string format;
  std::vector<std::string> strings;
  strings.reserve(kSlots);
  uintptr_t args[kSlots] = {};
  int n_args = 0;
  const size_t pieces = in->below(8);
  for (size_t i = 0; i < pieces; ++i) {
    const Piece& p = kPieces[in->below(sizeof(kPieces) / sizeof(kPieces[0]))];
    if (p.arg != 0 && n_args == kSlots) continue;
    format += p.text;
    if (p.arg == 'i') {
      const int v = static_cast<int>(in->below(65536)) - 32768;
      const int value = p.text[1] == 'c' ? 0x20 + (v & 0x3f) : v;  // %c: a printable character
      args[n_args++] = static_cast<uintptr_t>(static_cast<intptr_t>(value));
    } else if (p.arg == 's') {
      std::string s = in->text();
      std::replace(s.begin(), s.end(), '\0', '_');
      strings.push_back(s);
      args[n_args++] = reinterpret_cast<uintptr_t>(strings.back().c_str());
    }
  }
#define KVFLASH_FUZZ_ARGS args[0], args[1], args[2], args[3], args[4], args[5], args[6], args[7]
  char full[512];
  const int len = std::snprintf(full, sizeof(full), format.c_str(), KVFLASH_FUZZ_ARGS);
  if (len < 0 || static_cast<size_t>(len) >= sizeof(full)) return;
  const size_t dest_max = pick_size(in, 40);
  const size_t count = in->rare(4) ? static_cast<size_t>(-1) : pick_size(in, 48);
  const int which = static_cast<int>(in->below(3));
  static const char* const kNames[] = {"sprintf_s", "snprintf_s", "snprintf_truncated_s"};
  set_context(std::string(kNames[which]) + " format '" + format + "' destMax " +
              std::to_string(dest_max) + " count " + std::to_string(count));
  // A destination of min(destMax, 41) bytes: a larger destMax is refused before any write.
  const bool usable = dest_max > 0 && dest_max <= kLimit;
  Guarded dest(usable ? dest_max : 41, 0, 'Z');
  char* d = bytes(dest);
  int rc;
  switch (which) {
    case 0: rc = sprintf_s(d, dest_max, format.c_str(), KVFLASH_FUZZ_ARGS); break;
    case 1: rc = snprintf_s(d, dest_max, count, format.c_str(), KVFLASH_FUZZ_ARGS); break;
    default: rc = snprintf_truncated_s(d, dest_max, format.c_str(), KVFLASH_FUZZ_ARGS);
  }
#undef KVFLASH_FUZZ_ARGS
  dest.check_guards("destination");
  if (!usable) {
    if (rc != -1) violated("a destMax out of range was accepted");
    for (size_t i = 0; i < dest.size(); ++i)
      if (d[i] != 'Z') violated("a refused call wrote its destination");
    return;
  }
  const auto n = static_cast<size_t>(len);
  if (std::memchr(d, '\0', dest_max) == nullptr) violated("the destination is not terminated");
  const std::string got(d);
  std::string want;
  int want_rc;
  if (which == 1 && count > kLimit - 1 && count != static_cast<size_t>(-1)) {
    want_rc = -1;  // count out of range
  } else if (which == 1 && count < dest_max) {
    want = std::string(full, std::min(n, count));  // truncated to count, reported as -1
    want_rc = n <= count ? len : -1;
  } else if (which == 2) {
    want = std::string(full, std::min(n, dest_max - 1));
    want_rc = static_cast<int>(want.size());
  } else if (n < dest_max) {
    want = full;
    want_rc = len;
  } else {
    want_rc = -1;  // does not fit: ""
  }
  if (rc != want_rc || got != want)
    violated("gave " + std::to_string(rc) + " '" + got + "', expected " + std::to_string(want_rc) +
             " '" + want + "'");
}

// ---- scanning -----------------------------------------------------------------------------------

struct ScanPiece {
  const char* text;
  bool dest;    // takes a destination
  bool buffer;  // %c / %s / %[: a size follows the destination
  bool count;   // %n: stores without being counted
};
const ScanPiece kScanPieces[] = {
    {"%d", true, false, false},    {"%3i", true, false, false},  {"%x", true, false, false},
    {"%lld", true, false, false},  {"%hhu", true, false, false}, {"%lf", true, false, false},
    {"%s", true, true, false},     {"%4s", true, true, false},   {"%c", true, true, false},
    {"%3c", true, true, false},    {"%[a-f]", true, true, false}, {"%[^ ,]", true, true, false},
    {"%*s", false, false, false},  {"%*d", false, false, false}, {"%n", true, false, true},
    {",", false, false, false},    {" ", false, false, false},   {"%%", false, false, false},
    {"x", false, false, false}};

constexpr char kUnwritten = 'Z';  // never in the scanned input

void fuzz_scan(FuzzInput* in) {
  constexpr size_t kDests = 6;
  constexpr size_t kSlot = 64;  // more than any field of the input below
  std::string format;
  std::vector<const ScanPiece*> used;  // the pieces that take a destination, in order
  const size_t pieces = in->below(9);
  for (size_t i = 0; i < pieces; ++i) {
    const ScanPiece& p = kScanPieces[in->below(sizeof(kScanPieces) / sizeof(kScanPieces[0]))];
    if (p.dest && used.size() == kDests) continue;
    format += p.text;
    if (p.dest) used.push_back(&p);
  }
  std::string input;
  static const char kAlphabet[] = "abcdefxyz0123456789 ,%-+.\t";
  const size_t len = in->below(48);
  for (size_t i = 0; i < len; ++i) input.push_back(kAlphabet[in->below(sizeof(kAlphabet) - 1)]);
  set_context("sscanf_s(\"" + input + "\", \"" + format + "\")");

  // The arguments go in fixed slots as 64-bit integers: pointers, and the sizes sscanf_s takes
  // after each buffer (the calling convention passes both alike).
  auto scan = [&](bool secure, const std::vector<char*>& dests, const std::vector<size_t>& sizes) {
    uintptr_t a[2 * kDests] = {};
    size_t n = 0;
    for (size_t k = 0; k < used.size(); ++k) {
      a[n++] = reinterpret_cast<uintptr_t>(dests[k]);
      if (secure && used[k]->buffer) a[n++] = sizes[k];
    }
    if (secure)
      return sscanf_s(input.c_str(), format.c_str(), a[0], a[1], a[2], a[3], a[4], a[5], a[6],
                      a[7], a[8], a[9], a[10], a[11]);
    return std::sscanf(input.c_str(), format.c_str(), a[0], a[1], a[2], a[3], a[4], a[5], a[6],
                       a[7], a[8], a[9], a[10], a[11]);
  };
  std::vector<std::vector<char>> lib(kDests, std::vector<char>(kSlot, kUnwritten));
  std::vector<std::vector<char>> big = lib;
  std::vector<char*> lib_p, big_p;
  for (size_t k = 0; k < kDests; ++k) {
    lib_p.push_back(lib[k].data());
    big_p.push_back(big[k].data());
  }
  const int r_lib = scan(false, lib_p, {});
  const int r_big = scan(true, big_p, std::vector<size_t>(kDests, kSlot));
  if (input.empty()) {
    if (r_big != -1) violated("an empty input gave " + std::to_string(r_big));
    return;
  }
  if (r_big != r_lib)
    violated("returned " + std::to_string(r_big) + ", the C library " + std::to_string(r_lib));
  if (big != lib) violated("stored other values than the C library");

  // Small buffers, each exactly its size and guarded; numbers and counts keep their slots.
  std::vector<size_t> sizes(kDests, kSlot);
  std::vector<std::unique_ptr<Guarded>> small(kDests);
  std::vector<std::vector<char>> plain(kDests, std::vector<char>(kSlot, kUnwritten));
  std::vector<char*> small_p;
  for (size_t k = 0; k < kDests; ++k) {
    if (k < used.size() && used[k]->buffer) {
      sizes[k] = 1 + in->below(8);
      small[k] = std::make_unique<Guarded>(sizes[k], 0, static_cast<uint8_t>(kUnwritten));
      small_p.push_back(bytes(*small[k]));
    } else {
      small_p.push_back(plain[k].data());
    }
  }
  const int r_small = scan(true, small_p, sizes);
  for (size_t k = 0; k < kDests; ++k)
    if (small[k]) small[k]->check_guards("buffer " + std::to_string(k));

  // What a field of the large run stored: %c its characters, %s and %[ with the terminator.
  auto stored = [&](size_t k) {
    if (used[k]->text[std::strlen(used[k]->text) - 1] != 'c') return std::strlen(big[k].data()) + 1;
    size_t n = 0;
    while (n < kSlot && big[k][n] != kUnwritten) ++n;
    return n;
  };
  // Walk what the large run assigned: the small run stops at the first field that does not fit.
  int assigned = 0;
  size_t reached = 0, stop = used.size();
  for (; reached < used.size(); ++reached) {
    const ScanPiece& p = *used[reached];
    if (!p.count && assigned >= std::max(r_big, 0)) break;
    if (p.buffer && stored(reached) > sizes[reached]) {
      stop = reached;
      break;
    }
    if (!p.count) ++assigned;
  }
  const int want = stop < used.size() ? assigned : r_big;
  if (r_small != want)
    violated("small buffers: returned " + std::to_string(r_small) + ", expected " +
             std::to_string(want));
  for (size_t k = 0; k < used.size(); ++k) {
    const char* got = small_p[k];
    const size_t n = sizes[k];
    if (k < reached) {
      const size_t same = used[k]->buffer ? stored(k) : kSlot;
      if (std::memcmp(got, big[k].data(), same) != 0)
        violated("small buffers: destination " + std::to_string(k) + " differs");
      for (size_t i = same; i < n; ++i)
        if (got[i] != kUnwritten) violated("small buffers: wrote past a field");
    } else {
      for (size_t i = k == stop ? 1 : 0; i < n; ++i)
        if (got[i] != kUnwritten) violated("small buffers: wrote a field after the stop");
      if (k == stop && got[0] != '\0') violated("the field that does not fit did not store \"\"");
    }
  }
}

}  // namespace
}  // namespace kvflash::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kvflash::fuzz;
  FuzzInput in(data, size);
  ++stats().inputs;
  switch (in.below(3)) {
    case 0: fuzz_memory_and_strings(&in); break;
    case 1: fuzz_format(&in); break;
    default: fuzz_scan(&in); break;
  }
  ++stats().compared;
  return 0;
}
