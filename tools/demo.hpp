// The `kvflash demo` workloads: real model shapes, checked against the reference, timed.
#pragma once

#include <cstddef>

namespace kvflash::tools {

struct DemoOptions {
  int num_threads = 0;  ///< 0 = library default
  int iterations = 10;  ///< timed runs (median and p10-p90 reported, tools/timing.hpp)
  bool quick = false;   ///< smaller batch, for smoke tests
  /// Bytes read before every timed call to push the workload out of the caches (tools/
  /// cache_flush.hpp): default_flush_bytes() unless --warm-cache; 0 = warm caches, which each
  /// row then says.
  size_t flush_bytes = 0;
  bool warm() const { return flush_bytes == 0; }
  /// `bench --capi`: time each IFA call also through the aclnn C API (tools/capi_ifa.hpp),
  /// alternated run by run with the C++ call.
  bool capi = false;
};

/// The legend printed once before the rows of `kvflash demo`, `ifa` and `bench`: what a row's
/// time is (median, p10-p90, cold or warm caches), its GB/s and fraction of the read bandwidth,
/// and the sample check's terms ("worst err/tol", "same bits alone as in batch").
void print_legend(const DemoOptions& options);

/// Llama-3-8B decode step over a paged KV cache (bf16, or int8 with per-channel antiquant).
/// Returns true when the sample check passed.
bool run_ifa_demo(const DemoOptions& options, bool int8_kv, double read_bandwidth_gbs);

/// DeepSeek-V3.2 sparse MLA decode step. Its line gives the achieved fraction of the ceiling that
/// binds it: the compute peak when the step needs more time at compute_peak_gflops than at
/// read_bandwidth_gbs (128 heads share each selected row: it is on vector units), else the read
/// bandwidth (0 = not measured). compute_peak_gflops is the peak of the units SFA runs on here
/// (ComputePeaks::ceiling). Returns true when the sample check passed.
bool run_sfa_demo(const DemoOptions& options, double read_bandwidth_gbs,
                  double compute_peak_gflops);

/// The whole DeepSeek-V3.2 sparse-attention step (lightning indexer, then SFA over its selection),
/// each half timed, checked against fp64 end to end (tools/demo_dsa.cpp); the indexer's line
/// gives its fraction of compute_peak_gflops, the peak of the units it runs on. Returns true when
/// the checks passed.
bool run_dsa_demo(const DemoOptions& options, double read_bandwidth_gbs,
                  double compute_peak_gflops);

/// Llama-3-8B prefill then decode through FusedInferAttentionScore on one paged cache: a prompt
/// (TND, sparse_mode 3) and a few decode steps, each checked against fp64, timed against the
/// compute peak of the units FIA runs on (prefill) and the read bandwidth (decode; 0 = not
/// measured). Returns true when every check passed.
bool run_fia_demo(const DemoOptions& options, double read_bandwidth_gbs,
                  double compute_peak_gflops);

}  // namespace kvflash::tools
