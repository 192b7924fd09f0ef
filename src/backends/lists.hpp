// Every operator's implementation list (core/backend.hpp), best first: in builds with the CUDA
// backend its entries, then the CPU entries, one per instruction-set level (avx512bf16, avx512,
// avx2, scalar), which all need the same workspace; the merge and the KV cache write have a single
// portable CPU entry each.
#pragma once

#include <span>

#include "core/backend.hpp"
#include "core/device_fault.hpp"
#include "kvflash/status.hpp"
#include "kvflash/tensor.hpp"

namespace kvflash {

// Per operator of src/ops/operators.def: its problem and data (declared here, defined in its
// problem header, e.g. src/ops/ifa/ifa_problem.hpp, which the list's users include),
// <Op>Backend and <op>_backends().
namespace core {
#define KVFLASH_OPERATOR(op, Op, Plan, Args) \
  struct Op##Problem;                        \
  struct Op##Data;
#include "ops/operators.def"
}  // namespace core

#define KVFLASH_OPERATOR(op, Op, Plan, Args)                            \
  using Op##Backend = core::Backend<core::Op##Problem, core::Op##Data>; \
  std::span<const Op##Backend> op##_backends();
#include "ops/operators.def"

/// The fault record a device run left at the start of workspace (core::fault_record_at, on
/// device's memory), copied into *record once the work queued on stream before this call has run
/// (the host waits for the stream). kRuntime, recorded for op, when the copy fails or the build
/// has no backend for device.
Status read_fault_record(const char* op, Device device, const void* workspace, void* stream,
                         core::FaultRecord* record);

}  // namespace kvflash
