// Every operator's implementation list (core/backend.hpp), best first. Today: the CPU entries,
// one per instruction-set level (avx512bf16, avx512, avx2, scalar), which all need the same
// workspace, and the merge's single portable CPU entry. A CUDA backend adds its entries in front.
#pragma once

#include <span>

#include "core/backend.hpp"
#include "ops/ifa/ifa_problem.hpp"
#include "ops/merge/merge_problem.hpp"
#include "ops/sfa/sfa_problem.hpp"
#include "kvflash/ifa.hpp"
#include "kvflash/merge.hpp"
#include "kvflash/sfa.hpp"

namespace kvflash {

using IfaBackend = core::Backend<core::IfaProblem, IfaArgs>;
using SfaBackend = core::Backend<core::SfaProblem, SfaArgs>;
using MergeBackend = core::Backend<core::MergeProblem, MergeArgs>;

std::span<const IfaBackend> ifa_backends();
std::span<const SfaBackend> sfa_backends();
std::span<const MergeBackend> merge_backends();

}  // namespace kvflash
