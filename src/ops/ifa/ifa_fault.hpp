// A run's report of bad device data, written once for every backend: the CPU prologue and the CUDA
// fault record describe the first faulted batch with these fields, and the message is the same
// text on both.
#pragma once

#include <cstdint>
#include <string>

namespace kvflash::ifa {

struct IfaFault {
  uint8_t kind = 0;  ///< core::kIfaBatchFaultBlockId or core::kIfaBatchFaultMaskRange
  int64_t batch = 0;
  int64_t len = 0;    ///< kv_len of the batch
  int64_t begin = 0;  ///< first attended position (after left padding)
  // kIfaBatchFaultBlockId
  int64_t slot = 0;  ///< block-table column of the first bad id in the attended range
  int64_t id = 0;    ///< the id found there
  int64_t num_blocks = 0;
  // kIfaBatchFaultMaskRange
  int64_t pad = 0;  ///< kv_padding_size[0] as read
  int64_t mask_cols = 0;
};

/// "block_table[b][slot] (id) is not a valid block id: ..." / "kv_padding_size (pad) puts batch
/// b's ...": what the run's status message says (without the operator prefix).
std::string ifa_fault_message(const IfaFault& f);

}  // namespace kvflash::ifa
