// Measured bf16 dot-product peak: the ceiling a compute-bound kernel (SFA with many heads) is
// compared against, taken in the same run as the kernel it judges.
#pragma once

namespace kvflash::tools {

/// GFLOP/s of a register-only loop of AVX512-BF16 vdpbf16ps (64 FLOP each: 16 lanes x 2 products x
/// multiply-add) on num_threads workers (0 = library default), the fastest of a few passes. 0 when
/// the active ISA has no AVX512-BF16 (KVFLASH_MAX_ISA caps it like the kernels).
double measure_bf16_peak_gflops(int num_threads);

/// GFLOP/s of a register-only loop of fp32 FMAs (vfmadd231ps: AVX-512, or AVX2 below it) on
/// num_threads workers; 0 below AVX2. The kernels' fp32 paths run on it, and on some CPUs it
/// beats vdpbf16ps (measured on a 2-core Xeon VM: 2x), so a kernel's compute ceiling is the
/// larger of the two.
double measure_fma_peak_gflops(int num_threads);

/// GFLOP/s of a register-only loop of AMX tdpbf16ps on full 16 x 16 x 32 tiles (cpu::amx::peak_loop:
/// 16,384 FLOP each) on num_threads workers; 0 below the amx level (KVFLASH_MAX_ISA caps it like
/// the kernels). The ceiling of the rows whose operator runs its cpu-amx entry (tile_entries.hpp,
/// roofline.hpp's compute_ceiling).
double measure_amx_peak_gflops(int num_threads);

/// The compute ceilings of one run, measured together (`kvflash info`, `demo`, `bench`).
struct ComputePeaks {
  double bf16 = 0, fma = 0, amx = 0;  ///< GFLOP/s; 0 where the loop cannot run
  /// The faster of the bf16 dot and fp32 FMA loops (the JSON's compute_peak_gflops); a row's
  /// own ceiling, per dtype and engine, is roofline.hpp's compute_ceiling.
  double compute() const { return bf16 > fma ? bf16 : fma; }
};

/// All three loops on num_threads workers (0 = library default).
ComputePeaks measure_compute_peaks(int num_threads);

/// Prints the peaks: the vector loops, and the matrix engine's (or why there is none), with the
/// operators whose rows are judged against it (tile_entries().names()).
void print_compute_peaks(const ComputePeaks& peaks, int threads);

}  // namespace kvflash::tools
