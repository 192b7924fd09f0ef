// `kvflash bench`: times each problem (tools/bench_problem.hpp) with its sample check against the
// fp64 reference, prints a progress line and the result lines per problem on stdout, and
// optionally writes the results as JSON and CSV for bench/ scripts (bench/report.py,
// bench/peers.py).
#pragma once

#include "bf16_peak.hpp"
#include "cli_options.hpp"

namespace kvflash::tools {

/// Runs o.bench in order, each call timed as o.demo says (iterations, cache flush);
/// read_bandwidth_gbs and the peaks (0 = not measured: --no-bandwidth) go into the report.
/// Returns true when every problem ran and passed its check and the files asked for were
/// written.
bool run_bench(const CliOptions& o, double read_bandwidth_gbs, const ComputePeaks& peaks);

/// `kvflash bench --list`: prints the problem strings, one a line. Returns true.
bool list_bench(const CliOptions& o);

}  // namespace kvflash::tools
