// IncreFlashAttention's arguments, declared once (core/fields.hpp): every member of IfaArgs but
// num_threads, in the order of aclnnIncreFlashAttentionV4's parameters, then kvflash's
// extensions. The plan's strip/match/fingerprint and the aclnn entry points iterate this table.
#pragma once

#include <tuple>

#include "core/fields.hpp"
#include "kvflash/ifa.hpp"

namespace kvflash::ifa {

inline constexpr auto kFields = std::tuple{
    core::field("query", "query", &IfaArgs::query),
    core::field("key", "key", &IfaArgs::key),
    core::field("value", "value", &IfaArgs::value),
    core::field("pse_shift", "pseShift", &IfaArgs::pse_shift),
    core::field("atten_mask", "attenMask", &IfaArgs::atten_mask),
    core::field("actual_seq_lengths", "actualSeqLengths", &IfaArgs::actual_seq_lengths),
    core::field("dequant_scale1", "dequantScale1", &IfaArgs::dequant_scale1),
    core::field("quant_scale1", "quantScale1", &IfaArgs::quant_scale1),
    core::field("dequant_scale2", "dequantScale2", &IfaArgs::dequant_scale2),
    core::field("quant_scale2", "quantScale2", &IfaArgs::quant_scale2),
    core::field("quant_offset2", "quantOffset2", &IfaArgs::quant_offset2),
    core::field("antiquant_scale", "antiquantScale", &IfaArgs::antiquant_scale),
    core::field("antiquant_offset", "antiquantOffset", &IfaArgs::antiquant_offset),
    core::field("block_table", "blocktable", &IfaArgs::block_table),
    // Dropped from the plan's metadata when inactive (ifa::strip_data).
    core::field("kv_padding_size", "kvPaddingSize", &IfaArgs::kv_padding_size,
                core::kMatchIfPlanHas),
    core::field("num_heads", "numHeads", &IfaArgs::num_heads),
    core::field("scale_value", "scaleValue", &IfaArgs::scale_value),
    core::field("input_layout", "inputLayout", &IfaArgs::input_layout),
    core::field("num_key_value_heads", "numKeyValueHeads", &IfaArgs::num_key_value_heads),
    core::field("block_size", "blockSize", &IfaArgs::block_size),
    core::field("inner_precise", "innerPrecise", &IfaArgs::inner_precise),
    core::field("attention_out", "attentionOut", &IfaArgs::attention_out),
    // kvflash extensions, not aclnn arguments.
    core::field("softmax_lse", nullptr, &IfaArgs::softmax_lse),
    core::field("zero_fully_masked_rows", nullptr, &IfaArgs::zero_fully_masked_rows),
    core::field("blocks_may_repeat", nullptr, &IfaArgs::blocks_may_repeat),
};

}  // namespace kvflash::ifa
