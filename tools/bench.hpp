// `kvflash bench`: times each problem string (tools/bench_problem.hpp) with its sample check,
// prints a progress line per problem and optionally writes the results as JSON for bench/ scripts.
#pragma once

#include "cli_options.hpp"

namespace kvflash::tools {

/// Measures the bf16 dot-product peak (unless --no-bandwidth), then runs o.bench in order;
/// read_bandwidth_gbs (0 = not measured) and the peak go into the report. Returns true
/// when every problem ran and passed its check and the JSON file (if asked for) was written.
bool run_bench(const CliOptions& o, double read_bandwidth_gbs);

}  // namespace kvflash::tools
