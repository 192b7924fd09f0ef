// `kvflash bench`: times each problem (tools/bench_problem.hpp) with its sample check against the
// fp64 reference, prints a result line per problem and a progress line on stderr, and optionally
// writes the results as JSON and CSV for bench/ scripts (bench/report.py, bench/peers.py).
#pragma once

#include "cli_options.hpp"

namespace kvflash::tools {

/// Measures the bf16 dot-product peak (unless --no-bandwidth), then runs o.bench in order;
/// read_bandwidth_gbs (0 = not measured) and the peak go into the report. Returns true
/// when every problem ran and passed its check and the files asked for were written.
bool run_bench(const CliOptions& o, double read_bandwidth_gbs);

/// `kvflash bench --list`: prints the problem strings, one a line. Returns true.
bool list_bench(const CliOptions& o);

}  // namespace kvflash::tools
