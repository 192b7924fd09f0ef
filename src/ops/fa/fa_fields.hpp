// FlashAttentionScore's arguments, declared once (core/fields.hpp): every member of
// FlashAttentionScoreArgs but num_threads, in the order of
// aclnnFlashAttentionVarLenScoreGetWorkspaceSize's parameters. The plan's match and fingerprint,
// the aclnn entry points and the PyTorch kernel iterate this table.
#pragma once

#include <tuple>

#include "core/fields.hpp"
#include "kvflash/flash_attention_score.hpp"

namespace kvflash::fa {

using Args = FlashAttentionScoreArgs;

inline constexpr auto kFields = std::tuple{
    core::field("query", "query", &Args::query),
    core::field("key", "key", &Args::key),
    core::field("value", "value", &Args::value),
    core::field("pse", "realShiftOptional", &Args::real_shift),
    core::field("dropout_mask", "dropMaskOptional", &Args::drop_mask),
    core::field("padding_mask", "paddingMaskOptional", &Args::padding_mask),
    core::field("atten_mask", "attenMaskOptional", &Args::atten_mask),
    core::field("prefix", "prefixOptional", &Args::prefix),
    core::field("actual_seq_qlen", "actualSeqQLenOptional", &Args::actual_seq_qlen),
    core::field("actual_seq_kvlen", "actualSeqKvLenOptional", &Args::actual_seq_kvlen),
    core::field("scale", "scaleValue", &Args::scale),
    core::field("keep_prob", "keepProb", &Args::keep_prob),
    core::field("pre_tockens", "preTokens", &Args::pre_tokens),
    core::field("next_tockens", "nextTokens", &Args::next_tokens),
    core::field("head_num", "headNum", &Args::head_num),
    core::field("input_layout", "inputLayout", &Args::input_layout),
    core::field("inner_precise", "innerPrecise", &Args::inner_precise),
    core::field("sparse_mode", "sparseMode", &Args::sparse_mode),
    core::field("softmax_max", "softmaxMaxOut", &Args::softmax_max),
    core::field("softmax_sum", "softmaxSumOut", &Args::softmax_sum),
    core::field("softmax_out", "softmaxOutOut", &Args::softmax_out),
    core::field("attention_out", "attentionOutOut", &Args::attention_out),
};

}  // namespace kvflash::fa
