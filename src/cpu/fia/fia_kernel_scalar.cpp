// The FIA prefill kernel compiled for the scalar instruction set (see fia_kernel-inl.h).
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "core/online_softmax.hpp"
#include "cpu/fia/fia_kernel.hpp"
#include "cpu/fia/fia_kernel_isa.hpp"
#include "cpu/simd_scalar.h"

namespace kvflash::cpu::scalar {
// The order matters: each header uses what the previous ones define.
// clang-format off
#include "cpu/simd_math-inl.h"
#include "cpu/softmax_state.h"
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

int64_t fia_scratch_floats_entry(const FiaParams& p) { return fia_scratch_floats(p); }

int64_t fia_slot_floats_entry(const FiaParams& p) { return fia_slot_floats(p); }

void fia_pad_rows_entry(const FiaParams& p, const FiaPointers& d, float* scratch) {
  fia_pad_rows(p, d, scratch);
}

bool fia_bf16_dot_shape_entry(const FiaParams& p) { return fia_bf16_dot_shape(p); }
const FiaKernels kFiaKernels = {fia_task_entry, nullptr, fia_merge_entry, nullptr};
}  // namespace kvflash::cpu::scalar
