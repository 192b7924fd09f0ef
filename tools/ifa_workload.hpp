// IFA workloads for the demo and `kvflash ifa`: a decode step of a given shape over a paged or
// contiguous KV cache with deterministic data, timed, and checked on sampled sequences against the
// double-precision reference.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "demo.hpp"
#include "kvflash/tensor.hpp"
#include "roofline.hpp"
#include "timing.hpp"

namespace kvflash::tools {

struct IfaWorkloadShape {
  std::string name = "ifa";
  std::vector<int64_t> lengths;  ///< KV length of each sequence (B = lengths.size())
  int64_t num_heads = 32, num_kv_heads = 8, head_dim = 128;
  /// Paged cache (blocks, block_size, KV_N*D) with a shuffled block table when > 0; a contiguous
  /// BNSD cache (B, KV_N, S_max, D) when 0.
  int64_t block_size = 128;
  /// Paged cache only: blocks laid out (blocks, KV_N, block_size, D) with a BNSD query, instead of
  /// (blocks, block_size, KV_N*D) with a BSND query.
  bool paged_bnsd = false;
  /// Paged cache only: _npu_paged_attention's call (ATB PagedAttention, vllm-ascend's decode):
  /// query [B, N, D] and the cache (blocks, block_size, KV_N, D), passed to IFA as the BNSD query
  /// [B, N, 1, D] and the heads-first view [blocks, KV_N, block_size, D] of the same bytes (the
  /// strides of the python binding, python/src/paged_attention_op.cpp), blocks_may_repeat set.
  bool paged_atb = false;
  /// bf16 | fp16 | int8 (per-channel antiquant). Query and output are fp16 with an fp16 cache and
  /// bf16 otherwise.
  DType kv_dtype = DType::kBFloat16;
};

/// What one timed workload measured (for `kvflash bench --json`).
struct IfaWorkloadResult {
  CallTimes times;  ///< per call: median, p10, p90 (ms)
  double bytes = 0;   ///< ifa_decode_work (roofline.hpp): K, V, query and output bytes
  double flops = 0;   ///< ifa_decode_work: 4 * tokens * N * D
  double gbs = 0;     ///< bytes / median time
  double gflops = 0;  ///< flops / median time
  bool checked = false, passed = false;
  /// DemoOptions::capi: the same call through the aclnn C API, timed alternately with the C++
  /// call (runs == 0: not timed, capi_note says why).
  CallTimes capi_times;
  std::string capi_note;
};

/// Builds, times (median) and checks the workload; prints two lines. Returns the check's verdict
/// (true when check_sample is false and the run succeeded). Fills *result when given.
bool run_ifa_workload(const IfaWorkloadShape& shape, const DemoOptions& options,
                      double read_bandwidth_gbs, bool check_sample,
                      IfaWorkloadResult* result = nullptr);

}  // namespace kvflash::tools
