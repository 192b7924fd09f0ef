#include "ops/ifa/ifa_fault.hpp"

#include "core/strings.hpp"
#include "ops/ifa/ifa_error.hpp"

namespace kvflash::ifa {

std::string ifa_fault_message(const core::FaultRecord& r) {
  using core::str;
  const std::string b = str(r.batch);
  if (r.kind == core::kFaultBlockId) {
    return "block_table[" + b + "][" + str(r.slot) + "] (" + str(r.value) +
           ") is not a valid block id: expected [0, " + str(r.limit) + ") for the " + str(r.len) +
           " tokens of batch " + b + "; the outputs of batch " + b + " are NaN";
  }
  return "kv_padding_size (" + str(r.value) + ") puts batch " + b + "'s " + str(r.len) +
         " positions at [" + str(r.begin) + ", " + str(r.begin + r.len) +
         "), beyond the atten_mask's last dim (" + str(r.limit) + "); the outputs of batch " + b +
         " are NaN";
}

Status ifa_fault_status(const core::FaultRecord& r) {
  if (r.status == KVFLASH_SUCCESS && r.kind == core::kFaultNone) return Status::kSuccess;
  if (r.status != KVFLASH_ERR_PARAM_INVALID || r.op != core::kFaultOpIfa ||
      (r.kind != core::kFaultBlockId && r.kind != core::kFaultPaddingPastMask)) {
    return core::unreadable_fault(kIfaOp, r);
  }
  return invalid(ifa_fault_message(r));
}

}  // namespace kvflash::ifa
