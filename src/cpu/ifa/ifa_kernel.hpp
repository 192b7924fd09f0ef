// The IFA CPU backend entry: binds a run's tensors, reads the device data in stream order, runs
// the per-ISA kernels on the parallel loop. No validation beyond the device data, no allocation,
// no I/O. The problem must come from the validator and args must match it
// (ifa::check_matches_plan).
#pragma once

#include <cstddef>

#include "ops/ifa/ifa_problem.hpp"
#include "cpu/isa.hpp"
#include "kvflash/ifa.hpp"
#include "kvflash/status.hpp"

namespace kvflash::cpu {

/// Bytes of workspace ifa_run needs for p (split-KV partials, dequantised scales, run-time
/// per-batch state). A function of the problem only: the same for every ISA and thread count.
size_t ifa_workspace_size(const core::IfaProblem& p);

/// Computes the attention output (and LSE) of p for args' tensors with isa's kernels (isa must be
/// supported) on num_threads workers (0 = default). ws: at least ifa_workspace_size(p) bytes, any
/// alignment. Returns kInvalid when device data was bad (see IfaPlan::run); every other batch is
/// computed.
Status ifa_run(const core::IfaProblem& p, const IfaArgs& args, Isa isa, int num_threads, void* ws);

}  // namespace kvflash::cpu
