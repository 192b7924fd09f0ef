// FIA kernel body: the rows no task finishes (the split-KV merge, the padding rows).
// Included only by fia_kernel-inl.h, inside the ISA namespace and after the parts before it
// (no include guard, like it: compiled once per ISA, with that unit's flags).
//
// fia_merge adds up the split-KV slots of one task's rows in chunk order (so the bits do not
// depend on which thread ran which chunk) and writes the rows; fia_pad_rows writes the padding
// rows (D5), which no task covers. Both run after the tasks: the kernel table's merge entry and
// the driver call them.

/// Merges the `chunks` split-KV slots of task (b, n2, qt) (slot rows of M rows each, in chunk
/// order) and writes its rows: the NaN-keeping max over the parts, each part weighted by
/// softmax_merge_weight (applied even when 0), sums and accumulators added in chunk order.
inline void fia_merge(const FiaParams& p, const FiaPointers& d, float* scratch, int64_t b, int64_t n2,
                      int64_t qt, int64_t chunks, const float* slots) {
  const FiaBatch& bt = p.batches[b];
  const int64_t G = p.num_heads / p.num_kv_heads, Tq = fia_query_tile(G);
  const int64_t i0 = qt * Tq, i1 = std::min(bt.q_rows, i0 + Tq), M = (i1 - i0) * G;
  const int64_t Dv = p.value_dim, W = fia_slot_floats(p);
  float* a = scratch;
  for (int64_t m = 0; m < M; ++m) {
    float mx = kNegInf;
    int64_t cnt = 0;
    for (int64_t c = 0; c < chunks; ++c) {
      const float* r = slots + (c * M + m) * W;
      mx = softmax_max_nan(mx, r[0]);
      cnt += static_cast<int64_t>(r[2]);
    }
    SoftmaxState st;
    st.max = mx;
    for (int64_t x = 0; x < Dv; ++x) a[x] = 0.0f;
    for (int64_t c = 0; c < chunks; ++c) {
      const float* r = slots + (c * M + m) * W;
      const float w = softmax_merge_weight(r[0], mx);
      st.sum += w * r[1];
      const Vec wv = vset1(w);
      for (int64_t x = 0; x < Dv; x += kLanes) vstore(a + x, vfma(wv, vload(r + 4 + x), vload(a + x)));
    }
    fia_finish_row(p, d, bt, i0 + m / G, n2 * G + m % G, a, st, cnt);
  }
}


/// The padding rows (D5): every head of each is written as an empty row (0, int8: the
/// post-quant of 0; LSE +inf). `scratch` holds value_dim floats.
inline void fia_pad_rows(const FiaParams& p, const FiaPointers& d, float* scratch) {
  for (int64_t r = 0; r < p.num_pad_rows; ++r) {
    FiaBatch bt;
    bt.out_offset = p.pad_rows[r].out_offset, bt.lse_offset = p.pad_rows[r].lse_offset;
    for (int64_t h = 0; h < p.num_heads; ++h) fia_finish_row(p, d, bt, 0, h, scratch, SoftmaxState{}, 0);
  }
}
