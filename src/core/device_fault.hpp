// How a run on a device stream reports bad device data without synchronising the host: one
// fixed-size record (FaultRecord) at one place of every device backend's workspace, decoded by
// one hook of the entry that ran (core::Backend::fault_status) into the status and the message
// the CPU backend gives for the same data.
//
// On the CPU a run reads block tables and lengths itself and returns the fault status. A CUDA run
// only queues kernels: they find bad data on the device and write the record at the aligned start
// of the run's workspace (fault_record_at), which nobody can read until the stream has executed
// them. Two readers copy it in stream order and decode it with the entry's hook:
//  - C++ callers: IfaPlan::status / SfaPlan::status (core::PlanHandle::status), after a run;
//  - the aclnn CUDA runtime (src/aclnn/runtime_cuda.cpp): phase 2 queues a copy of the record into
//    a pinned slot of sizeof(FaultRecord) (the workspace may be reused by the next call before
//    anyone synchronises), and aclrtSynchronizeStream decodes it (507015 for bad device data).
// Plain data and KVFLASH_HD functions: the kernels write the record with the same definitions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "core/hd.hpp"
#include "core/workspace_arena.hpp"
#include "kvflash/status.hpp"

namespace kvflash::core {

/// The operator that wrote a record: a record of another operator does not decode.
enum FaultOp : int32_t { kFaultOpNone = 0, kFaultOpIfa = 1, kFaultOpSfa = 2 };

/// What was bad, with the fields each kind sets (the others keep their defaults).
enum FaultKind : int32_t {
  kFaultNone = 0,
  /// A block-table id outside [0, limit) that a run's attended range uses: batch, slot (the
  /// block-table column), value (the id), limit (the block count). IFA: len (the batch's kv_len),
  /// begin (its first attended position); SFA: row (the first query row that selects it).
  kFaultBlockId = 1,
  /// IFA: kv_padding_size[0] (value) puts batch's len positions at [begin, begin + len), past the
  /// atten_mask's last dim (limit).
  kFaultPaddingPastMask = 2,
  /// SFA: actual_seq_lengths_query[batch] / actual_seq_lengths_kv[batch] (value) out of range;
  /// limit: the largest value an entry may hold. Prefix sums (TND): begin is the entry before it,
  /// and value < begin means the sums decrease; otherwise value > limit.
  kFaultQueryLength = 3,
  kFaultKvLength = 4,
};

/// One run's report of the first bad device data it found (the entry the CPU backend names).
struct FaultRecord {
  int32_t status = KVFLASH_SUCCESS;  ///< kSuccess: no fault; else the CPU backend's status (161002)
  int32_t op = kFaultOpNone;
  int32_t kind = kFaultNone;
  int32_t reserved = 0;
  int64_t batch = 0;
  int64_t row = -1;
  int64_t slot = 0;
  int64_t value = 0;
  int64_t limit = 0;
  int64_t len = 0;
  int64_t begin = 0;
};
static_assert(std::is_trivially_copyable_v<FaultRecord> && std::is_standard_layout_v<FaultRecord>);
static_assert(sizeof(FaultRecord) == 72, "one layout for every backend and reader");

/// Every device backend's workspace layout is a WorkspaceArena of this alignment whose first
/// region is the record (take_fault_record): so fault_record_at finds it from the workspace
/// pointer alone, whatever the operator, backend or problem.
inline constexpr size_t kFaultRecordAlign = 256;

/// The layout's first region (offset 0 from the aligned base).
KVFLASH_HD inline size_t take_fault_record(WorkspaceArena& arena) {
  return arena.take_array<FaultRecord>(1);
}

/// The record of a device backend's workspace ws (device memory: not to be read on the host).
KVFLASH_HD inline FaultRecord* fault_record_at(void* ws) {
  return reinterpret_cast<FaultRecord*>(align_base(ws, kFaultRecordAlign));
}
KVFLASH_HD inline const FaultRecord* fault_record_at(const void* ws) {
  return reinterpret_cast<const FaultRecord*>(align_base(ws, kFaultRecordAlign));
}

/// A record that says "fault" with the fields still at their defaults: its writer fills them in.
KVFLASH_HD inline FaultRecord fault_of(FaultOp op, FaultKind kind, int64_t batch) {
  FaultRecord r;
  r.status = KVFLASH_ERR_PARAM_INVALID;
  r.op = op;
  r.kind = kind;
  r.batch = batch;
  return r;
}

/// What a decoder says of a record it cannot read (another operator's, an unknown kind or
/// status: a device backend's bug, never bad user data): records "[op] the <device> run left a
/// fault record that cannot be decoded (status s, operator o, kind k)" and returns kRuntime.
Status unreadable_fault(const char* op, const FaultRecord& r);

}  // namespace kvflash::core
