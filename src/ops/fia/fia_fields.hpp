// FusedInferAttentionScore's arguments, declared once (core/fields.hpp): every member of FiaArgs
// but num_threads, in the order of aclnnFusedInferAttentionScoreV5's parameters (the newest entry
// point: V1-V4 forward to it), then kvflash's extensions. The plan's strip/match/fingerprint and
// the aclnn entry points iterate this table.
#pragma once

#include <tuple>

#include "core/fields.hpp"
#include "kvflash/fia.hpp"

namespace kvflash::fia {

inline constexpr auto kFields = std::tuple{
    core::field("query", "query", &FiaArgs::query),
    core::field("key", "key", &FiaArgs::key),
    core::field("value", "value", &FiaArgs::value),
    core::field("pse_shift", "pseShift", &FiaArgs::pse_shift),
    core::field("atten_mask", "attenMask", &FiaArgs::atten_mask),
    core::field("actual_seq_lengths", "actualSeqLengths", &FiaArgs::actual_seq_lengths),
    core::field("actual_seq_lengths_kv", "actualSeqLengthsKv", &FiaArgs::actual_seq_lengths_kv),
    core::field("dequant_scale1", "deqScale1", &FiaArgs::dequant_scale1),
    core::field("quant_scale1", "quantScale1", &FiaArgs::quant_scale1),
    core::field("dequant_scale2", "deqScale2", &FiaArgs::dequant_scale2),
    core::field("quant_scale2", "quantScale2", &FiaArgs::quant_scale2),
    core::field("quant_offset2", "quantOffset2", &FiaArgs::quant_offset2),
    core::field("antiquant_scale", "antiquantScale", &FiaArgs::antiquant_scale),
    core::field("antiquant_offset", "antiquantOffset", &FiaArgs::antiquant_offset),
    core::field("block_table", "blockTable", &FiaArgs::block_table),
    core::field("query_padding_size", "queryPaddingSize", &FiaArgs::query_padding_size),
    core::field("kv_padding_size", "kvPaddingSize", &FiaArgs::kv_padding_size),
    core::field("key_antiquant_scale", "keyAntiquantScale", &FiaArgs::key_antiquant_scale),
    core::field("key_antiquant_offset", "keyAntiquantOffset", &FiaArgs::key_antiquant_offset),
    core::field("value_antiquant_scale", "valueAntiquantScale", &FiaArgs::value_antiquant_scale),
    core::field("value_antiquant_offset", "valueAntiquantOffset", &FiaArgs::value_antiquant_offset),
    core::field("key_shared_prefix", "keySharedPrefix", &FiaArgs::key_shared_prefix),
    core::field("value_shared_prefix", "valueSharedPrefix", &FiaArgs::value_shared_prefix),
    core::field("actual_shared_prefix_len", "actualSharedPrefixLen",
                &FiaArgs::actual_shared_prefix_len),
    core::field("query_rope", "queryRope", &FiaArgs::query_rope),
    core::field("key_rope", "keyRope", &FiaArgs::key_rope),
    core::field("key_rope_antiquant_scale", "keyRopeAntiquantScale",
                &FiaArgs::key_rope_antiquant_scale),
    core::field("dequant_scale_query", "dequantScaleQuery", &FiaArgs::dequant_scale_query),
    core::field("learnable_sink", "learnableSink", &FiaArgs::learnable_sink),
    core::field("q_start_idx", "qStartIdx", &FiaArgs::q_start_idx),
    core::field("kv_start_idx", "kvStartIdx", &FiaArgs::kv_start_idx),
    core::field("num_heads", "numHeads", &FiaArgs::num_heads),
    core::field("scale", "scaleValue", &FiaArgs::scale),
    core::field("pre_tokens", "preTokens", &FiaArgs::pre_tokens),
    core::field("next_tokens", "nextTokens", &FiaArgs::next_tokens),
    core::field("input_layout", "inputLayout", &FiaArgs::input_layout),
    core::field("num_key_value_heads", "numKeyValueHeads", &FiaArgs::num_key_value_heads),
    core::field("sparse_mode", "sparseMode", &FiaArgs::sparse_mode),
    core::field("inner_precise", "innerPrecise", &FiaArgs::inner_precise),
    core::field("block_size", "blockSize", &FiaArgs::block_size),
    core::field("antiquant_mode", "antiquantMode", &FiaArgs::antiquant_mode),
    core::field("softmax_lse_flag", "softmaxLseFlag", &FiaArgs::softmax_lse_flag),
    core::field("key_antiquant_mode", "keyAntiquantMode", &FiaArgs::key_antiquant_mode),
    core::field("value_antiquant_mode", "valueAntiquantMode", &FiaArgs::value_antiquant_mode),
    core::field("query_quant_mode", "queryQuantMode", &FiaArgs::query_quant_mode),
    core::field("pse_type", "pseType", &FiaArgs::pse_type),
    core::field("attention_out", "attentionOut", &FiaArgs::attention_out),
    // Dropped from the plan's metadata without softmax_lse_flag (fia::strip_data).
    core::field("softmax_lse", "softmaxLse", &FiaArgs::softmax_lse, core::kMatchIfPlanHas),
    // kvflash extensions, not aclnn arguments.
    core::field("prompt", nullptr, &FiaArgs::prompt),
    core::field("fp32_inputs", nullptr, &FiaArgs::fp32_inputs),
    core::field("softmax_max", nullptr, &FiaArgs::softmax_max),
    core::field("softmax_sum", nullptr, &FiaArgs::softmax_sum),
};

/// aclnnPromptFlashAttentionV3's parameters (their aclnn names, in its order) as FiaArgs members:
/// the phase-1 table of the PFA entry points (src/aclnn/aclnn_prompt_flash_attention.cpp). key
/// and value are single tensors there, one-element lists here.
inline constexpr auto kPfaAclFields = std::tuple{
    core::field("query", "query", &FiaArgs::query),
    core::field("key", "key", &FiaArgs::key),
    core::field("value", "value", &FiaArgs::value),
    core::field("pse_shift", "pseShift", &FiaArgs::pse_shift),
    core::field("atten_mask", "attenMask", &FiaArgs::atten_mask),
    core::field("actual_seq_lengths", "actualSeqLengths", &FiaArgs::actual_seq_lengths),
    core::field("actual_seq_lengths_kv", "actualSeqLengthsKv", &FiaArgs::actual_seq_lengths_kv),
    core::field("dequant_scale1", "deqScale1", &FiaArgs::dequant_scale1),
    core::field("quant_scale1", "quantScale1", &FiaArgs::quant_scale1),
    core::field("dequant_scale2", "deqScale2", &FiaArgs::dequant_scale2),
    core::field("quant_scale2", "quantScale2", &FiaArgs::quant_scale2),
    core::field("quant_offset2", "quantOffset2", &FiaArgs::quant_offset2),
    core::field("num_heads", "numHeads", &FiaArgs::num_heads),
    core::field("scale", "scaleValue", &FiaArgs::scale),
    core::field("pre_tokens", "preTokens", &FiaArgs::pre_tokens),
    core::field("next_tokens", "nextTokens", &FiaArgs::next_tokens),
    core::field("input_layout", "inputLayout", &FiaArgs::input_layout),
    core::field("num_key_value_heads", "numKeyValueHeads", &FiaArgs::num_key_value_heads),
    core::field("sparse_mode", "sparseMode", &FiaArgs::sparse_mode),
    core::field("inner_precise", "innerPrecise", &FiaArgs::inner_precise),
    core::field("attention_out", "attentionOut", &FiaArgs::attention_out),
};

}  // namespace kvflash::fia
