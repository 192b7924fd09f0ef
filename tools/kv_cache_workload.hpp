// Cache-write workloads for `kvflash bench` (kvcache: problem strings): ScatterPaKvCache (the
// cache write of vllm-ascend's attention path, torch_npu._npu_reshape_and_cache and
// npu_scatter_pa_kv_cache) of T tokens' key and value rows into a paged ND cache, timed, and
// checked whole against the reference's bytes. A memory-bound copy: its GB/s (the rows read plus
// the rows written) against the measured read bandwidth, and its time against a plain copy of the
// same rows timed alternately in the same run, are the figures of merit.
#pragma once

#include <cstdint>
#include <string>

#include "demo.hpp"
#include "kvflash/tensor.hpp"
#include "timing.hpp"

namespace kvflash::tools {

struct KvCacheWorkloadShape {
  std::string name = "kvcache";
  int64_t tokens = 4096;     ///< T: rows written per call
  int64_t num_kv_heads = 8;  ///< KV_N
  int64_t head_dim = 128;    ///< D (key and value)
  int64_t block_size = 128;  ///< cache block size
  /// The slots: a prefill's (each request's tokens in consecutive slots of its blocks, blocks in a
  /// shuffled order) or a decode's (one token per request: every slot in a different block).
  bool decode = false;
  DType dtype = DType::kBFloat16;  ///< bf16 | fp16 | int8 (the copy is bitwise)
};

/// What one timed cache write measured (for `kvflash bench --json/--csv`).
struct KvCacheWorkloadResult {
  CallTimes times;  ///< per call: median, p10, p90 (ms)
  CallTimes copy;   ///< a plain copy of the same rows, alternated with the write (the yardstick)
  double bytes = 0;        ///< rows read + rows written + slots read
  double gbs = 0;          ///< bytes / median time
  bool passed = false;
};

/// Builds, times (median) and checks the workload; prints two lines. Returns the check's verdict;
/// fills *result.
bool run_kv_cache_workload(const KvCacheWorkloadShape& shape, const DemoOptions& options,
                           double read_bandwidth_gbs, KvCacheWorkloadResult* result);

}  // namespace kvflash::tools
