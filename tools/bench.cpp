#include "bench.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "bench_fia.hpp"
#include "bench_sfa.hpp"
#include "bf16_peak.hpp"
#include "cpu/isa.hpp"
#include "cpu/thread_pool.hpp"
#include "ifa_workload.hpp"
#include "kv_cache_workload.hpp"
#include "li_workload.hpp"
#include "roofline.hpp"
#include "tile_entries.hpp"

namespace kvflash::tools {
namespace {

// One row of the report, the same columns for both operators (0 or "" where a column does not
// apply): what bench/report.py and bench/peers.py read.
struct Row {
  std::string problem, op, kv_dtype, layout;
  long long batch = 0, kv_len = 0, heads = 0, kv_heads = 0, head_dim = 0, paged = 0;
  long long top_k = 0, sparse_block = 0;
  CallTimes times;  ///< per call: median (ms_per_call in the JSON and CSV), p10, p90
  double bytes = 0, flops = 0, gbs = 0, gflops = 0;  ///< bytes and flops: roofline.hpp's Work
  bool on_tiles = false;  ///< its operator's entry is cpu-amx (tile_entries.hpp)
  Ceiling ceiling;  ///< of the row's dtype on the engine its operator runs on (compute_ceiling)
  Roofline roof;    ///< the row against min(read bandwidth, ceiling / intensity)
  CallTimes capi;   ///< ifa with --capi: the C API path, alternated with the C++ call (runs 0: not)
  std::string capi_note;  ///< why the C API path was not timed
  CallTimes copy;  ///< kvcache: a plain copy of the same rows, alternated with the write (runs 0: not)
  bool passed = false;
};

Row ifa_row(const BenchProblem& p, const IfaWorkloadResult& r) {
  const IfaWorkloadShape& s = p.ifa;
  Row row;
  row.problem = p.name;
  row.op = "ifa";
  row.kv_dtype = dtype_name(s.kv_dtype);
  row.layout = s.block_size == 0 ? "contiguous"
               : s.paged_bnsd    ? "bnsd"
               : s.paged_atb     ? "atb"
                                 : "bsnd";
  row.batch = static_cast<long long>(s.lengths.size());
  row.kv_len = static_cast<long long>(s.lengths.empty() ? 0 : s.lengths[0]);
  row.heads = s.num_heads;
  row.kv_heads = s.num_kv_heads;
  row.head_dim = s.head_dim;
  row.paged = s.block_size;
  row.times = r.times;
  row.bytes = r.bytes;
  row.flops = r.flops;
  row.gbs = r.gbs;
  row.gflops = r.gflops;
  row.passed = r.passed;
  row.capi = r.capi_times;
  row.capi_note = r.capi_note;
  return row;
}

Row sfa_row(const BenchProblem& p, const SfaWorkloadResult& r) {
  const SfaWorkloadShape& s = p.sfa;
  Row row;
  row.problem = p.name;
  row.op = "sfa";
  row.kv_dtype = dtype_name(s.dtype);
  row.layout = s.block_size == 0 ? "contiguous" : "bsnd";
  row.batch = s.batch;
  row.kv_len = s.kv_len;
  row.heads = s.num_heads;
  row.kv_heads = 1;
  row.head_dim = 512;
  row.paged = s.block_size;
  row.top_k = s.top_k;
  row.sparse_block = s.sparse_block_size;
  row.times = r.times;
  row.bytes = r.gathered_bytes;
  row.flops = r.flops;
  row.gbs = r.gbs;
  row.gflops = r.gflops;
  row.passed = r.passed;
  return row;
}

Row fia_row(const BenchProblem& p, const FiaWorkloadResult& r) {
  const FiaWorkloadShape& s = p.fia;
  Row row;
  row.problem = p.name;
  row.op = s.prompt ? "pfa" : "fia";
  row.kv_dtype = s.kv_int8 == 1 ? "int8" : s.kv_int8 == 2 ? "int8t" : dtype_name(s.dtype);
  row.layout = s.block_size == 0 ? "contiguous" : "bsnd";
  row.batch = s.batch;
  row.kv_len = s.kv();
  row.heads = s.num_heads;
  row.kv_heads = s.num_kv_heads;
  row.head_dim = s.head_dim;
  row.paged = s.block_size;
  row.times = r.times;
  row.bytes = r.bytes;
  row.flops = r.flops;
  row.gbs = r.gbs;
  row.gflops = r.gflops;
  row.passed = r.passed;
  return row;
}

Row li_row(const BenchProblem& p, const LiWorkloadResult& r) {
  const LiWorkloadShape& s = p.li;
  Row row;
  row.problem = p.name;
  row.op = "li";
  row.kv_dtype = dtype_name(s.dtype);
  row.layout = "bsnd";
  row.batch = s.batch * s.next_n;
  row.kv_len = s.kv_len;
  row.heads = s.num_heads;
  row.kv_heads = 1;
  row.head_dim = 128;
  row.paged = s.block_size;
  row.top_k = s.top_k;
  row.times = r.times;
  row.bytes = r.key_bytes;
  row.flops = r.flops;
  row.gbs = r.gbs;
  row.gflops = r.gflops;
  row.passed = r.passed;
  return row;
}

Row kv_cache_row(const BenchProblem& p, const KvCacheWorkloadResult& r) {
  const KvCacheWorkloadShape& s = p.kv_cache;
  Row row;
  row.problem = p.name;
  row.op = "kvcache";
  row.kv_dtype = dtype_name(s.dtype);
  row.layout = s.decode ? "decode" : "prefill";
  row.batch = s.tokens;
  row.kv_heads = s.num_kv_heads;
  row.head_dim = s.head_dim;
  row.paged = s.block_size;
  row.times = r.times;
  row.copy = r.copy;
  row.bytes = r.bytes;
  row.gbs = r.gbs;
  row.passed = r.passed;
  return row;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

int threads_of(const CliOptions& o) {
  return o.demo.num_threads ? o.demo.num_threads : cpu::default_num_threads();
}

// The run's ceilings, the same keys in the JSON header and on every CSV line.
struct RunCeilings {
  double bw;
  const ComputePeaks& peaks;
};

bool write_json(const CliOptions& o, const DemoOptions& d, const RunCeilings& c,
                const std::vector<Row>& rows) {
  std::FILE* f = std::fopen(o.bench_json.c_str(), "w");
  if (!f) {
    std::fprintf(stderr, "kvflash bench: cannot write %s\n", o.bench_json.c_str());
    return false;
  }
  std::fprintf(f, "{\n  \"isa\": \"%s\",\n  \"threads\": %d,\n  \"iterations\": %d,\n",
               cpu::isa_name(cpu::active_isa()), threads_of(o), o.demo.iterations);
  std::fprintf(f,
               "  \"read_bandwidth_gbs\": %.6f,\n  \"bf16_peak_gflops\": %.6f,\n  "
               "\"fma_peak_gflops\": %.6f,\n  \"compute_peak_gflops\": %.6f,\n"
               "  \"amx_peak_gflops\": %.6f,\n",
               c.bw, c.peaks.bf16, c.peaks.fma, c.peaks.compute(), c.peaks.amx);
  std::fprintf(f, "  \"cache\": \"%s\",\n  \"flush_bytes\": %zu,\n",
               d.flush_bytes ? "cold" : "warm", d.flush_bytes);
  // ms_per_call is the median of the timed calls; ms_p10 / ms_p90 their spread.
  std::fprintf(f, "  \"ms_per_call_statistic\": \"median\",\n");
  std::fprintf(f, "  \"results\": [");
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    std::fprintf(f,
                 "%s\n    {\"problem\": %s, \"op\": \"%s\", \"batch\": %lld, \"kv_len\": %lld, "
                 "\"kv_dtype\": \"%s\", \"paged\": %lld, \"layout\": \"%s\", \"heads\": %lld, "
                 "\"kv_heads\": %lld, \"head_dim\": %lld, \"top_k\": %lld, \"sparse_block\": %lld, "
                 "\"ms_per_call\": %.6f, \"ms_p10\": %.6f, \"ms_p90\": %.6f, \"bytes\": %.0f, "
                 "\"flops\": %.0f, \"gbs\": %.4f, \"gflops\": %.4f, "
                 "\"bw_fraction\": %.4f, \"peak_fraction\": %.4f, \"intensity\": %.6g, "
                 "\"on_tiles\": %s, \"ceiling_engine\": %s, \"ceiling_gflops\": %.6f, "
                 "\"roofline_ms\": %.6f, \"bound\": %s, \"roofline_fraction\": %.4f, "
                 "\"capi_ms_per_call\": %.6f, \"capi_ms_p10\": %.6f, \"capi_ms_p90\": %.6f, "
                 "\"capi_ratio\": %.4f, \"capi_note\": %s, \"copy_ms_per_call\": %.6f, "
                 "\"copy_ratio\": %.4f, \"check_passed\": %s, \"flush_bytes\": %zu}",
                 i ? "," : "", json_string(r.problem).c_str(), r.op.c_str(), r.batch, r.kv_len,
                 r.kv_dtype.c_str(), r.paged, r.layout.c_str(), r.heads, r.kv_heads, r.head_dim,
                 r.top_k, r.sparse_block, r.times.median_ms, r.times.p10_ms, r.times.p90_ms,
                 r.bytes, r.flops, r.gbs, r.gflops, c.bw > 0 ? r.gbs / c.bw : 0.0,
                 r.ceiling.gflops > 0 ? r.gflops / r.ceiling.gflops : 0.0, r.roof.intensity,
                 r.on_tiles ? "true" : "false", json_string(r.ceiling.engine).c_str(),
                 r.ceiling.gflops, r.roof.ms, json_string(r.roof.bound).c_str(), r.roof.fraction,
                 r.capi.median_ms, r.capi.p10_ms, r.capi.p90_ms,
                 r.capi.runs > 0 ? r.capi.median_ms / r.times.median_ms : 0.0,
                 json_string(r.capi_note).c_str(), r.copy.median_ms,
                 r.copy.runs > 0 ? r.copy.median_ms / r.times.median_ms : 0.0,
                 r.passed ? "true" : "false", d.flush_bytes);
  }
  std::fprintf(f, "\n  ]\n}\n");
  return std::fclose(f) == 0;
}

bool write_csv(const CliOptions& o, const RunCeilings& c, const std::vector<Row>& rows) {
  std::FILE* f = std::fopen(o.bench_csv.c_str(), "w");
  if (!f) {
    std::fprintf(stderr, "kvflash bench: cannot write %s\n", o.bench_csv.c_str());
    return false;
  }
  // The run's settings repeat on every row so that a row read alone still says what it measured.
  std::fprintf(f,
               "problem,op,batch,kv_len,kv_dtype,paged,layout,heads,kv_heads,head_dim,top_k,"
               "sparse_block,ms_per_call,ms_p10,ms_p90,bytes,flops,gbs,gflops,bw_fraction,"
               "peak_fraction,intensity,on_tiles,ceiling_engine,ceiling_gflops,roofline_ms,bound,"
               "roofline_fraction,capi_ms_per_call,capi_ratio,check_passed,isa,threads,iterations,"
               "read_bandwidth_gbs,"
               "bf16_peak_gflops,fma_peak_gflops,compute_peak_gflops,amx_peak_gflops\n");
  for (const Row& r : rows) {
    // Problem strings hold commas: quoted (they hold no quotes: the parser refuses them); so do
    // the engine names ("amx/2" has none, but the quoting costs nothing).
    std::fprintf(f,
                 "\"%s\",%s,%lld,%lld,%s,%lld,%s,%lld,%lld,%lld,%lld,%lld,%.6f,%.6f,%.6f,%.0f,%.0f,"
                 "%.4f,%.4f,%.4f,%.4f,%.6g,%s,\"%s\",%.3f,%.6f,\"%s\",%.4f,%.6f,%.4f,%s,%s,%d,%d,"
                 "%.3f,%.3f,%.3f,%.3f,%.3f\n",
                 r.problem.c_str(), r.op.c_str(), r.batch, r.kv_len, r.kv_dtype.c_str(), r.paged,
                 r.layout.c_str(), r.heads, r.kv_heads, r.head_dim, r.top_k, r.sparse_block,
                 r.times.median_ms, r.times.p10_ms, r.times.p90_ms, r.bytes, r.flops, r.gbs,
                 r.gflops, c.bw > 0 ? r.gbs / c.bw : 0.0,
                 r.ceiling.gflops > 0 ? r.gflops / r.ceiling.gflops : 0.0, r.roof.intensity,
                 r.on_tiles ? "true" : "false", r.ceiling.engine.c_str(), r.ceiling.gflops,
                 r.roof.ms, r.roof.bound.c_str(), r.roof.fraction, r.capi.median_ms,
                 r.capi.runs > 0 ? r.capi.median_ms / r.times.median_ms : 0.0,
                 r.passed ? "true" : "false",
                 cpu::isa_name(cpu::active_isa()), threads_of(o), o.demo.iterations, c.bw,
                 c.peaks.bf16, c.peaks.fma, c.peaks.compute(), c.peaks.amx);
  }
  return std::fclose(f) == 0;
}

// Fills the row's ceiling and roofline (roofline.hpp) and prints the roofline line under the
// workload's own lines.
void judge(Row* row, bool on_tiles, const RunCeilings& c) {
  row->on_tiles = on_tiles;
  if (row->flops > 0) row->ceiling = compute_ceiling(row_dtype(row->kv_dtype), on_tiles, c.peaks);
  row->roof = roofline({row->flops, row->bytes}, row->times.median_ms, c.bw, row->ceiling);
  if (row->roof.valid)
    std::printf("     %s\n", describe_roofline(row->roof, c.bw, row->ceiling).c_str());
}

}  // namespace

bool list_bench(const CliOptions& o) {
  for (const BenchProblem& p : o.bench) std::printf("%s\n", p.name.c_str());
  return true;
}

bool run_bench(const CliOptions& o, double read_bandwidth_gbs, const ComputePeaks& peaks) {
  const DemoOptions& options = o.demo;
  // A row's compute ceiling is that of its dtype on the engine its operator's entry runs on.
  const TileEntries tiles = tile_entries();
  const RunCeilings ceilings{read_bandwidth_gbs, peaks};
  std::vector<Row> rows;
  bool ok = true;
  const auto start = std::chrono::steady_clock::now();
  const size_t n = o.bench.size();
  for (size_t i = 0; i < n; ++i) {
    const BenchProblem& p = o.bench[i];
    // One progress line per problem, on stdout with the results it heads (a second copy on
    // stderr interleaved with them when both go to a terminal); the time left after the first.
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (i == 0) {
      std::printf("bench [%zu/%zu] %s\n", i + 1, n, p.name.c_str());
    } else {
      std::printf("bench [%zu/%zu] %s  (%.0f s so far, about %.0f s left)\n", i + 1, n,
                  p.name.c_str(), elapsed,
                  elapsed / static_cast<double>(i) * static_cast<double>(n - i));
    }
    std::fflush(stdout);
    // Every BenchOp has its case (no default: -Wswitch names an operator left out).
    switch (p.op) {
      case BenchOp::kIfa: {
        IfaWorkloadResult r;
        ok = run_ifa_workload(p.ifa, options, read_bandwidth_gbs, /*check_sample=*/true, &r) && ok;
        rows.push_back(ifa_row(p, r));
        judge(&rows.back(), tiles.ifa, ceilings);
        break;
      }
      case BenchOp::kFia: {
        FiaWorkloadResult r;
        ok = run_fia_workload(p.fia, options, &r) && ok;
        rows.push_back(fia_row(p, r));
        judge(&rows.back(), tiles.fia, ceilings);
        break;
      }
      case BenchOp::kKvCache: {
        KvCacheWorkloadResult r;
        ok = run_kv_cache_workload(p.kv_cache, options, read_bandwidth_gbs, &r) && ok;
        rows.push_back(kv_cache_row(p, r));
        judge(&rows.back(), false, ceilings);
        break;
      }
      case BenchOp::kLi: {
        LiWorkloadResult r;
        ok = run_li_workload(p.li, options, read_bandwidth_gbs, &r) && ok;
        rows.push_back(li_row(p, r));
        judge(&rows.back(), tiles.li, ceilings);
        break;
      }
      case BenchOp::kSfa: {
        SfaWorkloadResult r;
        ok = run_sfa_workload(p.sfa, options, read_bandwidth_gbs, &r) && ok;
        rows.push_back(sfa_row(p, r));
        judge(&rows.back(), tiles.sfa, ceilings);
        break;
      }
    }
    std::fflush(stdout);
  }
  if (!o.bench_json.empty()) ok = write_json(o, options, ceilings, rows) && ok;
  if (!o.bench_csv.empty()) ok = write_csv(o, ceilings, rows) && ok;
  std::printf("bench: %s\n",
              ok ? n ? "all problems ran and passed their checks" : "probes only (no problem given)"
                 : "FAILED");
  return ok;
}

}  // namespace kvflash::tools
