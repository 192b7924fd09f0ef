// The IFA CUDA backend's host side that is plain C++ (no CUDA runtime): the workspace layout, the
// launch geometry, a run's per-sequence table and the decoding of the device's fault record into
// the CPU's status and message. Built in every configuration, so the CPU tests
// (tests/cuda_ifa_plan_test.cpp) check it on machines without a GPU.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/device_fault.hpp"
#include "cuda/ifa/ifa_cuda_layout.hpp"
#include "kvflash/status.hpp"
#include "ops/ifa/ifa_problem.hpp"

namespace kvflash::cuda {

/// Chunks of every sequence of p (from p.kv_len); the chunk CTAs are this times the kv heads.
int64_t ifa_cuda_total_chunks(const core::IfaProblem& p);

/// Workspace layout for p (offsets 256-byte aligned; bytes includes 256 bytes of alignment slack).
IfaCudaLayout ifa_cuda_layout(const core::IfaProblem& p);

/// Launch geometry for p: fixed per plan.
IfaCudaGeometry ifa_cuda_geometry(const core::IfaProblem& p);

/// Workspace bytes of the CUDA backend for p (ifa_cuda_layout(p).bytes).
size_t ifa_cuda_workspace_size(const core::IfaProblem& p);

/// Table entries [first, first + count) of a run of p on the bound data d: K/V base pointers and
/// strides of each sequence, its length and first chunk. Pointer arithmetic only: nothing is read
/// through the pointers, so device tensors are fine.
void ifa_cuda_seq_entries(const core::IfaProblem& p, const core::IfaData& d, int64_t first,
                          int count, IfaCudaSeq* out);

/// The CUDA entry's supports hook (core::Backend::supports): its kernels implement IFA's own
/// features; what FIA's decode branch adds to the problem (a learnable sink, split or per-token
/// antiquant parameters, a sliding-window start, FIA's +inf empty LSE) is refused by name.
bool ifa_cuda_supports(const core::IfaProblem& p, const char** why);

/// The CUDA entry's fault hook (core::Backend::fault_status) on a host copy of the record the run
/// wrote: ifa::ifa_fault_status, the CPU backend's status and message for the same bad data.
Status ifa_cuda_decode_fault(const core::IfaProblem& p, const core::FaultRecord& record);

}  // namespace kvflash::cuda
