// LightningIndexer's arguments, declared once (core/fields.hpp): every member of
// LightningIndexerArgs but num_threads, in the order of aclnnLightningIndexer's parameters. The
// plan's strip/match/fingerprint, the aclnn entry point and the PyTorch kernel iterate this table.
#pragma once

#include <tuple>

#include "core/fields.hpp"
#include "kvflash/li.hpp"

namespace kvflash::li {

using Args = LightningIndexerArgs;

inline constexpr auto kFields = std::tuple{
    core::field("query", "query", &Args::query),
    core::field("key", "key", &Args::key),
    core::field("weights", "weights", &Args::weights),
    core::field("actual_seq_lengths_query", "actualSeqLengthsQueryOptional",
                &Args::actual_seq_lengths_query),
    core::field("actual_seq_lengths_key", "actualSeqLengthsKeyOptional",
                &Args::actual_seq_lengths_key),
    core::field("block_table", "blockTableOptional", &Args::block_table),
    core::field("layout_query", "layoutQueryOptional", &Args::layout_query),
    core::field("layout_key", "layoutKeyOptional", &Args::layout_key),
    core::field("sparse_count", "sparseCount", &Args::sparse_count),
    core::field("sparse_mode", "sparseMode", &Args::sparse_mode),
    core::field("pre_tokens", "preTokens", &Args::pre_tokens),
    core::field("next_tokens", "nextTokens", &Args::next_tokens),
    core::field("return_value", "returnValues", &Args::return_value),
    core::field("sparse_indices", "sparseIndicesOut", &Args::sparse_indices),
    // Dropped from the plan's metadata without return_value (li::strip_data).
    core::field("sparse_values", "sparseValuesOut", &Args::sparse_values, core::kMatchIfPlanHas),
};

}  // namespace kvflash::li
