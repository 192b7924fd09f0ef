// The FIA prefill kernel compiled for the avx512 instruction set (see fia_kernel-inl.h), with the
// AVX512-BF16 score path (fia_task_bf16_entry), which fia_run enters only at the avx512bf16 level.
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "core/online_softmax.hpp"
#include "cpu/fia/fia_kernel.hpp"
#include "cpu/fia/fia_kernel_isa.hpp"
#include "cpu/simd_avx512.h"

namespace kvflash::cpu::avx512 {
// The order matters: each header uses what the previous ones define.
// clang-format off
#include "cpu/simd_math-inl.h"
#include "cpu/softmax_state.h"
#define KVFLASH_FIA_BF16_DOT 1  // AVX512-BF16 scores for bf16 inputs where the CPU has them
#include "cpu/fia/fia_kernel-inl.h"
// clang-format on

void fia_task_entry(const FiaParams& p, const FiaPointers& d, float* scratch, int64_t b, int64_t n2,
                    int64_t qt, int64_t t_first, int64_t t_last, float* slot,
                    const FiaPackedKv* kv) {
  fia_task_body<false>(p, d, scratch, b, n2, qt, t_first, t_last, slot, kv);
}

void fia_merge_entry(const FiaParams& p, const FiaPointers& d, float* scratch, int64_t b, int64_t n2,
                     int64_t qt, int64_t chunks, const float* slots) {
  fia_merge(p, d, scratch, b, n2, qt, chunks, slots);
}

void fia_task_bf16_entry(const FiaParams& p, const FiaPointers& d, float* scratch, int64_t b,
                         int64_t n2, int64_t qt, int64_t t_first, int64_t t_last, float* slot,
                         const FiaPackedKv* kv) {
  fia_task_body<true>(p, d, scratch, b, n2, qt, t_first, t_last, slot, kv);
}
void fia_pack_bf16_entry(const FiaParams& p, const FiaPointers& d, int64_t b, int64_t n2, int64_t t,
                         uint16_t* dst) {
  fia_pack_tile_bf16(p, d, b, n2, t, dst);
}
const FiaKernels kFiaKernels = {fia_task_entry, nullptr, fia_merge_entry, nullptr};
const FiaKernels kFiaKernelsBf16 = {fia_task_entry, fia_task_bf16_entry, fia_merge_entry,
                                    fia_pack_bf16_entry};
}  // namespace kvflash::cpu::avx512
