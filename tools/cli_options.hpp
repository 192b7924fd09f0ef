// The kvflash program's command line, parsed without running anything, so that the parser can be
// tested and fuzzed on its own (fuzz/fuzz_cli.cpp).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "demo.hpp"
#include "bench_problem.hpp"
#include "ifa_workload.hpp"

namespace kvflash::tools {

enum class CliCommand { kDemo, kIfa, kInfo, kBench };

/// What the command line asks for, checked: every value is in the range its option documents.
struct CliOptions {
  CliCommand command = CliCommand::kDemo;
  DemoOptions demo;
  /// `kvflash ifa`: lengths filled from --lengths, or --batch copies of --kv-len.
  IfaWorkloadShape ifa;
  bool check = false;  ///< ifa --check
  /// `kvflash bench`: one problem per string (tools/bench_problem.hpp), the named --sweep's
  /// problems after those given, --json FILE, --csv FILE, --list (print the problems, run none).
  /// No problem at all: only the read bandwidth and the bf16 peak are measured.
  std::vector<BenchProblem> bench;
  std::string bench_json, bench_csv;
  bool bench_list = false;
  /// --warm-cache (demo, ifa, bench): time without evicting the caches before each call.
  bool warm_cache = false;
  bool skip_bandwidth = false;  ///< --no-bandwidth
};

/// The limits the parser enforces (also what fuzz/fuzz_cli.cpp checks a parsed command against).
inline constexpr int64_t kCliMaxBatch = 65536;
inline constexpr int64_t kCliMaxKvLen = int64_t{1} << 24;
inline constexpr int64_t kCliMaxHeads = 256;
inline constexpr int64_t kCliMaxHeadDim = 512;
inline constexpr int64_t kCliMaxBlockSize = 512;
inline constexpr int kCliMaxThreads = 1024;
inline constexpr int kCliMaxIterations = 1000000;

/// Returned by parse_cli when the command line is valid and the program should run the command.
inline constexpr int kCliRun = -1;

/// Parses argv (argv[0] is the program name). Returns kCliRun with *options filled, or the exit
/// status the program ends with: 0 after --help (the text is written to out), nonzero for a bad
/// command line (the reason is written to err). Never throws, never runs a workload.
int parse_cli(int argc, const char* const* argv, CliOptions* options, std::ostream& out,
              std::ostream& err);

}  // namespace kvflash::tools
