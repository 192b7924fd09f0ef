#include "cli_options.hpp"

#include <CLI/CLI.hpp>
#include <exception>
#include <string>
#include <vector>

#include "bench_problem.hpp"

namespace kvflash::tools {
namespace {

int parse(int argc, const char* const* argv, CliOptions* o, std::ostream& out, std::ostream& err) {
  CLI::App app{
      "kvflash: attention operators on the CPU: IncreFlashAttention (ifa), SparseFlashAttention "
      "(sfa), the lightning indexer (li), FusedInferAttentionScore (fia), PromptFlashAttention "
      "(pfa) and the KV cache write (kvcache)"};
  app.require_subcommand(1);

  DemoOptions demo;
  bool skip_bandwidth = false, warm_cache = false;
  const char* const warm_help =
      "do not evict the caches before each timed call (default: read 2x the last-level cache "
      "first, as a model's other layers would)";
  CLI::App* demo_cmd = app.add_subcommand(
      "demo",
      "Run the embedded model workloads (ifa, sfa, li + sfa, fia prefill and decode): check and "
      "time");
  demo_cmd->add_option("--threads", demo.num_threads, "worker threads (0 = all cores)")
      ->check(CLI::Range(0, kCliMaxThreads));
  demo_cmd->add_option("--iters", demo.iterations, "timed iterations (median reported)")
      ->check(CLI::Range(1, kCliMaxIterations));
  demo_cmd->add_flag("--quick", demo.quick, "smaller batches (smoke test)");
  demo_cmd->add_flag("--no-bandwidth", skip_bandwidth,
                     "skip the memory read-bandwidth measurement");
  demo_cmd->add_flag("--warm-cache", warm_cache, warm_help);

  IfaWorkloadShape ifa;
  int64_t batch = 8, kv_len = 4096;
  std::string kv_dtype = "bf16";
  bool check = false;
  CLI::App* ifa_cmd =
      app.add_subcommand("ifa", "Time one IncreFlashAttention decode step of a given shape");
  ifa_cmd->add_option("--batch", batch, "sequences")->check(CLI::Range(int64_t{1}, kCliMaxBatch));
  ifa_cmd->add_option("--kv-len", kv_len, "KV length of every sequence")
      ->check(CLI::Range(int64_t{0}, kCliMaxKvLen));
  ifa_cmd
      ->add_option("--lengths", ifa.lengths, "per-sequence KV lengths (overrides --batch/--kv-len)")
      ->check(CLI::Range(int64_t{0}, kCliMaxKvLen));
  ifa_cmd->add_option("--heads", ifa.num_heads, "query heads")
      ->check(CLI::Range(int64_t{1}, kCliMaxHeads));
  ifa_cmd->add_option("--kv-heads", ifa.num_kv_heads, "KV heads")
      ->check(CLI::Range(int64_t{1}, kCliMaxHeads));
  ifa_cmd->add_option("--dim", ifa.head_dim, "head dim")
      ->check(CLI::Range(int64_t{1}, kCliMaxHeadDim));
  ifa_cmd
      ->add_option("--block-size", ifa.block_size,
                   "paged cache block size; 0 = contiguous BNSD cache")
      ->check(CLI::Range(int64_t{0}, kCliMaxBlockSize));
  ifa_cmd->add_option("--kv-dtype", kv_dtype, "KV cache dtype")
      ->check(CLI::IsMember({"bf16", "fp16", "int8"}));
  ifa_cmd->add_option("--threads", demo.num_threads, "worker threads (0 = all cores)")
      ->check(CLI::Range(0, kCliMaxThreads));
  ifa_cmd->add_option("--iters", demo.iterations, "timed iterations (median reported)")
      ->check(CLI::Range(1, kCliMaxIterations));
  ifa_cmd->add_flag(
      "--check", check,
      "check the first, longest and shortest sequence against the double-precision reference");
  ifa_cmd->add_flag("--no-bandwidth", skip_bandwidth, "skip the memory read-bandwidth measurement");
  ifa_cmd->add_flag("--warm-cache", warm_cache, warm_help);

  std::vector<std::string> problems;
  std::string bench_json, bench_csv, sweep;
  bool bench_list = false;
  CLI::App* bench_cmd = app.add_subcommand(
      "bench",
      "Time problems like ifa:b8,s4096,n32,kvn8,d128,kv=bf16,paged=128 or "
      "sfa:b4,topk2048,s8192,n128,blk1,paged=64,kv=bf16 or "
      "li:b4,s32768,n64,topk2048,next1,paged=128,kv=bf16 or "
      "fia:b1,q2048,s0,n32,kvn8,d128,mode=3,paged=0,kv=bf16 or pfa:b1,q2048,n32,kvn8,d128,mode=3 "
      "or kvcache:t4096,kvn8,d128,paged=128,kv=bf16 (the cache write) (each checked: against fp64, "
      "the cache write byte for byte; the README lists every key)");
  bench_cmd->add_option("problems", problems, "problem strings (none: only the probes)");
  bench_cmd->add_option("--sweep", sweep, "add a named sweep's problems: default, quick, vllm");
  bench_cmd->add_flag("--list", bench_list, "print the problems, one a line, and run nothing");
  bench_cmd->add_option("--csv", bench_csv, "also write the results to this CSV file");
  bench_cmd->add_option("--threads", demo.num_threads, "worker threads (0 = all cores)")
      ->check(CLI::Range(0, kCliMaxThreads));
  bench_cmd->add_option("--iters", demo.iterations, "timed iterations (median reported)")
      ->check(CLI::Range(1, kCliMaxIterations));
  bench_cmd->add_option("--json", bench_json, "also write the results to this JSON file");
  bench_cmd->add_flag("--no-bandwidth", skip_bandwidth,
                      "skip the memory read-bandwidth measurement");
  bench_cmd->add_flag("--warm-cache", warm_cache, warm_help);
  bench_cmd->add_flag("--capi", demo.capi,
                      "also time each ifa problem through the aclnn C API (GetWorkspaceSize, "
                      "aclrtMalloc, launch on a stream, synchronize), alternated with the C++ call");

  CLI::App* info_cmd = app.add_subcommand(
      "info", "Show the version, ISA, threads, measured read bandwidth and compute peaks");
  info_cmd->add_flag("--no-bandwidth", skip_bandwidth,
                     "skip the memory read-bandwidth and compute-peak measurements");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e, out, err);
  }
  if (ifa.lengths.size() > static_cast<size_t>(kCliMaxBatch)) {
    err << "--lengths: at most " << kCliMaxBatch << " sequences, got " << ifa.lengths.size()
        << "\n";
    return 1;
  }

  o->demo = demo;
  o->skip_bandwidth = skip_bandwidth;
  o->check = check;
  if (!sweep.empty()) {
    std::string why;
    if (!bench_sweep(sweep, &problems, &why)) {
      err << "--sweep: " << why << "\n";
      return 1;
    }
  }
  std::vector<BenchProblem> bench;
  for (const std::string& text : problems) {
    std::string why;
    if (!parse_bench_problem(text, &bench.emplace_back(), &why)) {
      err << why << "\n";
      return 1;
    }
  }
  o->bench = std::move(bench);
  o->bench_json = bench_json;
  o->bench_csv = bench_csv;
  o->bench_list = bench_list;
  o->warm_cache = warm_cache;
  if (*bench_cmd) {
    o->command = CliCommand::kBench;
  } else if (*info_cmd) {
    o->command = CliCommand::kInfo;
  } else if (*ifa_cmd) {
    o->command = CliCommand::kIfa;
    if (ifa.lengths.empty()) ifa.lengths.assign(static_cast<size_t>(batch), kv_len);
    ifa.name = "cli";
    ifa.kv_dtype = kv_dtype == "int8"   ? DType::kInt8
                   : kv_dtype == "fp16" ? DType::kFloat16
                                        : DType::kBFloat16;
  } else {
    o->command = CliCommand::kDemo;
  }
  o->ifa = std::move(ifa);
  return kCliRun;
}

}  // namespace

int parse_cli(int argc, const char* const* argv, CliOptions* options, std::ostream& out,
              std::ostream& err) {
  try {
    return parse(argc, argv, options, out, err);
  } catch (const std::exception& e) {  // CLI11 construction errors, std::bad_alloc
    err << "kvflash: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace kvflash::tools
