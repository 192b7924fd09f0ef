// Decoding a fuzz input into one IncreFlashAttention call, and the checks of its result.
//
// The input first describes a small, valid case (testing::IfaCase: layout, dtypes, heads, head
// dim, lengths, KV mode, mask, pse, quantisation, padding, strides), which the shared case builder
// turns into data (every slot the operator must not read holds NaN/inf). Then it lists mutations:
// optional tensors added or removed, key/value list changes, metadata of any tensor (a dim, a
// stride, the offset, the rank, the dtype, a null pointer, another device), attributes, the
// actual_seq_lengths array, device data (block ids, kv_padding_size) set to -1, out-of-range,
// INT32_MAX and other specials, and NaN/inf written into attended data. Every output is given a
// guarded buffer.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "fuzz_input.hpp"
#include "kvflash/ifa.hpp"
#include "mutate.hpp"
#include "support/ifa_cases.hpp"

namespace kvflash::fuzz {

/// Which features an entry point can pass (the aclnn versions pass subsets).
struct IfaFeatures {
  bool pse = true, quant = true, antiquant_paged = true, padding = true, extensions = true;
  static IfaFeatures for_version(int version);  // aclnn V1..V4 (no extensions)
};

struct IfaFuzzCase {
  testing::IfaCase spec;
  std::unique_ptr<testing::IfaCaseData> data;
  IfaArgs args;  ///< the mutated arguments (borrowing data's and mem's buffers)
  CaseMemory mem;
  testing::TestRng rng{1};
  /// False when the inputs leave the reference's well-conditioned range (a huge or non-finite
  /// scale_value): the output is then not compared, every other invariant still holds.
  bool differential = true;
  std::vector<Slot> slots();
};

/// The argument names IFA messages may use (C++ and aclnn spellings).
const std::vector<const char*>& ifa_names();

/// Decodes a case; false when the described case is not buildable (the input is skipped).
bool decode_ifa(FuzzInput& in, const IfaFeatures& features, IfaFuzzCase* f);

/// Whether a planned call is small enough to run and check (workspace and work bounded), and
/// every tensor is backed by memory.
bool ifa_affordable(const IfaFuzzCase& f, const IfaArgs& args, uint64_t workspace_size);

/// After a run of `args` that returned `status` (the run's own, or 161002 for a fault reported by
/// the stream): the status must be what the device data implies (161002 exactly when a batch
/// references a bad block id or its padded range leaves the mask), faulted batches must be NaN,
/// and every other output must match the fp64 reference within the documented tolerance.
void check_ifa_run(IfaFuzzCase& f, const IfaArgs& args, int64_t status, const std::string& where);

}  // namespace kvflash::fuzz
