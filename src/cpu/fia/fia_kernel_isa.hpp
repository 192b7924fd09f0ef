// Per-ISA entry points of the FIA prefill kernel (one translation unit each, see
// fia_kernel-inl.h). Only fia_kernel.cpp calls them, after checking the ISA with active_isa().
#pragma once

#include <cstdint>

#include "cpu/fia/fia_kernel.hpp"

namespace kvflash::cpu {

// One task (batch b, KV head n2, query tile qt) with `scratch` of fia_scratch_floats(p) floats.
namespace scalar {
void fia_task_entry(const FiaParams& p, const FiaData& d, float* scratch, int64_t b, int64_t n2,
                    int64_t qt);
int64_t fia_scratch_floats_entry(const FiaParams& p);
}  // namespace scalar
namespace avx2 {
void fia_task_entry(const FiaParams& p, const FiaData& d, float* scratch, int64_t b, int64_t n2,
                    int64_t qt);
}  // namespace avx2
namespace avx512 {
void fia_task_entry(const FiaParams& p, const FiaData& d, float* scratch, int64_t b, int64_t n2,
                    int64_t qt);
}  // namespace avx512

}  // namespace kvflash::cpu
