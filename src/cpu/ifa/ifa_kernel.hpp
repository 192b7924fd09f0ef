// The IFA CPU backend entry: reads the device data in stream order, runs one instruction set's
// kernels (the entry's IfaKernels) on the parallel loop. No validation beyond the device data, no
// allocation, no I/O. The problem must come from the validator and the data from ifa::bind_data
// of arguments that match it (ifa::check_matches_plan).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/backend.hpp"
#include "kvflash/status.hpp"
#include "ops/ifa/ifa_problem.hpp"

namespace kvflash::cpu {

struct IfaLayout;
struct IfaSchedule;

/// One instruction set's IFA kernels, compiled in its own translation unit (ifa_kernel_<isa>.cpp)
/// and named by its entry of the backend list (src/backends/lists.cpp).
struct IfaKernels {
  /// Chunk task `task` (ifa_workspace.hpp): online softmax over one chunk for the kv heads of the
  /// task, into their slots.
  void (*chunk)(const core::IfaProblem& p, const core::IfaData& d, const IfaLayout& layout,
                const IfaSchedule& schedule, std::byte* base, int64_t task);
  /// Merge task `task` = b * num_kv_heads + n2: combines the chunk slots, writes out and LSE.
  void (*merge)(const core::IfaProblem& p, const core::IfaData& d, const IfaLayout& layout,
                std::byte* base, int64_t task);
  /// Score bf16 K with AVX512-BF16 dot products (IfaSchedule::bf16_dot).
  bool bf16_dot;
};

/// Bytes of workspace ifa_run needs for p (split-KV partials, dequantised scales, run-time
/// per-batch state). A function of the problem only: the same for every ISA and thread count.
size_t ifa_workspace_size(const core::IfaProblem& p);

/// Computes the attention output (and LSE) of p for the bound data d with kernels k (whose
/// instruction set the CPU must support) on ctx.num_threads workers (0 = default).
/// ctx.workspace: at least ifa_workspace_size(p) bytes, any alignment. Returns kInvalid when
/// device data was bad (see IfaPlan::run); every other batch is computed.
Status ifa_run(const core::IfaProblem& p, const core::IfaData& d, const core::RunContext& ctx,
               const IfaKernels& k);

}  // namespace kvflash::cpu
