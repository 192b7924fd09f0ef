// Backends as implementation lists (oneDNN style): each operator has one ordered list of
// implementations (src/backends/lists.cpp), and a plan runs on the first entry of its device that
// is available now. An entry is the implementation: its run is bound to its own kernels (a CPU
// entry to one instruction set's function table), so nothing inside it chooses again. Adding a
// backend adds entries to the lists; validation, planning, binding, the reference and the tests do
// not change.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <span>

#include "core/device_fault.hpp"
#include "kvflash/status.hpp"
#include "kvflash/tensor.hpp"

namespace kvflash::core {

/// What a backend's run gets besides the plan's problem and the run's bound data.
struct RunContext {
  int num_threads = 0;        ///< host workers (0 = the library default); device entries ignore it
  void* workspace = nullptr;  ///< at least the plan's workspace_size bytes, any alignment
  size_t workspace_size = 0;
  void* stream = nullptr;  ///< the device stream (null for host tensors, which run synchronously)
};

template <typename Problem, typename Data>
struct Backend {
  const char* name;
  DeviceType device;  ///< the tensors it runs on
  /// Whether it can run now (e.g. the CPU supports its instruction set and no cap excludes it).
  /// When not, and why is not null, *why is set to the reason (a string with static storage).
  bool (*available)(const char** why);
  /// Whether it implements everything problem p asks for (oneDNN's implementation lists skip an
  /// entry that cannot run a descriptor the same way); when not, and why is not null, *why names
  /// the feature (a string with static storage). Null: every problem of its operator. An entry
  /// never ignores a field of p it does not implement: it says so here instead.
  bool (*supports)(const Problem& p, const char** why);
  /// Bytes of workspace for p: a function of p only.
  size_t (*workspace_size)(const Problem& p);
  /// Runs p on d (bound from arguments already matched against the plan). A host entry reports
  /// bad device data through the status; a device entry, which returns once its work is queued,
  /// writes a FaultRecord at the start of ctx.workspace (core/device_fault.hpp). Either way the
  /// affected rows get the documented fault result.
  Status (*run)(const Problem& p, const Data& d, const RunContext& ctx);
  /// The fault hook of a device entry: the status of a host copy of the record its run wrote,
  /// kSuccess for "no fault", else what the CPU backend returns for the same data, with the same
  /// message (recorded with core::fail). Null for entries whose run returns every fault itself
  /// (the CPU entries): they write no record.
  Status (*fault_status)(const Problem& p, const FaultRecord& record);
};

/// The entry name tests force (tests/hooks/force_backend.hpp sets it): when not null, a plan runs
/// only the entry of that name (if it is in the list of the plan's device and available;
/// otherwise none). Process-wide.
std::atomic<const char*>& forced_backend_name();
/// forced_backend_name()'s value.
inline const char* forced_backend() {
  return forced_backend_name().load(std::memory_order_relaxed);
}

/// Whether b is the entry of that name (helper of select_backend).
bool backend_named(const char* entry, const char* name);

/// Whether entry b runs problem p (its supports hook, when it has one).
template <typename B, typename Problem>
bool entry_supports(const B& b, const Problem& p, const char** why) {
  return b.supports == nullptr || b.supports(p, why);
}

/// The entry a run of p on device uses: the first available one of that device that supports p
/// (or the forced one), or nullptr.
template <typename B, typename Problem>
const B* select_backend(std::span<const B> list, DeviceType device, const Problem& p) {
  const char* forced = forced_backend();
  for (const B& b : list) {
    if (b.device != device || (forced != nullptr && !backend_named(b.name, forced))) continue;
    if (b.available(nullptr) && entry_supports(b, p, nullptr)) return &b;
  }
  return nullptr;
}

/// Whether KVFLASH_VERBOSE names "dispatch" (a comma-separated list; read once per process).
bool verbose_dispatch();

/// One line of KVFLASH_VERBOSE=dispatch output, built in a fixed buffer (no allocation) and
/// written to stderr at once, so lines of concurrent runs do not interleave (backend.cpp).
class DispatchLine {
 public:
  DispatchLine(const char* op, const char* shape);
  void skipped(const char* name, const char* why);
  /// Ends the line with the entry that ran (null: none was available) and prints it.
  void print(const char* chosen);

 private:
  void append(const char* text);
  char buf_[1024];
  size_t n_ = 0;
};

/// Prints "kvflash dispatch: <op> (<shape>): <entry> skipped (<why>), ... ran <chosen>" (or "no
/// entry available"), naming the entries of device before the chosen one in list order.
template <typename B, typename Problem>
void print_dispatch(const char* op, const char* shape, std::span<const B> list, DeviceType device,
                    const Problem& p, const B* chosen) {
  DispatchLine line(op, shape);
  for (const B& b : list) {
    if (&b == chosen) break;
    if (b.device != device) continue;
    const char* why = "not available";
    if (b.available(&why)) {
      why = "does not support this problem";
      if (entry_supports(b, p, &why)) why = "another entry is forced (core::forced_backend)";
    }
    line.skipped(b.name, why);
  }
  line.print(chosen != nullptr ? chosen->name : nullptr);
}

/// The workspace a plan on device reserves: the most any entry of that device that supports p
/// needs, so the size does not change when a cap (or a later CPU feature check) picks another
/// entry. false if no entry of device supports p.
template <typename B, typename Problem>
bool plan_workspace(std::span<const B> list, DeviceType device, const Problem& p, size_t* bytes) {
  bool any = false;
  *bytes = 0;
  for (const B& b : list) {
    if (b.device != device || !entry_supports(b, p, nullptr)) continue;
    any = true;
    *bytes = std::max(*bytes, b.workspace_size(p));
  }
  return any;
}

}  // namespace kvflash::core
