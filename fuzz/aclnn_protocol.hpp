// The aclnn two-phase protocol as every aclnn fuzz target drives it (docs/testing.md, "Fuzz targets"),
// from what its phase-1 call returned: the phase-1 invariants, then for an accepted call a refused
// phase 2 first (workspace too small or null, a dead stream, another operator's phase 2: the
// executor must stay usable), the run, a repeat of a repeatable executor or a reuse of a consumed
// one (refused), and the stream's synchronisation, where bad device data surfaces as 507015 with
// the run's status in the message. The targets differ only in how they build the call and check
// its outputs.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "fuzz_input.hpp"

namespace kvflash::fuzz {

using AclnnPhase2 = aclnnStatus (*)(void*, uint64_t, aclOpExecutor*, aclrtStream);

/// The phase-1 slots of one call: a target initialises them to these values and passes their
/// addresses (or, rarely, null), so that a failed phase 1 can be seen to leave them alone.
struct AclnnSlots {
  AclnnSlots() = default;
  AclnnSlots(const AclnnSlots&) = delete;  // the slots point into the object
  AclnnSlots& operator=(const AclnnSlots&) = delete;
  static constexpr uint64_t kUnsetWorkspace = 12345;
  uint64_t ws_size = kUnsetWorkspace;
  aclOpExecutor* exec = reinterpret_cast<aclOpExecutor*>(uintptr_t{0xdead0});
  uint64_t* ws_slot = &ws_size;
  aclOpExecutor** exec_slot = &exec;
  /// Either slot null with probability 1/32 each (phase 1 must then answer 161001).
  void maybe_null(FuzzInput& in) {
    if (in.rare(32)) ws_slot = nullptr;
    if (in.rare(32)) exec_slot = nullptr;
  }
};

/// What the protocol needs to know of the operator and of the target.
struct AclnnProtocol {
  const char* op = nullptr;                         ///< the message prefix of phase 2 ("[op] ...")
  const std::vector<const char*>* names = nullptr;  ///< argument names a message may name
  AclnnPhase2 phase2 = nullptr;                     ///< the version's phase 2
  AclnnPhase2 foreign = nullptr;  ///< another operator's phase 2, which must refuse the executor
  /// False: the workspace phase 1 asked for is more than the target backs (planned only).
  std::function<bool(uint64_t ws_size)> affordable;
  /// Optional: checks what the call wrote outside its outputs (ran: phase 2 ran; what: when).
  std::function<void(bool ran, const char* what)> check_memory;
  /// Optional: destroys every argument handle (executors keep what they need).
  std::function<void()> destroy_handles;
};

/// What phase 1 did.
struct AclnnPhase1 {
  aclnnStatus status = 0;
  const char* op = nullptr;    ///< its message prefix (null: AclnnProtocol::op)
  bool null_required = false;  ///< a required argument or slot was null: 161001 is the answer
  bool broken = false;         ///< a handle was destroyed or foreign: it must be refused
};

/// A run that reached the stream's synchronisation.
struct AclnnRun {
  int64_t status = 0;   ///< 0, or 161002 when synchronisation reported bad device data
  std::string message;  ///< that report's message
};

/// Checks phase 1 and drives phase 2 (the invariants above; a violation aborts). nullopt when
/// the call ends before a run: phase 1 refused it (stats().refused) or it was planned only
/// (stats().planned_only).
std::optional<AclnnRun> drive_aclnn(FuzzInput& in, const AclnnProtocol& p,
                                    const AclnnPhase1& phase1, const AclnnSlots& slots);

}  // namespace kvflash::fuzz
