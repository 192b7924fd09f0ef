// merge_attention_states's arguments, declared once (core/fields.hpp): every member of MergeArgs
// but num_threads. No aclnn entry point: the aclnn names are null. The plan's
// strip/match/fingerprint iterate this table.
#pragma once

#include <tuple>

#include "core/fields.hpp"
#include "kvflash/merge.hpp"

namespace kvflash::merge {

inline constexpr auto kFields = std::tuple{
    core::field("partial_out", nullptr, &MergeArgs::partial_out),
    core::field("partial_lse", nullptr, &MergeArgs::partial_lse),
    core::field("partial_max", nullptr, &MergeArgs::partial_max),
    core::field("partial_sum", nullptr, &MergeArgs::partial_sum),
    core::field("sink", nullptr, &MergeArgs::sink),
    core::field("partial_out_list", nullptr, &MergeArgs::partial_out_list),
    core::field("partial_lse_list", nullptr, &MergeArgs::partial_lse_list),
    core::field("out", nullptr, &MergeArgs::out),
    core::field("out_lse", nullptr, &MergeArgs::out_lse),
    core::field("out_max", nullptr, &MergeArgs::out_max),
    core::field("out_sum", nullptr, &MergeArgs::out_sum),
};

}  // namespace kvflash::merge
