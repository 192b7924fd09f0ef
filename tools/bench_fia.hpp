// FIA / PFA workloads for `kvflash bench` (fia: / pfa: problem strings): one prefill (or
// chunked-prefill / decode) step of a given shape, with deterministic data, timed, and the last
// query rows of the first sequence checked against the double-precision reference.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "demo.hpp"
#include "kvflash/tensor.hpp"
#include "roofline.hpp"
#include "timing.hpp"

namespace kvflash::tools {

struct FiaWorkloadShape {
  std::string name = "fia";
  bool prompt = false;  ///< pfa: PromptFlashAttention (never the decode branch)
  int64_t batch = 1;
  int64_t q_len = 2048;    ///< query rows of every sequence
  int64_t kv_len = 0;      ///< KV length of every sequence (0 = q_len: a prompt)
  int64_t num_heads = 32;  ///< query heads
  int64_t num_kv_heads = 8;
  int64_t head_dim = 128;
  int64_t sparse_mode = 3;  ///< 0 (no mask) or 3 (causal, right-down; the compressed mask)
  /// Mode 3's compressed mask: its rank, 2 (2048, 2048), 3 (1, 2048, 2048) or 4 (1, 1, 2048,
  /// 2048); 0 passes none (accepted only where the call takes the decode branch, D4).
  int mask_rank = 2;
  /// Paged cache (BnBsH, shuffled block table) with this block size when > 0 (fia only); a
  /// contiguous BSND cache when 0.
  int64_t block_size = 0;
  DType dtype = DType::kBFloat16;  ///< query, cache and output: bf16 | fp16
  /// Per request (a TND call over a paged cache: vllm-ascend's chunked prefill, one row per
  /// decode request); empty: batch requests of q_len rows over kv() positions.
  std::vector<int64_t> q_lens, kv_lens;
  bool tnd = false;  ///< TND query (cumulative lengths); BSND otherwise
  /// int8 cache with split key / value parameters: 0 none, 1 per channel (KV_N, D) (vllm-ascend's
  /// C8), 2 per token (1, B, S), mode 1.
  int kv_int8 = 0;
  bool lse = false, sink = false;  ///< softmax_lse_flag; a learnable sink (N,)
  int64_t kv() const { return kv_len == 0 ? q_len : kv_len; }
  int64_t requests() const { return q_lens.empty() ? batch : static_cast<int64_t>(q_lens.size()); }
  int64_t q_of(int64_t r) const { return q_lens.empty() ? q_len : q_lens[r]; }
  int64_t kv_of(int64_t r) const { return kv_lens.empty() ? kv() : kv_lens[r]; }
};

struct FiaWorkloadResult {
  CallTimes times;  ///< per call: median, p10, p90 (ms)
  double flops = 0;   ///< prefill_work (roofline.hpp): 4 * visible (row, key) pairs * N * D
  double gflops = 0;  ///< flops / median time
  double bytes = 0;   ///< prefill_work: Q, K, V read once, the output written
  double gbs = 0;
  bool passed = false;
};

/// Builds, times (median after one warm-up) and checks the workload; prints two lines. Returns
/// the check's verdict; fills *result.
bool run_fia_workload(const FiaWorkloadShape& shape, const DemoOptions& options,
                      FiaWorkloadResult* result);

}  // namespace kvflash::tools
