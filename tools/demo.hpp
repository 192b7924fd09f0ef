// The `kvflash demo` workloads: real model shapes, checked against the reference, timed.
#pragma once

#include <cstddef>

#include "roofline.hpp"

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

/// DeepSeek-V3.2 sparse MLA decode step. Its line gives the step against its roofline
/// (roofline.hpp: sfa_work, the read bandwidth and `ceiling`, the bf16 compute ceiling of the
/// engine SFA runs on here; 0 = not measured). Returns true when the sample check passed.
bool run_sfa_demo(const DemoOptions& options, double read_bandwidth_gbs, const Ceiling& ceiling);

/// The whole DeepSeek-V3.2 sparse-attention step (lightning indexer, then SFA over its selection),
/// each half timed, checked against fp64 end to end (tools/demo_dsa.cpp); the indexer's line
/// gives it against its roofline (li_work, `ceiling`: the bf16 ceiling of the engine it runs on).
/// Returns true when the checks passed.
bool run_dsa_demo(const DemoOptions& options, double read_bandwidth_gbs, const Ceiling& ceiling);

/// Llama-3-8B prefill then decode through FusedInferAttentionScore on one paged cache: a prompt
/// (TND, sparse_mode 3) and a few decode steps, each checked against fp64, the prefill timed
/// against its roofline (prefill_work, `ceiling`: the bf16 ceiling of the engine FIA runs on) and
/// the decode against the read bandwidth (0 = not measured). Returns true when every check passed.
bool run_fia_demo(const DemoOptions& options, double read_bandwidth_gbs, const Ceiling& ceiling);

}  // namespace kvflash::tools
