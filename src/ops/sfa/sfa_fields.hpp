// SparseFlashAttention's arguments, declared once (core/fields.hpp): every member of SfaArgs but
// num_threads, in the order of aclnnSparseFlashAttentionV2's parameters. The plan's
// strip/match/fingerprint and the aclnn entry points iterate this table.
#pragma once

#include <tuple>

#include "core/fields.hpp"
#include "kvflash/sfa.hpp"

namespace kvflash::sfa {

inline constexpr auto kFields = std::tuple{
    core::field("query", "query", &SfaArgs::query),
    core::field("key", "key", &SfaArgs::key),
    core::field("value", "value", &SfaArgs::value),
    core::field("sparse_indices", "sparseIndices", &SfaArgs::sparse_indices),
    core::field("block_table", "blockTable", &SfaArgs::block_table),
    core::field("actual_seq_lengths_query", "actualSeqLengthsQuery",
                &SfaArgs::actual_seq_lengths_query),
    core::field("actual_seq_lengths_kv", "actualSeqLengthsKv", &SfaArgs::actual_seq_lengths_kv),
    core::field("query_rope", "queryRope", &SfaArgs::query_rope, core::kAclMayBeNull),
    core::field("key_rope", "keyRope", &SfaArgs::key_rope, core::kAclMayBeNull),
    core::field("sinks", "sinks", &SfaArgs::sinks),
    core::field("scale_value", "scaleValue", &SfaArgs::scale_value),
    core::field("sparse_block_size", "sparseBlockSize", &SfaArgs::sparse_block_size),
    core::field("layout_query", "layoutQuery", &SfaArgs::layout_query),
    core::field("layout_kv", "layoutKv", &SfaArgs::layout_kv),
    core::field("sparse_mode", "sparseMode", &SfaArgs::sparse_mode),
    core::field("pre_tokens", "preTokens", &SfaArgs::pre_tokens),
    core::field("next_tokens", "nextTokens", &SfaArgs::next_tokens),
    core::field("attention_mode", "attentionMode", &SfaArgs::attention_mode),
    core::field("return_softmax_lse", "returnSoftmaxLse", &SfaArgs::return_softmax_lse),
    core::field("attention_out", "attentionOut", &SfaArgs::attention_out),
    // Dropped from the plan's metadata without return_softmax_lse (sfa::strip_data).
    core::field("softmax_max", "softmaxMaxOut", &SfaArgs::softmax_max, core::kMatchIfPlanHas),
    core::field("softmax_sum", "softmaxSumOut", &SfaArgs::softmax_sum, core::kMatchIfPlanHas),
};

}  // namespace kvflash::sfa
