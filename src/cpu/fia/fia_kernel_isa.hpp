// Per-ISA entry points of the FIA prefill kernel (one translation unit each, see
// fia_kernel-inl.h), and each level's kernel table (cpu::FiaKernels). The backend list names the
// tables (src/backends/lists.cpp), in entries available only where the CPU has the level.
#pragma once

#include <cstdint>

#include "cpu/fia/fia_kernel.hpp"

namespace kvflash::cpu {

#define KVFLASH_FIA_ENTRIES                                                                 \
  void fia_task_entry(const FiaParams& p, const FiaPointers& d, float* scratch, int64_t b,  \
                      int64_t n2, int64_t qt, int64_t t_first, int64_t t_last, float* slot, \
                      const FiaPackedKv* kv);                                               \
  void fia_merge_entry(const FiaParams& p, const FiaPointers& d, float* scratch, int64_t b, \
                       int64_t n2, int64_t qt, int64_t chunks, const float* slots);
namespace scalar {
KVFLASH_FIA_ENTRIES
extern const FiaKernels kFiaKernels;
int64_t fia_scratch_floats_entry(const FiaParams& p);
/// Floats of one split-KV merge slot row (fia_slot_floats).
int64_t fia_slot_floats_entry(const FiaParams& p);
/// Writes the padding rows (fia_pad_rows; the same bits at every ISA).
void fia_pad_rows_entry(const FiaParams& p, const FiaPointers& d, float* scratch);
/// Whether the bf16 dot entry can run p (fia_bf16_dot_shape).
bool fia_bf16_dot_shape_entry(const FiaParams& p);
}  // namespace scalar
namespace avx2 {
KVFLASH_FIA_ENTRIES
extern const FiaKernels kFiaKernels;
}  // namespace avx2
namespace avx512 {
KVFLASH_FIA_ENTRIES
extern const FiaKernels kFiaKernels;
/// The same kernels scoring bf16 Q and K with AVX512-BF16 dot products where the shape allows
/// (fia_bf16_dot_shape): the avx512bf16 level.
extern const FiaKernels kFiaKernelsBf16;
/// The task with AVX512-BF16 scores (avx512bf16 level, fia_bf16_dot_shape(p) only).
void fia_task_bf16_entry(const FiaParams& p, const FiaPointers& d, float* scratch, int64_t b,
                         int64_t n2, int64_t qt, int64_t t_first, int64_t t_last, float* slot,
                         const FiaPackedKv* kv);
/// Packs a key tile for the bf16 task (FiaPackFn, fia_pack_tile_bf16).
void fia_pack_bf16_entry(const FiaParams& p, const FiaPointers& d, int64_t b, int64_t n2, int64_t t,
                         uint16_t* dst);
}  // namespace avx512
namespace amx {
/// The avx512bf16 kernels with the bf16 path's products on the matrix engine where the shape
/// allows (fia_kernel_amx.cpp, FiaTiles): the amx level.
extern const FiaKernels kFiaKernels;
}  // namespace amx
#undef KVFLASH_FIA_ENTRIES

}  // namespace kvflash::cpu
