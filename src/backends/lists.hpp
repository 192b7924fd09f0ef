// Every operator's implementation list (core/backend.hpp), best first: in builds with the CUDA
// backend its entries, then the CPU entries, one per instruction-set level (avx512bf16, avx512,
// avx2, scalar), which all need the same workspace; the merge and the KV cache write have a single
// portable CPU entry each.
#pragma once

#include <span>

#include "core/backend.hpp"
#include "core/device_fault.hpp"
#include "kvflash/status.hpp"
#include "kvflash/tensor.hpp"
#include "ops/fia/fia_problem.hpp"
#include "ops/ifa/ifa_problem.hpp"
#include "ops/kv_cache/kv_cache_problem.hpp"
#include "ops/li/li_problem.hpp"
#include "ops/merge/merge_problem.hpp"
#include "ops/sfa/sfa_problem.hpp"

namespace kvflash {

using IfaBackend = core::Backend<core::IfaProblem, core::IfaData>;
using SfaBackend = core::Backend<core::SfaProblem, core::SfaData>;
using MergeBackend = core::Backend<core::MergeProblem, core::MergeData>;
using LiBackend = core::Backend<core::LiProblem, core::LiData>;
using FiaBackend = core::Backend<core::FiaProblem, core::FiaData>;
using KvCacheBackend = core::Backend<core::KvCacheProblem, core::KvCacheData>;

std::span<const IfaBackend> ifa_backends();
std::span<const SfaBackend> sfa_backends();
std::span<const MergeBackend> merge_backends();
std::span<const LiBackend> li_backends();
std::span<const FiaBackend> fia_backends();
std::span<const KvCacheBackend> kv_cache_backends();

/// The fault record a device run left at the start of workspace (core::fault_record_at, on
/// device's memory), copied into *record once the work queued on stream before this call has run
/// (the host waits for the stream). kRuntime, recorded for op, when the copy fails or the build
/// has no backend for device.
Status read_fault_record(const char* op, Device device, const void* workspace, void* stream,
                         core::FaultRecord* record);

}  // namespace kvflash
