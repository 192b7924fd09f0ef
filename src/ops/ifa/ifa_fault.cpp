#include "ops/ifa/ifa_fault.hpp"

#include "core/strings.hpp"
#include "ops/ifa/ifa_problem.hpp"

namespace kvflash::ifa {

std::string ifa_fault_message(const IfaFault& f) {
  using core::str;
  const std::string b = str(f.batch);
  if (f.kind == core::kIfaBatchFaultBlockId) {
    return "block_table[" + b + "][" + str(f.slot) + "] (" + str(f.id) +
           ") is not a valid block id: expected [0, " + str(f.num_blocks) + ") for the " +
           str(f.len) + " tokens of batch " + b + "; the outputs of batch " + b + " are NaN";
  }
  return "kv_padding_size (" + str(f.pad) + ") puts batch " + b + "'s " + str(f.len) +
         " positions at [" + str(f.begin) + ", " + str(f.begin + f.len) +
         "), beyond the atten_mask's last dim (" + str(f.mask_cols) + "); the outputs of batch " +
         b + " are NaN";
}

}  // namespace kvflash::ifa
