// FIA kernel body: the output, LSE and max / sum rows.
// Included only by fia_kernel-inl.h, inside the ISA namespace and after the parts before it
// (no include guard, like it: compiled once per ISA, with that unit's flags).
//
// fia_finish_row: a finished row's normalisation (D5's empty row, D8's sink), its one rounding to
// the output dtype (int8: the post-quant), its LSE and softmax max / sum. The one place a row
// reaches the outputs, shared by the task body, the merge and the padding rows (fia_merge-inl.h).

/// Writes row (i, h) of batch bt from its finished state: D5 for an empty row, D8's sink, the
/// normalisation, one rounding to the output dtype (int8: post-quant), the LSE.
inline void fia_finish_row(const FiaParams& p, const FiaPointers& d, const FiaBatch& bt, int64_t i,
                           int64_t h, float* a, const SoftmaxState& st, int64_t cnt) {
  const int64_t Dv = p.value_dim;
  const int64_t ox = bt.out_offset + i * p.o_row + h * p.o_head;
  float lse = kPosInf;
  float row_max = 0.0f, row_sum = 0.0f;  // an empty row's max / sum (FiaArgs::softmax_max)
  if (cnt == 0) {
    for (int64_t x = 0; x < Dv; ++x) a[x] = 0.0f;  // D5: nothing visible
  } else {
    float sum = softmax_final_sum(st);
    if (p.has_sink) sum += exp_scalar(fia_load(d.sink, p.sink_dtype, h) - st.max);  // D8
    const Vec inv = vset1(1.0f / sum);
    for (int64_t x = 0; x < Dv; x += kLanes) vstore(a + x, vmul(vload(a + x), inv));
    lse = softmax_lse(st.max, sum);
    row_max = st.max, row_sum = sum;
  }
  if (p.has_max_sum) {
    const int64_t e = kFiaMaxSumWidth * (bt.lse_offset + i * p.lse_row + h * p.lse_head);
    for (int64_t w = 0; w < kFiaMaxSumWidth; ++w) {
      d.softmax_max[e + w] = row_max;
      d.softmax_sum[e + w] = row_sum;
    }
  }
  if (p.out_dtype == DType::kInt8) {
    int8_t* o = static_cast<int8_t*>(d.out) + ox;
    for (int64_t x = 0; x < Dv; ++x) {
      const int64_t e = p.q2_channel ? h * Dv + x : 0;
      const float s = fia_load(d.quant_scale2, p.q2_dtype, e);
      const float off = p.has_q2_offset ? fia_load(d.quant_offset2, p.q2_dtype, e) : 0.0f;
      o[x] = f32_to_int8_sat(a[x] * s + off);
    }
  } else if (p.out_dtype == DType::kFloat32) {
    float* o = static_cast<float*>(d.out) + ox;
    for (int64_t x = 0; x < Dv; x += kLanes) vstore(o + x, vload(a + x));
  } else {
    uint16_t* o = static_cast<uint16_t*>(d.out) + ox;
    for (int64_t x = 0; x < Dv; x += kLanes) {
      if (p.out_dtype == DType::kFloat16) {
        vstore_fp16(o + x, vload(a + x));
      } else {
        vstore_bf16(o + x, vload(a + x));
      }
    }
  }
  if (p.has_lse) d.lse[bt.lse_offset + i * p.lse_row + h * p.lse_head] = lse;
}
