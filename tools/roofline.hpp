// The roofline of a benchmark row (docs/perf.md, "Roofline"): what one call of an operator must do
// (its FLOPs and the bytes it must move, defined here once per operator), the compute ceiling of
// the engine it runs on for its data type, and the time the faster of memory and arithmetic
// allows: max(bytes / read bandwidth, FLOPs / ceiling). `kvflash bench`, `kvflash info`, and the
// standalone benches (bench/li_bench.cpp, bench/cpu_fia_prefill_bench.cpp) all take their figures
// from here, so that a row means the same thing wherever it is printed.
#pragma once

#include <cstdint>
#include <string>

#include "bf16_peak.hpp"
#include "cpu/isa.hpp"
#include "tile_entries.hpp"

namespace kvflash::tools {

/// What one call must do: useful FLOPs (2 a multiply-add, the products the operator defines, not
/// what a kernel's split passes add) and the bytes it must move between memory and the cores at
/// least once (inputs read, outputs written).
struct Work {
  double flops = 0, bytes = 0;
  /// FLOPs per byte (0 when no bytes).
  double intensity() const { return bytes > 0 ? flops / bytes : 0.0; }
};

/// IFA / FIA decode: every query head scores (QK) and sums (PV) every cached token of its group,
/// 4 * tokens * heads * head_dim FLOPs; bytes are the K and V rows read (tokens * kv_heads *
/// head_dim each, kv_elem_bytes an element: 1 for int8) and the query read and output written
/// (batch * heads * head_dim each, q_elem_bytes). An int8 cache's antiquant scale and offset
/// (2 x kv_heads * head_dim per K and V, independent of the length) are not counted.
Work ifa_decode_work(int64_t tokens, int64_t batch, int64_t heads, int64_t kv_heads,
                     int64_t head_dim, int kv_elem_bytes, int q_elem_bytes);

/// FIA / PFA prefill (or a mixed chunk): 4 * visible (query row, key) pairs * heads * head_dim
/// FLOPs (causal: only the pairs the mask lets through); bytes are Q read and O written
/// (query_rows * heads * head_dim each, q_elem_bytes) and K and V read once (kv_tokens * kv_heads
/// * head_dim each, kv_elem_bytes).
Work prefill_work(double visible_pairs, int64_t query_rows, int64_t kv_tokens, int64_t heads,
                  int64_t kv_heads, int64_t head_dim, int kv_elem_bytes, int q_elem_bytes);

/// SFA (sparse MLA decode, one latent KV head of 512 + 64 rope dims shared by every head): per
/// selected token and head QK over 576 dims and PV over 512, 2 * (576 + 512) FLOPs; bytes are the
/// gathered latent + rope rows once per sequence (the heads share them), the query read (576 a
/// head) and the output written (512 a head).
Work sfa_work(int64_t selected_tokens, int64_t batch, int64_t heads, int elem_bytes);

/// The lightning indexer (D = 128): every query row scores every key of its request with every
/// head, 2 * rows * keys * heads * 128 FLOPs; bytes are the keys once per request (its rows share
/// them) and each row's query (heads * 128) and weights (heads).
Work li_work(int64_t requests, int64_t rows, int64_t keys, int64_t heads, int elem_bytes);

/// The cache write (ScatterPaKvCache): no FLOPs; the key and value rows read and written (4 *
/// tokens * row_bytes) and the int32 slot of each token.
Work kv_cache_work(int64_t tokens, int64_t row_bytes);

/// The compute ceiling a row is held to: the fastest exact product the machine offers for its
/// data type on the engine kvflash's dispatch runs its operator on (tile_entries.hpp).
///   bf16, int8 (widened to bf16 exactly): one bf16 product each; on the tiles the AMX tdpbf16ps
///     peak ("amx"), else the faster of vdpbf16ps ("vdpbf16ps") and the fp32 FMA ("fma").
///   fp16: bf16 holds 8 of its 11 significand bits, so an exact product takes two bf16 pieces
///     (src/cpu/amx/amx_split.hpp): on the tiles half the AMX peak ("amx/2"), else the faster of
///     half the vdpbf16ps peak ("vdpbf16ps/2") and the fp32 FMA. No kvflash kernel uses AMX-FP16
///     or AVX512-FP16 (cpu::CpuFeatures records them only), so neither is a ceiling.
/// engine is empty and gflops 0 when no loop for it could run (peaks not measured).
struct Ceiling {
  std::string engine;
  double gflops = 0;
};

/// The element type a row's products take: what the ceiling depends on.
enum class RowDtype { kBf16, kFp16, kInt8 };

/// "bf16", "fp16", "int8" (int8t and the like: the caller maps them to kInt8); kBf16 otherwise.
RowDtype row_dtype(const std::string& name);

Ceiling compute_ceiling(RowDtype dtype, bool on_tiles, const ComputePeaks& peaks);

/// peaks without the loops a kernel capped at `isa` cannot use (a standalone bench that runs its
/// kernel below the machine's level): vdpbf16ps below avx512bf16, AMX below amx, FMA below avx2.
ComputePeaks usable_peaks(ComputePeaks peaks, cpu::Isa isa);

/// A row against its roofline. valid is false without a measured read bandwidth (the memory
/// roof is always there; the compute roof only where a ceiling was measured).
struct Roofline {
  bool valid = false;
  double intensity = 0;     ///< FLOPs per byte
  double memory_ms = 0;     ///< bytes / read bandwidth
  double compute_ms = 0;    ///< FLOPs / ceiling (0 without a ceiling)
  double ms = 0;            ///< max(memory_ms, compute_ms): the fastest call the machine allows
  double gflops = 0;        ///< FLOPs / ms: the attainable rate, min(ceiling, bandwidth x intensity)
  std::string bound;        ///< "memory" or the ceiling's engine
  double fraction = 0;      ///< ms / measured ms: 1 is at the roofline
};

/// work timed at measured_ms per call, with read_bandwidth_gbs (0 = not measured) and ceiling.
Roofline roofline(const Work& work, double measured_ms, double read_bandwidth_gbs,
                  const Ceiling& ceiling);

/// "intensity 3.97 FLOP/B; roofline 2.1 ms (memory-bound: 32.0 GB/s; amx 7201 GFLOP/s would
/// take 0.0104 ms): 0.87 of the roofline", or "" when !r.valid.
std::string describe_roofline(const Roofline& r, double read_bandwidth_gbs, const Ceiling& c);

/// `kvflash info` (and every run that measures the ceilings): the memory roof and, per dtype, the
/// compute ceiling rows are held to on the tiles and on vector units, with its ridge point.
/// Prints nothing without a measured bandwidth.
void print_roofline_ceilings(double read_bandwidth_gbs, const ComputePeaks& peaks,
                             const TileEntries& tiles);

}  // namespace kvflash::tools
