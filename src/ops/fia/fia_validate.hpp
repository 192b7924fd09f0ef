// FIA / PFA argument validation: the only place that rejects their input (docs/conventions.md,
// "FusedInferAttentionScore"; the decisions of docs/fia-pfa-indexer.md).
#pragma once

#include "kvflash/fia.hpp"
#include "kvflash/status.hpp"
#include "ops/fia/fia_problem.hpp"

namespace kvflash::fia {

inline constexpr const char* kOpName = "fused_infer_attention_score";

/// Checks every rule on the arguments' metadata and the host lengths and fills *problem. Reads no
/// tensor: the padding sizes and the block table are device data, read by the run
/// (fia::resolve_batches in fia_bind.hpp). kNullPtr / kInvalid with a message through core::fail.
Status validate(const FiaArgs& args, core::FiaProblem* problem);

}  // namespace kvflash::fia
