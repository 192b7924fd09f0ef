// Per-ISA entry points of the IFA kernel (one translation unit each, see ifa_kernel-inl.h). Only
// ifa_kernel.cpp calls them, after checking the ISA with active_isa().
#pragma once

#include <cstddef>
#include <cstdint>

#include "ops/ifa/ifa_problem.hpp"
#include "cpu/ifa/ifa_workspace.hpp"

namespace kvflash::cpu {

// Chunk task `task` (see ifa_workspace.hpp): online softmax over one chunk for the kv heads of
// the task, into their slots.
// Merge task `task` = b * num_kv_heads + n2: combines the chunk slots and writes out and LSE.
namespace scalar {
void ifa_chunk(const core::IfaProblem& p, const core::IfaData& d, const IfaLayout& layout,
               const IfaSchedule& schedule, std::byte* base, int64_t task);
void ifa_merge(const core::IfaProblem& p, const core::IfaData& d, const IfaLayout& layout,
               std::byte* base, int64_t task);
}  // namespace scalar
namespace avx2 {
void ifa_chunk(const core::IfaProblem& p, const core::IfaData& d, const IfaLayout& layout,
               const IfaSchedule& schedule, std::byte* base, int64_t task);
void ifa_merge(const core::IfaProblem& p, const core::IfaData& d, const IfaLayout& layout,
               std::byte* base, int64_t task);
}  // namespace avx2
namespace avx512 {
void ifa_chunk(const core::IfaProblem& p, const core::IfaData& d, const IfaLayout& layout,
               const IfaSchedule& schedule, std::byte* base, int64_t task);
void ifa_merge(const core::IfaProblem& p, const core::IfaData& d, const IfaLayout& layout,
               std::byte* base, int64_t task);
}  // namespace avx512

}  // namespace kvflash::cpu
