// The legend of the kvflash program's rows (tools/demo.hpp, print_legend): printed once, so that a
// row read in a log says what it measured.
#include <cstdio>

#include "cache_flush.hpp"
#include "demo.hpp"

namespace kvflash::tools {

void print_legend(const DemoOptions& options) {
  std::printf("how to read the rows:\n");
  std::printf("  time: the median of %d timed calls, and their spread p10-p90 (10th and 90th "
              "percentiles)\n",
              options.iterations);
  if (options.warm()) {
    std::printf(
        "        warm caches (--warm-cache): each call re-reads what the previous one left in the "
        "caches, so a workload that fits in the last-level cache (%.0f MiB) can beat memory\n",
        static_cast<double>(last_level_cache_bytes()) / (1 << 20));
  } else {
    std::printf(
        "        cold caches: %.0f MiB (twice the last-level cache) is read before each timed "
        "call, untimed, as a model's other layers would (--warm-cache: no flush)\n",
        static_cast<double>(options.flush_bytes) / (1 << 20));
  }
  std::printf(
      "  GB/s: the bytes a call must move (KV cache, selected rows or keys, query and output: "
      "tools/roofline.hpp) / median time; \"of read bw\": against the read bandwidth measured "
      "above\n");
  std::printf(
      "  roofline (bench): intensity = FLOPs / bytes; roofline = the fastest call the machine "
      "allows, max(bytes / read bandwidth, FLOPs / the compute ceiling of the row's dtype on its "
      "engine), its bound (memory or the engine) and the row's fraction of it (docs/perf.md)\n");
  std::printf(
      "  sample check: chosen sequences run again as a batch of their own and compared with the "
      "double-precision reference\n"
      "        worst err/tol: the largest |kvflash - reference| / (atol + rtol |reference|) over "
      "the checked elements; at most 1 passes (docs/conventions.md)\n"
      "        same bits alone as in batch: the sequences' outputs alone are bit-identical to "
      "theirs inside the full batch (results do not depend on the batch)\n");
}

}  // namespace kvflash::tools
