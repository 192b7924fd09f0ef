#include "support/fia_args.hpp"

namespace kvflash::testing {

FiaArgs fia_args(const reference::FiaCall& c) {
  FiaArgs a;
  a.query = c.query;
  a.key = c.key;
  a.value = c.value;
  a.pse_shift = c.pse_shift;
  a.atten_mask = c.atten_mask;
  a.actual_seq_lengths = c.actual_seq_lengths;
  a.actual_seq_lengths_kv = c.actual_seq_lengths_kv;
  a.quant_scale2 = c.quant_scale2;
  a.quant_offset2 = c.quant_offset2;
  a.antiquant_scale = c.antiquant_scale;
  a.antiquant_offset = c.antiquant_offset;
  a.block_table = c.block_table;
  a.query_padding_size = c.query_padding_size;
  a.kv_padding_size = c.kv_padding_size;
  a.key_antiquant_scale = c.key_antiquant_scale;
  a.key_antiquant_offset = c.key_antiquant_offset;
  a.value_antiquant_scale = c.value_antiquant_scale;
  a.value_antiquant_offset = c.value_antiquant_offset;
  a.key_shared_prefix = c.key_shared_prefix;
  a.value_shared_prefix = c.value_shared_prefix;
  a.actual_shared_prefix_len = c.actual_shared_prefix_len;
  a.query_rope = c.query_rope;
  a.key_rope = c.key_rope;
  a.learnable_sink = c.learnable_sink;
  a.num_heads = c.num_heads;
  a.scale = c.scale_value;
  a.pre_tokens = c.pre_tokens;
  a.next_tokens = c.next_tokens;
  a.input_layout = c.input_layout;
  a.num_key_value_heads = c.num_key_value_heads;
  a.sparse_mode = c.sparse_mode;
  a.inner_precise = c.inner_precise;
  a.block_size = c.block_size;
  a.antiquant_mode = c.antiquant_mode;
  a.key_antiquant_mode = c.key_antiquant_mode;
  a.value_antiquant_mode = c.value_antiquant_mode;
  a.softmax_lse_flag = c.softmax_lse_flag;
  a.attention_out = c.attention_out;
  a.softmax_lse = c.softmax_lse;
  a.prompt = c.prompt;
  return a;
}

}  // namespace kvflash::testing
