// SFA workloads for `kvflash bench` (sfa: problem strings): one sparse MLA decode step (a latent
// KV head of 512 + 64 rope dims shared by every query head, each query attending its top-k
// tokens) of a given shape, with deterministic data, timed, and checked on sampled sequences
// against the double-precision reference.
#pragma once

#include <cstdint>
#include <string>

#include "demo.hpp"
#include "kvflash/tensor.hpp"
#include "roofline.hpp"
#include "timing.hpp"

namespace kvflash::tools {

struct SfaWorkloadShape {
  std::string name = "sfa";
  int64_t batch = 4;
  int64_t kv_len = 8192;    ///< KV length of every sequence
  int64_t top_k = 2048;     ///< selected tokens (or blocks of sparse_block_size) per query
  int64_t num_heads = 128;  ///< query heads (1..128); the latent KV head is shared by all
  int64_t sparse_block_size = 1;
  /// Paged cache (PA_BSND, shuffled block table) with this block size when > 0; a contiguous
  /// BSND cache when 0.
  int64_t block_size = 64;
  DType dtype = DType::kBFloat16;  ///< query, cache and output: bf16 | fp16
};

/// What one timed SFA workload measured (for `kvflash bench --json/--csv`).
struct SfaWorkloadResult {
  CallTimes times;  ///< per call: median, p10, p90 (ms)
  double gathered_bytes = 0;  ///< sfa_work (roofline.hpp): selected rows once per sequence, q, out
  double flops = 0;           ///< sfa_work: 2 * selected * N * (512 + 64 + 512)
  double gbs = 0;             ///< gathered_bytes / median time
  double gflops = 0;          ///< flops / median time
  bool passed = false;
};

/// Builds, times (median after one warm-up) and checks the workload (first and last sequence,
/// run on their own: same bits as in the batch, and within tolerance of the fp64 reference);
/// prints two lines. Returns the check's verdict; fills *result.
bool run_sfa_workload(const SfaWorkloadShape& shape, const DemoOptions& options,
                      double read_bandwidth_gbs, SfaWorkloadResult* result);

}  // namespace kvflash::tools
