#include "args.hpp"

#include "views.hpp"

namespace kvflash::torch_ext {

at::ScalarType ifa_out_dtype(const IfaInputs& in) {
  const bool quant = in.quant_scale2.has_value() && in.quant_scale2->defined();
  return quant ? at::kChar : in.query.scalar_type();
}

IfaArgs ifa_args(const char* op, const IfaInputs& in, const at::Tensor& out,
                 const std::optional<at::Tensor>& lse) {
  IfaArgs a;
  a.query = view_of(in.query, op, "query");
  a.key.reserve(in.key.size());
  a.value.reserve(in.value.size());
  // A single tensor is "key"; list entries are named by index.
  for (size_t i = 0; i < in.key.size(); ++i) {
    const std::string name = in.key.size() == 1 ? "key" : "key[" + std::to_string(i) + "]";
    a.key.push_back(view_of(in.key[i], op, name.c_str()));
  }
  for (size_t i = 0; i < in.value.size(); ++i) {
    const std::string name = in.value.size() == 1 ? "value" : "value[" + std::to_string(i) + "]";
    a.value.push_back(view_of(in.value[i], op, name.c_str()));
  }
  a.pse_shift = view_of(in.pse_shift, op, "pse_shift");
  a.atten_mask = view_of(in.atten_mask, op, "atten_mask");
  a.actual_seq_lengths = in.actual_seq_lengths;
  a.dequant_scale1 = view_of(in.dequant_scale1, op, "dequant_scale1");
  a.quant_scale1 = view_of(in.quant_scale1, op, "quant_scale1");
  a.dequant_scale2 = view_of(in.dequant_scale2, op, "dequant_scale2");
  a.quant_scale2 = view_of(in.quant_scale2, op, "quant_scale2");
  a.quant_offset2 = view_of(in.quant_offset2, op, "quant_offset2");
  a.antiquant_scale = view_of(in.antiquant_scale, op, "antiquant_scale");
  a.antiquant_offset = view_of(in.antiquant_offset, op, "antiquant_offset");
  a.block_table = view_of(in.block_table, op, "block_table");
  a.kv_padding_size = view_of(in.kv_padding_size, op, "kv_padding_size");
  a.num_heads = in.num_heads;
  a.scale_value = in.scale_value;
  a.input_layout = in.input_layout;
  a.num_key_value_heads = in.num_key_value_heads;
  a.block_size = in.block_size;
  a.inner_precise = in.inner_precise;
  a.attention_out = view_of(out, op, "attention_out");
  a.softmax_lse = view_of(lse, op, "softmax_lse");
  a.zero_fully_masked_rows = in.zero_fully_masked_rows;
  return a;
}

SfaArgs sfa_args(const char* op, const SfaInputs& in, const at::Tensor& out,
                 const at::Tensor& softmax_max, const at::Tensor& softmax_sum) {
  SfaArgs a;
  a.query = view_of(in.query, op, "query");
  a.key = view_of(in.key, op, "key");
  a.value = view_of(in.value, op, "value");
  a.sparse_indices = view_of(in.sparse_indices, op, "sparse_indices");
  a.block_table = view_of(in.block_table, op, "block_table");
  a.actual_seq_lengths_query = view_of(in.actual_seq_lengths_query, op, "actual_seq_lengths_query");
  a.actual_seq_lengths_kv = view_of(in.actual_seq_lengths_kv, op, "actual_seq_lengths_kv");
  // Absent ropes are null views: the library names them.
  if (auto v = view_of(in.query_rope, op, "query_rope")) a.query_rope = *v;
  if (auto v = view_of(in.key_rope, op, "key_rope")) a.key_rope = *v;
  a.sinks = view_of(in.sinks, op, "sinks");
  a.scale_value = in.scale_value;
  a.sparse_block_size = in.sparse_block_size;
  a.layout_query = in.layout_query;
  a.layout_kv = in.layout_kv;
  a.sparse_mode = in.sparse_mode;
  a.pre_tokens = in.pre_tokens;
  a.next_tokens = in.next_tokens;
  a.attention_mode = in.attention_mode;
  a.return_softmax_lse = in.return_softmax_lse;
  a.attention_out = view_of(out, op, "attention_out");
  if (in.return_softmax_lse) {
    a.softmax_max = view_of(softmax_max, op, "softmax_max");
    a.softmax_sum = view_of(softmax_sum, op, "softmax_sum");
  }
  return a;
}

}  // namespace kvflash::torch_ext
