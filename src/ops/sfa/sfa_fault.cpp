#include "ops/sfa/sfa_fault.hpp"

#include "core/error.hpp"
#include "core/strings.hpp"
#include "ops/sfa/sfa_validate.hpp"

namespace kvflash::sfa {
namespace {

using core::str;

std::string length_message(const core::SfaProblem& p, const core::FaultRecord& r) {
  const bool query = r.kind == core::kFaultQueryLength;
  const std::string name = query ? "actual_seq_lengths_query" : "actual_seq_lengths_kv";
  const bool prefix = query ? p.query_tnd : p.kv_tnd;
  const char* limit_name = query      ? (p.query_tnd ? "query T1" : "query S1")
                           : p.kv_tnd ? "key T2"
                           : p.paged  ? "block_table columns * block_size"
                                      : "key S2";
  const std::string entry = name + "[" + str(r.batch) + "] (" + str(r.value) + ")";
  if (!prefix) {
    return entry + " must be in [0, " + limit_name + " = " + str(r.limit) + "]";
  }
  if (r.value < r.begin) {
    return name + " must be non-decreasing prefix sums starting at >= 0; entry " + str(r.batch) +
           " (" + str(r.value) + ") < " + str(r.begin);
  }
  return entry + " exceeds " + limit_name + " (" + str(r.limit) + ")";
}

}  // namespace

std::string sfa_fault_message(const core::SfaProblem& p, const core::FaultRecord& r) {
  if (r.kind != core::kFaultBlockId) return length_message(p, r);
  const std::string row = str(r.row);
  return "block_table[" + str(r.batch) + "][" + str(r.slot) + "] (" + str(r.value) +
         ") is used by query row " + row + " and must be a block id in [0, " + str(r.limit) +
         "); the outputs of row " + row + " are NaN";
}

Status sfa_fault_status(const core::SfaProblem& p, const core::FaultRecord& r) {
  if (r.status == KVFLASH_SUCCESS && r.kind == core::kFaultNone) return Status::kSuccess;
  if (r.status != KVFLASH_ERR_PARAM_INVALID || r.op != core::kFaultOpSfa ||
      (r.kind != core::kFaultBlockId && r.kind != core::kFaultQueryLength &&
       r.kind != core::kFaultKvLength)) {
    return core::unreadable_fault(kOpName, r);
  }
  return core::fail(Status::kInvalid, kOpName, sfa_fault_message(p, r));
}

}  // namespace kvflash::sfa
