// What every fuzz target shares: memory with guard bytes, snapshots of inputs and outputs, the
// status and message invariants, and the failure report (a failed invariant aborts, which
// libFuzzer records as a crash with the input that caused it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "element_access.hpp"  // reference/
#include "kvflash/tensor.hpp"

namespace kvflash::fuzz {

/// Prints "fuzz invariant violated: <what>" with the current input's description and aborts.
[[noreturn]] void violated(const std::string& what);
/// A description of the input being run, printed by violated() (the case name and mutations).
void set_context(std::string context);
void add_context(const std::string& note);
const std::string& context();

/// Where the inputs of a run went: counted always, printed at exit when KVFLASH_FUZZ_STATS is set
/// (docs/testing.md reports them for the campaign).
struct Stats {
  uint64_t inputs = 0, skipped = 0, refused = 0, planned_only = 0, ran = 0, faulted = 0,
           compared = 0;
};
Stats& stats();

/// Bytes with kGuard guard bytes on each side. The guards hold a pattern and are poisoned under
/// AddressSanitizer, so any access to them is reported at once; check_guards() catches writes in
/// builds without it. The usable bytes start `misalign` bytes after a 64-byte boundary.
class Guarded {
 public:
  static constexpr size_t kGuard = 64;
  static constexpr uint8_t kPattern = 0xA5;
  explicit Guarded(size_t bytes, size_t misalign = 0, uint8_t fill = 0);
  ~Guarded();
  Guarded(const Guarded&) = delete;
  Guarded& operator=(const Guarded&) = delete;

  std::byte* data() { return data_; }
  const std::byte* data() const { return data_; }
  size_t size() const { return size_; }
  /// Fails (violated) if a guard byte changed; `what` names the buffer.
  void check_guards(const std::string& what) const;

 private:
  std::byte* raw_ = nullptr;
  std::byte* data_ = nullptr;
  size_t size_ = 0, before_ = 0, total_ = 0;
};

/// Bytes from view.data to the end of the view's furthest element (0 for an empty view), or
/// nullopt when a dim, stride or the offset is negative, the dtype is unknown, or it overflows.
std::optional<uint64_t> view_bytes(const TensorView& v);

/// A read-only page of memory that faults on any access: the data of views that no call may
/// read (metadata-only phases, views too large to back).
void* unreadable_page();

/// The element count of a view, or -1 when a dim is negative or the product overflows int64.
int64_t safe_numel(const TensorView& v);

/// A value other than v, next to it, that does not overflow (v + 1, or v - 1 at the top): for
/// the "other metadata than the plan's" checks, whose fields the decoder may have set anywhere.
inline int64_t another_value(int64_t v) { return v == INT64_MAX ? v - 1 : v + 1; }

/// FNV-1a over bytes.
uint64_t hash_bytes(const void* p, size_t n);

/// Watches memory that a call must not change (inputs, whole outputs of a failing call).
class Unchanged {
 public:
  void add(const void* p, size_t n, std::string name);
  /// Fails naming the first region whose bytes changed.
  void check(const std::string& when) const;

 private:
  struct Region {
    const void* p;
    size_t n;
    uint64_t hash;
    std::string name;
  };
  std::vector<Region> regions_;
};

/// An output buffer: guarded, and the view a successful call may write.
struct OutputBuffer {
  std::unique_ptr<Guarded> mem;
  std::vector<std::byte> before;  ///< contents before the call
  std::string name;
  /// Fails unless the guards are intact and every byte outside `view`'s elements (all bytes when
  /// `written` is false) is as before the call.
  void check(const TensorView& view, bool written) const;
};

/// The aclnn status codes a call may return (docs/api.md): 0, 161001, 161002, 361001.
bool documented_status(int64_t status);

/// Fails unless `status` is documented and, when it is not 0, `message` starts with "[<op>]"
/// (or "[acl]" for the runtime) and names one of `names` as a whole word.
void check_status(int64_t status, const char* message, const char* op,
                  const std::vector<const char*>& names, const std::string& where);

/// True if `text` contains `word` delimited by non-identifier characters.
bool has_word(const std::string& text, const std::string& word);

// Element access of the oracle (reference/element_access.hpp): one implementation for the
// harness, the tests and the reference.
using reference::element_at_flat;
using reference::load_element;
using reference::store_element;
using reference::store_element_flat;

}  // namespace kvflash::fuzz
