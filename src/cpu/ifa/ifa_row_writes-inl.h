// IFA kernel body: writing a head's result.
// Included only by ifa_kernel-inl.h, inside the ISA namespace and after the parts before it
// (no include guard, like it: compiled once per ISA, with that unit's flags).
//
// The output row in its dtype and strides (fp16 / bf16 rounded to nearest even, int8 quantised
// with quant_scale2 / quant_offset2, fp32 as it is), its LSE, and the NaN row of a batch whose
// device data was bad. Only the merge (ifa_chunk_merge-inl.h) writes results, through these.

namespace ifa_detail {

// Writes o[0, d) (fp32, already normalised) as output row (b, h).
inline void write_row(const IfaProblem& p, const IfaData& dt, const IfaLayout& l,
                      const std::byte* base, int64_t b, int64_t h, const float* o) {
  const int64_t d = p.head_dim;
  const int64_t row = b * p.out_s0 + h * p.out_s1;
  if (p.out_dtype == DType::kInt8) {
    const auto* q2 = reinterpret_cast<const float*>(base + l.quant2);
    const float* qs = q2 + h * d;
    const float* qo = q2 + p.num_heads * d + h * d;
    auto* out = static_cast<int8_t*>(dt.out);
    for (int64_t i = 0; i < d; ++i) out[row + i * p.out_s2] = f32_to_int8_sat(o[i] * qs[i] + qo[i]);
    return;
  }
  if (p.out_dtype == DType::kFloat32) {  // kvflash extension: the fp32 result, unrounded
    auto* out = static_cast<float*>(dt.out);
    if (p.out_s2 == 1) {
      std::memcpy(out + row, o, static_cast<size_t>(d) * sizeof(float));
      return;
    }
    for (int64_t i = 0; i < d; ++i) out[row + i * p.out_s2] = o[i];
    return;
  }
  auto* out = static_cast<std::byte*>(dt.out);
  const bool fp16 = p.out_dtype == DType::kFloat16;
  int64_t i = 0;
  if (p.out_s2 == 1) {
    // Contiguous rows (the usual layouts): kLanes at a time, the same rounding as below. A
    // per-element loop here was about a third of a 16-token call (callgrind, see docs/perf-log.md).
    auto* o16 = reinterpret_cast<uint16_t*>(out) + row;
    for (; i + kLanes <= d; i += kLanes) {
      if (fp16) {
        vstore_fp16(o16 + i, vload(o + i));
      } else {
        vstore_bf16(o16 + i, vload(o + i));
      }
    }
  }
  for (; i < d; ++i) {
    const uint16_t bits = fp16 ? f32_to_fp16(o[i]) : f32_to_bf16(o[i]);
    std::memcpy(out + 2 * (row + i * p.out_s2), &bits, sizeof(bits));
  }
}

inline void write_lse(const IfaProblem& p, const IfaData& d, int64_t b, int64_t h, float lse) {
  if (d.lse != nullptr) d.lse[b * p.lse_s0 + h * p.lse_s1] = lse;
}

// The documented result of a batch whose device data was bad (core::IfaBatchState): NaN outputs
// (int8 output: 0, it has no NaN) and NaN LSE, so the rows cannot pass for results.
inline void write_fault_row(const IfaProblem& p, const IfaData& dt, int64_t b, int64_t h) {
  const int64_t row = b * p.out_s0 + h * p.out_s1;
  if (p.out_dtype == DType::kInt8) {
    auto* out = static_cast<int8_t*>(dt.out);
    for (int64_t i = 0; i < p.head_dim; ++i) out[row + i * p.out_s2] = 0;
  } else if (p.out_dtype == DType::kFloat32) {
    auto* out = static_cast<float*>(dt.out);
    for (int64_t i = 0; i < p.head_dim; ++i) out[row + i * p.out_s2] = __builtin_nanf("");
  } else {
    const uint16_t bits = p.out_dtype == DType::kFloat16 ? 0x7E00 : 0x7FC0;  // quiet NaN
    auto* out = static_cast<std::byte*>(dt.out);
    for (int64_t i = 0; i < p.head_dim; ++i) {
      std::memcpy(out + 2 * (row + i * p.out_s2), &bits, sizeof(bits));
    }
  }
  write_lse(p, dt, b, h, __builtin_nanf(""));
}

}  // namespace ifa_detail
