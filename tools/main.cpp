// The kvflash command-line program.
//   kvflash demo   the main job: embedded decode workloads, checked against the reference, timed
//   kvflash ifa    one IFA decode step of a shape given on the command line: timed, optionally
//                  checked
//   kvflash info   the version and what this machine gives kvflash (ISA, threads, read bandwidth)
#include <CLI/CLI.hpp>
#include <cstdio>

#include "cpu/isa.hpp"
#include "cpu/thread_pool.hpp"
#include "demo.hpp"
#include "ifa_workload.hpp"
#include "kvflash/version.h"
#include "membw.hpp"

int main(int argc, char** argv) {
  using namespace kvflash;
  CLI::App app{"kvflash: decode and sparse attention operators on the CPU"};
  app.require_subcommand(1);

  tools::DemoOptions demo;
  bool skip_bandwidth = false;
  CLI::App* demo_cmd =
      app.add_subcommand("demo", "Run the embedded model workloads: check and time");
  demo_cmd->add_option("--threads", demo.num_threads, "worker threads (0 = all cores)")
      ->check(CLI::NonNegativeNumber);
  demo_cmd->add_option("--iters", demo.iterations, "timed iterations (median reported)")
      ->check(CLI::PositiveNumber);
  demo_cmd->add_flag("--quick", demo.quick, "smaller batches (smoke test)");
  demo_cmd->add_flag("--no-bandwidth", skip_bandwidth,
                     "skip the memory read-bandwidth measurement");

  tools::IfaWorkloadShape ifa;
  int64_t batch = 8, kv_len = 4096;
  std::string kv_dtype = "bf16";
  bool check = false;
  CLI::App* ifa_cmd =
      app.add_subcommand("ifa", "Time one IncreFlashAttention decode step of a given shape");
  ifa_cmd->add_option("--batch", batch, "sequences")->check(CLI::Range(int64_t{1}, int64_t{65536}));
  ifa_cmd->add_option("--kv-len", kv_len, "KV length of every sequence")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 24));
  ifa_cmd->add_option("--lengths", ifa.lengths,
                      "per-sequence KV lengths (overrides --batch/--kv-len)");
  ifa_cmd->add_option("--heads", ifa.num_heads, "query heads")->check(CLI::PositiveNumber);
  ifa_cmd->add_option("--kv-heads", ifa.num_kv_heads, "KV heads")->check(CLI::PositiveNumber);
  ifa_cmd->add_option("--dim", ifa.head_dim, "head dim")->check(CLI::PositiveNumber);
  ifa_cmd
      ->add_option("--block-size", ifa.block_size,
                   "paged cache block size; 0 = contiguous BNSD cache")
      ->check(CLI::NonNegativeNumber);
  ifa_cmd->add_option("--kv-dtype", kv_dtype, "KV cache dtype")
      ->check(CLI::IsMember({"bf16", "fp16", "int8"}));
  ifa_cmd->add_option("--threads", demo.num_threads, "worker threads (0 = all cores)")
      ->check(CLI::NonNegativeNumber);
  ifa_cmd->add_option("--iters", demo.iterations, "timed iterations (median reported)")
      ->check(CLI::PositiveNumber);
  ifa_cmd->add_flag("--check", check, "check 3 sequences against the double-precision reference");
  ifa_cmd->add_flag("--no-bandwidth", skip_bandwidth, "skip the memory read-bandwidth measurement");

  CLI::App* info_cmd =
      app.add_subcommand("info", "Show the version, ISA, threads and measured read bandwidth");
  info_cmd->add_flag("--no-bandwidth", skip_bandwidth,
                     "skip the memory read-bandwidth measurement");

  CLI11_PARSE(app, argc, argv);

  if (*info_cmd) std::printf("kvflash %s\n", kvflash_version());

  const int threads = demo.num_threads ? demo.num_threads : cpu::default_num_threads();
  std::printf("kvflash: isa %s (detected %s), %d threads\n", cpu::isa_name(cpu::active_isa()),
              cpu::isa_name(cpu::detected_isa()), threads);
  const double bw =
      skip_bandwidth ? 0.0
                     : tools::measure_read_bandwidth_gbs(demo.num_threads, demo.quick ? 0.25 : 1.0);
  if (!skip_bandwidth)
    std::printf("machine read bandwidth (measured, %d threads): %.1f GB/s\n", threads, bw);
  if (*info_cmd) return 0;
  if (*ifa_cmd) {
    if (ifa.lengths.empty()) ifa.lengths.assign(batch, kv_len);
    ifa.name = "cli";
    ifa.kv_dtype = kv_dtype == "int8"   ? DType::kInt8
                   : kv_dtype == "fp16" ? DType::kFloat16
                                        : DType::kBFloat16;
    return tools::run_ifa_workload(ifa, demo, bw, check) ? 0 : 1;
  }

  bool ok = tools::run_ifa_demo(demo, /*int8_kv=*/false, bw);
  ok = tools::run_ifa_demo(demo, /*int8_kv=*/true, bw) && ok;
  ok = tools::run_sfa_demo(demo, bw) && ok;
  std::printf("demo: %s\n", ok ? "all sample checks passed" : "SAMPLE CHECK FAILED");
  return ok ? 0 : 1;
}
