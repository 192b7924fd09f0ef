// Demo workload 1: a Llama-3-8B attention decode step (32 query heads, 8 KV heads, head dim 128)
// over a paged KV cache (block size 128, shuffled block table) for a batch of mixed lengths, with a
// bf16 cache and with an int8 cache (per-channel antiquant).
#include "demo.hpp"
#include "ifa_workload.hpp"

namespace kvflash::tools {

bool run_ifa_demo(const DemoOptions& options, bool int8_kv, double read_bandwidth_gbs) {
  IfaWorkloadShape shape;
  shape.name = "llama3-8b decode";
  // Mixed decode lengths, as in a serving batch: a few long contexts, many medium, some short.
  shape.lengths = {4096, 1021, 3000, 7,    2048, 5120, 333, 8192,
                   1500, 2900, 640,  6000, 128,  4500, 777, 3333};
  if (options.quick) shape.lengths.resize(4);
  shape.num_heads = 32;
  shape.num_kv_heads = 8;
  shape.head_dim = 128;
  shape.block_size = 128;
  shape.kv_dtype = int8_kv ? DType::kInt8 : DType::kBFloat16;
  return run_ifa_workload(shape, options, read_bandwidth_gbs, /*check_sample=*/true);
}

}  // namespace kvflash::tools
