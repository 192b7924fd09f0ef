// Fuzz target: the kvflash program's command-line parser (tools/cli_options.hpp), without running
// anything. The input is split into arguments at NUL and newline bytes.
//
// Invariants (docs/testing.md): no crash, exception or sanitizer report; a command line is either
// refused with an exit status and a reason on stderr, answered with help on stdout (status 0), or
// accepted with every option inside the range it documents; parsing is deterministic.
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "cli_options.hpp"
#include "harness.hpp"

namespace {

using namespace kvflash::tools;

// A shape from `kvflash ifa` options or a `kvflash bench` problem string: within the limits.
void check_shape(const IfaWorkloadShape& s) {
  using kvflash::fuzz::violated;
  if (s.lengths.empty() || s.lengths.size() > static_cast<size_t>(kCliMaxBatch))
    violated("accepted " + std::to_string(s.lengths.size()) + " sequences");
  for (int64_t l : s.lengths)
    if (l < 0 || l > kCliMaxKvLen) violated("accepted a KV length of " + std::to_string(l));
  if (s.num_heads < 1 || s.num_heads > kCliMaxHeads)
    violated("accepted --heads " + std::to_string(s.num_heads));
  if (s.num_kv_heads < 1 || s.num_kv_heads > kCliMaxHeads)
    violated("accepted --kv-heads " + std::to_string(s.num_kv_heads));
  if (s.head_dim < 1 || s.head_dim > kCliMaxHeadDim)
    violated("accepted --dim " + std::to_string(s.head_dim));
  if (s.block_size < 0 || s.block_size > kCliMaxBlockSize)
    violated("accepted --block-size " + std::to_string(s.block_size));
  if (s.kv_dtype != kvflash::DType::kBFloat16 && s.kv_dtype != kvflash::DType::kFloat16 &&
      s.kv_dtype != kvflash::DType::kInt8)
    violated("accepted a KV dtype outside bf16, fp16, int8");
}

// An sfa: problem string: within the operator's limits (tools/bench_problem.hpp).
void check_sfa(const SfaWorkloadShape& s) {
  using kvflash::fuzz::violated;
  if (s.batch < 1 || s.batch > kCliMaxBatch || s.kv_len < 1 || s.kv_len > kCliMaxKvLen ||
      s.top_k < 1 || s.top_k > kCliMaxKvLen || s.num_heads < 1 || s.num_heads > 128)
    violated("accepted an sfa shape out of range: " + s.name);
  const int64_t sbs = s.sparse_block_size;
  if (sbs < 1 || sbs > 128 || (sbs & (sbs - 1)) != 0 || s.block_size < 0 ||
      s.block_size > 1024 || s.block_size % 16 != 0 || (s.block_size > 0 && s.block_size % sbs))
    violated("accepted sfa block sizes out of range: " + s.name);
}

void check_options(const CliOptions& o) {
  using kvflash::fuzz::violated;
  if (o.demo.num_threads < 0 || o.demo.num_threads > kCliMaxThreads)
    violated("accepted --threads " + std::to_string(o.demo.num_threads));
  if (o.demo.iterations < 1 || o.demo.iterations > kCliMaxIterations)
    violated("accepted --iters " + std::to_string(o.demo.iterations));
  if (o.command == CliCommand::kIfa) check_shape(o.ifa);
  if (o.command == CliCommand::kBench) {
    for (const BenchProblem& p : o.bench) {
      if (p.op == BenchOp::kIfa) check_shape(p.ifa);
      else check_sfa(p.sfa);
    }
  }
}

bool same_shape(const IfaWorkloadShape& a, const IfaWorkloadShape& b) {
  return a.name == b.name && a.lengths == b.lengths && a.num_heads == b.num_heads &&
         a.num_kv_heads == b.num_kv_heads && a.head_dim == b.head_dim &&
         a.block_size == b.block_size && a.kv_dtype == b.kv_dtype;
}

bool same_shapes(const std::vector<BenchProblem>& a, const std::vector<BenchProblem>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].name != b[i].name || a[i].op != b[i].op || !same_shape(a[i].ifa, b[i].ifa) ||
        a[i].ifa.paged_bnsd != b[i].ifa.paged_bnsd)
      return false;
  return true;
}

bool same(const CliOptions& a, const CliOptions& b) {
  return a.command == b.command && a.demo.num_threads == b.demo.num_threads &&
         a.demo.iterations == b.demo.iterations && a.demo.quick == b.demo.quick &&
         same_shape(a.ifa, b.ifa) && same_shapes(a.bench, b.bench) &&
         a.bench_json == b.bench_json && a.bench_csv == b.bench_csv &&
         a.bench_list == b.bench_list && a.check == b.check && a.skip_bandwidth == b.skip_bandwidth;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using kvflash::fuzz::violated;
  std::vector<std::string> args{"kvflash"};
  std::string cur;
  for (size_t i = 0; i < size && args.size() < 64; ++i) {
    const char c = static_cast<char>(data[i]);
    if (c == '\0' || c == '\n') {
      args.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  if (!cur.empty() && args.size() < 64) args.push_back(cur);
  std::vector<const char*> argv;
  for (const std::string& s : args) argv.push_back(s.c_str());
  std::string joined;
  for (const std::string& s : args) joined += "'" + s + "' ";
  kvflash::fuzz::set_context(joined);

  CliOptions o1, o2;
  std::ostringstream out1, err1, out2, err2;
  const int rc1 = parse_cli(static_cast<int>(argv.size()), argv.data(), &o1, out1, err1);
  const int rc2 = parse_cli(static_cast<int>(argv.size()), argv.data(), &o2, out2, err2);
  if (rc1 != rc2 || out1.str() != out2.str() || err1.str() != err2.str())
    violated("parsing the same command line twice gave different results");
  if (rc1 == kCliRun) {
    check_options(o1);
    if (!same(o1, o2)) violated("parsing the same command line twice gave different options");
    return 0;
  }
  if (rc1 < 0) violated("parse_cli returned " + std::to_string(rc1));
  if (rc1 == 0 && out1.str().empty()) violated("status 0 without help text");
  if (rc1 != 0 && err1.str().empty())
    violated("status " + std::to_string(rc1) + " without a reason");
  return 0;
}
