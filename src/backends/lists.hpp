// Every operator's implementation list (core/backend.hpp), best first: in builds with the CUDA
// backend its entries, then the CPU entries, one per instruction-set level (avx512bf16, avx512,
// avx2, scalar), which all need the same workspace; the merge has a single portable CPU entry.
#pragma once

#include <span>

#include "core/backend.hpp"
#include "ops/fia/fia_problem.hpp"
#include "ops/ifa/ifa_problem.hpp"
#include "ops/merge/merge_problem.hpp"
#include "ops/sfa/sfa_problem.hpp"

namespace kvflash {

using IfaBackend = core::Backend<core::IfaProblem, core::IfaData>;
using SfaBackend = core::Backend<core::SfaProblem, core::SfaData>;
using MergeBackend = core::Backend<core::MergeProblem, core::MergeData>;

std::span<const IfaBackend> ifa_backends();
std::span<const SfaBackend> sfa_backends();
std::span<const MergeBackend> merge_backends();

using FiaBackend = core::Backend<core::FiaProblem, core::FiaData>;
std::span<const FiaBackend> fia_backends();

}  // namespace kvflash
