// Lightning-indexer workloads for `kvflash bench` (li: problem strings) and the DSA step of
// `kvflash demo`: DeepSeek-V3.2's indexer over a paged cache (TND query rows, next_n rows per
// request, PA_BSND key cache of shuffled blocks, 128 dims, one key head), with deterministic data,
// timed, and checked on sampled rows against the double-precision reference.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "demo.hpp"
#include "kvflash/li.hpp"
#include "kvflash/tensor.hpp"
#include "roofline.hpp"
#include "timing.hpp"

namespace kvflash::tools {

struct LiWorkloadShape {
  std::string name = "li";
  int64_t batch = 4;               ///< requests
  int64_t next_n = 1;              ///< query rows per request (1: decode; 2..4: MTP)
  int64_t kv_len = 32768;          ///< cached tokens of every request
  int64_t num_heads = 64;          ///< indexer heads (1..64)
  int64_t top_k = 2048;            ///< sparse_count
  int64_t block_size = 128;        ///< paged cache block size
  DType dtype = DType::kBFloat16;  ///< query, key and weights: bf16 | fp16
};

/// The buffers and arguments of one indexer workload (TND query, PA_BSND key, mode 3).
struct LiWorkload {
  LiWorkloadShape shape;
  int64_t num_blocks = 0, blocks_per_seq = 0;
  std::vector<uint16_t> query, weights, key;  // (T, N, 128), (T, N), (blocks, bs, 1, 128)
  std::vector<int32_t> block_table, lengths_query, lengths_key;
  std::vector<int32_t> indices;  // (T, 1, K)
  LightningIndexerArgs args;     // over the buffers above

  int64_t rows() const { return shape.batch * shape.next_n; }
};

/// Builds the workload of shape (N(0, 1) data, a shuffled block table; seed from the shape).
void make_li_workload(const LiWorkloadShape& shape, LiWorkload* w);

/// The sample check of an indexer output: requests `requests` of w (their rows' indices in
/// w.indices) against the fp64 reference run on those requests alone: every slot valid, and no
/// unselected key above a selected one by more than both fp32 tolerances. *same_sets counts the
/// rows whose index set equals the fp64 selection's exactly. Prints one line; returns the verdict.
bool check_li_sample(const LiWorkload& w, const std::vector<int64_t>& requests, int64_t* same_sets,
                     int64_t* rows_checked);

/// What one timed indexer workload measured (for `kvflash bench --json/--csv`).
struct LiWorkloadResult {
  CallTimes times;  ///< per call: median, p10, p90 (ms)
  double key_bytes = 0;  ///< li_work (roofline.hpp): the keys once per request, weights, queries
  double flops = 0;      ///< li_work: 2 * rows * keys * N * 128
  double gbs = 0;        ///< key_bytes / median time
  double gflops = 0;     ///< flops / median time
  bool passed = false;
};

/// Builds, times (median after one warm-up) and checks (first and last request) the workload;
/// prints two lines. Returns the check's verdict; fills *result.
bool run_li_workload(const LiWorkloadShape& shape, const DemoOptions& options,
                     double read_bandwidth_gbs, LiWorkloadResult* result);

}  // namespace kvflash::tools
