#include "roofline.hpp"

#include <algorithm>
#include <cstdio>
#include <utility>

namespace kvflash::tools {
namespace {

constexpr double kLatentDim = 512, kRopeDim = 64;  // SFA's latent KV head (DeepSeek-V3.2 MLA)
constexpr double kIndexerDim = 128;                // the lightning indexer's head dim

double d(int64_t v) { return static_cast<double>(v); }

}  // namespace

Work ifa_decode_work(int64_t tokens, int64_t batch, int64_t heads, int64_t kv_heads,
                     int64_t head_dim, int kv_elem_bytes, int q_elem_bytes) {
  return {4.0 * d(tokens) * d(heads) * d(head_dim),
          2.0 * d(tokens) * d(kv_heads) * d(head_dim) * kv_elem_bytes +
              2.0 * d(batch) * d(heads) * d(head_dim) * q_elem_bytes};
}

Work prefill_work(double visible_pairs, int64_t query_rows, int64_t kv_tokens, int64_t heads,
                  int64_t kv_heads, int64_t head_dim, int kv_elem_bytes, int q_elem_bytes) {
  return {4.0 * visible_pairs * d(heads) * d(head_dim),
          2.0 * d(query_rows) * d(heads) * d(head_dim) * q_elem_bytes +
              2.0 * d(kv_tokens) * d(kv_heads) * d(head_dim) * kv_elem_bytes};
}

Work sfa_work(int64_t selected_tokens, int64_t batch, int64_t heads, int elem_bytes) {
  return {2.0 * d(selected_tokens) * d(heads) * (kLatentDim + kRopeDim + kLatentDim),
          elem_bytes * (d(selected_tokens) * (kLatentDim + kRopeDim) +
                        d(batch) * d(heads) * (2 * kLatentDim + kRopeDim))};
}

Work li_work(int64_t requests, int64_t rows, int64_t keys, int64_t heads, int elem_bytes) {
  return {2.0 * d(rows) * d(keys) * d(heads) * kIndexerDim,
          elem_bytes * (d(requests) * d(keys) * kIndexerDim + d(rows) * d(heads) * (kIndexerDim + 1))};
}

Work kv_cache_work(int64_t tokens, int64_t row_bytes) {
  return {0.0, 4.0 * d(tokens) * d(row_bytes) + 4.0 * d(tokens)};
}

RowDtype row_dtype(const std::string& name) {
  if (name == "fp16") return RowDtype::kFp16;
  if (name.rfind("int8", 0) == 0) return RowDtype::kInt8;
  return RowDtype::kBf16;
}

Ceiling compute_ceiling(RowDtype dtype, bool on_tiles, const ComputePeaks& peaks) {
  const bool fp16 = dtype == RowDtype::kFp16;
  if (on_tiles && peaks.amx > 0) return fp16 ? Ceiling{"amx/2", peaks.amx / 2} : Ceiling{"amx", peaks.amx};
  const double dot = fp16 ? peaks.bf16 / 2 : peaks.bf16;
  if (dot <= 0 && peaks.fma <= 0) return {};
  if (dot > peaks.fma) return {fp16 ? "vdpbf16ps/2" : "vdpbf16ps", dot};
  return {"fma", peaks.fma};
}

ComputePeaks usable_peaks(ComputePeaks peaks, cpu::Isa isa) {
  if (isa < cpu::Isa::kAmx) peaks.amx = 0;
  if (isa < cpu::Isa::kAvx512Bf16) peaks.bf16 = 0;
  if (isa < cpu::Isa::kAvx2) peaks.fma = 0;
  return peaks;
}

Roofline roofline(const Work& work, double measured_ms, double read_bandwidth_gbs,
                  const Ceiling& ceiling) {
  Roofline r;
  r.intensity = work.intensity();
  if (read_bandwidth_gbs <= 0 || measured_ms <= 0) return r;
  r.valid = true;
  r.memory_ms = work.bytes / read_bandwidth_gbs / 1e6;  // bytes / (GB/s * 1e9) s, in ms
  r.compute_ms = ceiling.gflops > 0 ? work.flops / ceiling.gflops / 1e6 : 0.0;
  r.ms = std::max(r.memory_ms, r.compute_ms);
  r.bound = r.compute_ms > r.memory_ms ? ceiling.engine : "memory";
  r.gflops = r.ms > 0 ? work.flops / r.ms / 1e6 : 0.0;
  r.fraction = r.ms / measured_ms;
  return r;
}

std::string describe_roofline(const Roofline& r, double read_bandwidth_gbs, const Ceiling& c) {
  if (!r.valid) return "";
  char roof[96], other[96] = "", buf[320];
  if (r.bound == "memory") {
    std::snprintf(roof, sizeof roof, "memory-bound: %.1f GB/s", read_bandwidth_gbs);
    if (c.gflops > 0)
      std::snprintf(other, sizeof other, "; %s %.0f GFLOP/s would take %.3g ms", c.engine.c_str(),
                    c.gflops, r.compute_ms);
  } else {
    std::snprintf(roof, sizeof roof, "%s-bound: %.0f GFLOP/s", r.bound.c_str(), c.gflops);
    std::snprintf(other, sizeof other, "; %.1f GB/s would take %.3g ms", read_bandwidth_gbs,
                  r.memory_ms);
  }
  std::snprintf(buf, sizeof buf, "intensity %.3g FLOP/B; roofline %.3g ms (%s%s): %.2f of the roofline",
                r.intensity, r.ms, roof, other, r.fraction);
  return buf;
}

void print_roofline_ceilings(double read_bandwidth_gbs, const ComputePeaks& peaks,
                             const TileEntries& tiles) {
  if (read_bandwidth_gbs <= 0) return;
  std::printf("roofline ceilings (docs/perf.md, \"Roofline\"): memory %.1f GB/s read; compute per "
              "dtype (ridge: the FLOP/B above which a row is compute-bound)\n",
              read_bandwidth_gbs);
  const auto line = [&](const char* where, bool on_tiles) {
    std::printf("  %s:", where);
    const char* sep = "";
    for (auto [name, dtype] : {std::pair{"bf16", RowDtype::kBf16}, {"fp16", RowDtype::kFp16},
                               {"int8 KV", RowDtype::kInt8}}) {
      const Ceiling c = compute_ceiling(dtype, on_tiles, peaks);
      if (c.gflops <= 0) continue;
      std::printf("%s %s %s %.0f GFLOP/s (ridge %.3g)", sep, name, c.engine.c_str(), c.gflops,
                  c.gflops / read_bandwidth_gbs);
      sep = ";";
    }
    std::printf("\n");
  };
  const std::string on = tiles.names();
  if (peaks.amx > 0 && !on.empty()) line(("on the tiles (" + on + ")").c_str(), true);
  if (!tiles.all() || peaks.amx <= 0)
    line(peaks.amx > 0 && !on.empty() ? "on vector units (the other operators)"
                                      : "on vector units (every operator)",
         false);
}

}  // namespace kvflash::tools
