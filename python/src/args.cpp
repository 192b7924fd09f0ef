#include "args.hpp"

#include "views.hpp"

namespace kvflash::torch_ext {

at::ScalarType ifa_out_dtype(const IfaInputs& in) {
  const bool quant = in.quant_scale2.has_value() && in.quant_scale2->defined();
  return quant ? at::kChar : in.query.scalar_type();
}

IfaInputs gather_ifa_inputs(const at::Tensor& query, std::vector<at::Tensor> key,
                            std::vector<at::Tensor> value, const OptTensor& atten_mask,
                            const OptTensor& pse_shift, at::OptionalIntArrayRef actual_seq_lengths,
                            const OptTensor& antiquant_scale, const OptTensor& antiquant_offset,
                            const OptTensor& block_table, const OptTensor& dequant_scale1,
                            const OptTensor& quant_scale1, const OptTensor& dequant_scale2,
                            const OptTensor& quant_scale2, const OptTensor& quant_offset2,
                            const OptTensor& kv_padding_size, int64_t num_heads,
                            double scale_value, std::string_view input_layout,
                            int64_t num_key_value_heads, int64_t block_size,
                            int64_t inner_precise) {
  IfaInputs in;
  in.query = query;
  in.key = std::move(key);
  in.value = std::move(value);
  in.atten_mask = atten_mask;
  in.pse_shift = pse_shift;
  if (actual_seq_lengths.has_value()) {
    in.actual_seq_lengths.emplace(actual_seq_lengths->begin(), actual_seq_lengths->end());
  }
  in.antiquant_scale = antiquant_scale;
  in.antiquant_offset = antiquant_offset;
  in.block_table = block_table;
  in.dequant_scale1 = dequant_scale1;
  in.quant_scale1 = quant_scale1;
  in.dequant_scale2 = dequant_scale2;
  in.quant_scale2 = quant_scale2;
  in.quant_offset2 = quant_offset2;
  in.kv_padding_size = kv_padding_size;
  in.num_heads = num_heads;
  in.scale_value = scale_value;
  in.input_layout = std::string(input_layout);
  in.num_key_value_heads = num_key_value_heads;
  in.block_size = block_size;
  in.inner_precise = inner_precise;
  return in;
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

SfaInputs gather_sfa_inputs(const at::Tensor& query, const at::Tensor& key, const OptTensor& value,
                            const at::Tensor& sparse_indices, double scale_value,
                            const OptTensor& block_table,
                            const OptTensor& actual_seq_lengths_query,
                            const OptTensor& actual_seq_lengths_kv, const OptTensor& query_rope,
                            const OptTensor& key_rope, int64_t sparse_block_size,
                            std::string_view layout_query, std::string_view layout_kv,
                            int64_t sparse_mode, int64_t pre_tokens, int64_t next_tokens,
                            int64_t attention_mode, bool return_softmax_lse,
                            const OptTensor& sinks) {
  SfaInputs in;
  in.query = query;
  in.key = key;
  in.value = value;
  in.sparse_indices = sparse_indices;
  in.block_table = block_table;
  in.actual_seq_lengths_query = actual_seq_lengths_query;
  in.actual_seq_lengths_kv = actual_seq_lengths_kv;
  in.query_rope = query_rope;
  in.key_rope = key_rope;
  in.sinks = sinks;
  in.scale_value = scale_value;
  in.sparse_block_size = sparse_block_size;
  in.layout_query = std::string(layout_query);
  in.layout_kv = std::string(layout_kv);
  in.sparse_mode = sparse_mode;
  in.pre_tokens = pre_tokens;
  in.next_tokens = next_tokens;
  in.attention_mode = attention_mode;
  in.return_softmax_lse = return_softmax_lse;
  return in;
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
