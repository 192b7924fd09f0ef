// Backends as implementation lists (oneDNN style): each operator has one ordered list of
// implementations, and a plan runs on the first entry of its device that is available now.
// Adding a backend (CUDA) adds entries to the lists; validation, planning, the reference and the
// tests do not change.
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>

#include "kvflash/status.hpp"
#include "kvflash/tensor.hpp"

namespace kvflash::core {

template <typename Problem, typename Args>
struct Backend {
  const char* name;
  DeviceType device;  ///< the tensors it runs on
  /// Whether it can run now (e.g. the CPU supports its instruction set and no cap excludes it).
  bool (*available)();
  /// Bytes of workspace for p: a function of p only.
  size_t (*workspace_size)(const Problem& p);
  /// Runs p on args' tensors (already matched against the plan) with num_threads workers (host:
  /// 0 = default) on stream (null for host tensors). Bad device data is reported through the
  /// status; the affected rows get the documented fault result.
  Status (*run)(const Problem& p, const Args& args, int num_threads, void* workspace, void* stream);
};

/// The first available entry of list for device, or nullptr.
template <typename B>
const B* select_backend(std::span<const B> list, DeviceType device) {
  for (const B& b : list) {
    if (b.device == device && b.available()) return &b;
  }
  return nullptr;
}

/// The workspace a plan on device reserves: the most any entry of that device needs, so the size
/// does not change when a cap (or a later CPU feature check) picks another entry. false if no
/// entry runs on device.
template <typename B, typename Problem>
bool plan_workspace(std::span<const B> list, DeviceType device, const Problem& p, size_t* bytes) {
  bool any = false;
  *bytes = 0;
  for (const B& b : list) {
    if (b.device != device) continue;
    any = true;
    *bytes = std::max(*bytes, b.workspace_size(p));
  }
  return any;
}

}  // namespace kvflash::core
