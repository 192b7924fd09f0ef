// The `kvflash demo` workloads: real model shapes, checked against the reference, timed.
#pragma once

#include <cstddef>

namespace kvflash::tools {

struct DemoOptions {
  int num_threads = 0;  ///< 0 = library default
  int iterations = 10;  ///< timed runs (median reported)
  bool quick = false;   ///< smaller batch, for smoke tests
  /// Bytes read before every timed call to push the workload out of the caches (tools/
  /// cache_flush.hpp); 0 = time it with warm caches (the demo).
  size_t flush_bytes = 0;
};

/// Llama-3-8B decode step over a paged KV cache (bf16, or int8 with per-channel antiquant).
/// Returns true when the sample check passed.
bool run_ifa_demo(const DemoOptions& options, bool int8_kv, double read_bandwidth_gbs);

/// DeepSeek-V3.2 sparse MLA decode step. Its line gives the achieved fraction of the ceiling that
/// binds it: the compute peak when the step needs more time at compute_peak_gflops than at
/// read_bandwidth_gbs (128 heads share each selected row: it is), else the read bandwidth (0 =
/// not measured). Returns true when the sample check passed.
bool run_sfa_demo(const DemoOptions& options, double read_bandwidth_gbs,
                  double compute_peak_gflops);

/// Llama-3-8B prefill then decode through FusedInferAttentionScore on one paged cache: a prompt
/// (TND, sparse_mode 3) and a few decode steps, each checked against fp64, timed against the
/// compute peak (prefill) and the read bandwidth (decode; 0 = not measured). Returns true when
/// every check passed.
bool run_fia_demo(const DemoOptions& options, double read_bandwidth_gbs,
                  double compute_peak_gflops);

}  // namespace kvflash::tools
