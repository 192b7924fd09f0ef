// IFA kernel body: the merge of a sequence's chunks.
// Included only by ifa_kernel-inl.h, inside the ISA namespace and after the parts before it
// (no include guard, like it: compiled once per ISA, with that unit's flags).
//
// merge_impl turns the chunk slots of one (batch, kv head) into its G output rows: a fixed-order
// log-sum-exp merge (so the bits do not depend on which thread ran which chunk), empty and fully
// masked rows, the sink, and the fault rows of a batch whose device data was bad. The kernel
// table's merge runs it after a sequence's chunk tasks; a one-chunk sequence's only task runs it
// itself (ifa_chunk_on). Not the merge operator (src/cpu/merge/), whose inputs are tensors.

namespace ifa_detail {

inline void merge_impl(const IfaProblem& p, const IfaData& dt, const IfaLayout& l, std::byte* base,
                       int64_t task) {
  const int64_t b = task / p.num_kv_heads, n2 = task % p.num_kv_heads;
  const int64_t group = p.group, dp = l.dp, hf = l.head_floats;
  const uint8_t state = dt.batch_state[b];
  if (state >= core::kIfaBatchFaultBlockId) {
    for (int64_t g = 0; g < group; ++g) write_fault_row(p, dt, b, n2 * group + g);
    return;
  }
  // An empty batch (left padding start < 0) ran no chunk task: it merges like kv_len 0.
  const int64_t num_chunks = state == core::kIfaBatchRun ? ifa_num_chunks(p.kv_len[b]) : 0;
  const auto* first = reinterpret_cast<const int64_t*>(base + l.chunk_first);
  alignas(64) float zeros[kIfaMaxHeadDim];  // filled only where a zero row is written (rare)
  for (int64_t g = 0; g < group; ++g) {
    const int64_t h = n2 * group + g;
    // Overall max (NaN if any part's is) and whether any attended position was unmasked.
    float m_total = kNegInf;
    bool any_unmasked = false;
    for (int64_t c = 0; c < num_chunks; ++c) {
      const float* hdr = ifa_slot(l, base, first, b, n2, c, num_chunks) + g * hf + 2 * dp;
      m_total = softmax_max_nan(m_total, hdr[IfaHeadSlot::kMax]);
      any_unmasked = any_unmasked || hdr[IfaHeadSlot::kAnyUnmasked] != 0.0f;
    }
    // Empty rows, and fully masked rows when asked: zeros. A row whose scores are all -inf is
    // not empty: it has no softmax and comes out NaN (softmax_final_sum), like NaN rows.
    if (num_chunks == 0 || (p.zero_fully_masked_rows && !any_unmasked)) {
      for (int64_t i = 0; i < p.head_dim; ++i) zeros[i] = 0.0f;
      write_row(p, dt, l, base, b, h, zeros);
      write_lse(p, dt, b, h, p.empty_lse);
      continue;
    }
    // Fixed-order log-sum-exp merge into chunk 0's accumulator. A part of weight 0 is still
    // added: 0 * NaN (or inf) in its accumulator must reach the output, as in the reference.
    float* acc = ifa_slot(l, base, first, b, n2, 0, num_chunks) + g * hf;
    SoftmaxState total{m_total, 0.0f};
    for (int64_t c = 0; c < num_chunks; ++c) {
      const float* part = ifa_slot(l, base, first, b, n2, c, num_chunks) + g * hf;
      const float w = softmax_merge_weight(part[2 * dp + IfaHeadSlot::kMax], m_total);
      total.sum += w * part[2 * dp + IfaHeadSlot::kSum];
      if (c == 0) {
        softmax_scale_acc(acc, dp, w);
      } else {
        const Vec wv = vset1(w);
        for (int64_t i = 0; i < dp; i += kLanes) {
          vstore(acc + i, vfma(wv, vload(part + i), vload(acc + i)));
        }
      }
    }
    total.sum = softmax_final_sum(total);
    // The sink joins the sum, not the max (FIA's D8: docs/fia-semantics.md).
    if (p.has_sink) total.sum += exp_scalar(param_f32(p.sink_dtype, dt.sink, h) - m_total);
    const Vec inv_div = vset1(total.sum);
    for (int64_t i = 0; i < dp; i += kLanes) vstore(acc + i, vdiv(vload(acc + i), inv_div));
    write_row(p, dt, l, base, b, h, acc);
    write_lse(p, dt, b, h, softmax_lse(total));
  }
}

}  // namespace ifa_detail
