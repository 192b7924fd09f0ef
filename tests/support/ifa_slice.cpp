#include "support/ifa_slice.hpp"

#include <vector>

namespace kvflash::testing {

TensorView slice_batch(TensorView v, int64_t b) {
  v.offset += b * v.strides[0];
  v.shape[0] = 1;
  return v;
}

IfaArgs batch_inputs(const IfaArgs& a, int64_t b) {
  const int64_t B = a.query.shape[0];
  IfaArgs x = a;
  x.query = slice_batch(a.query, b);
  if (a.block_table) {
    x.block_table = slice_batch(*a.block_table, b);
  } else if (a.key.size() > 1) {
    x.key = {a.key[b]};
    x.value = {a.value[b]};
    // A one-tensor list is batch-contiguous, where left padding would apply; in list mode it was
    // ignored (docs/semantics.md §2.7), so drop it to keep the meaning.
    x.kv_padding_size.reset();
  } else {
    x.key = {slice_batch(a.key[0], b)};
    x.value = {slice_batch(a.value[0], b)};
  }
  if (a.actual_seq_lengths && !a.actual_seq_lengths->empty()) {
    const auto& l = *a.actual_seq_lengths;
    x.actual_seq_lengths = std::vector<int64_t>{l.size() == 1 ? l[0] : l[b]};
  }
  if (a.atten_mask && a.atten_mask->shape[0] == B) x.atten_mask = slice_batch(*a.atten_mask, b);
  if (a.pse_shift && a.pse_shift->shape[0] == B) x.pse_shift = slice_batch(*a.pse_shift, b);
  x.attention_out = slice_batch(a.attention_out, 0);
  if (a.softmax_lse) x.softmax_lse = slice_batch(*a.softmax_lse, 0);
  return x;
}

}  // namespace kvflash::testing
