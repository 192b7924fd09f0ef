// LightningIndexer argument validation: the only place that rejects its input
// (docs/lightning_indexer.md, "Arguments and statuses").
#pragma once

#include "kvflash/li.hpp"
#include "kvflash/status.hpp"
#include "ops/li/li_problem.hpp"

namespace kvflash::li {

inline constexpr const char* kOpName = "lightning_indexer";

/// Checks every argument rule on the metadata and fills *problem. Reads no tensor: the lengths
/// and the block table are device data, read by the run. Returns kNullPtr / kInvalid with a
/// message naming the argument through core::fail.
Status validate(const LightningIndexerArgs& args, core::LiProblem* problem);

}  // namespace kvflash::li
