// Math written once against the thin vector type (Vec, kLanes, v* primitives of simd_<isa>.h):
// the vectorised exp and the scalar conversions kernels need for outputs. No include guard on
// purpose: it is included inside each ISA namespace, after that ISA's simd_<isa>.h, e.g.
//   namespace kvflash::cpu::avx2 {
//   #include "cpu/simd_math-inl.h"
//   }
// so every ISA gets its own copy compiled with its own flags.

/// vexp's argument reduction and polynomial: x (NaN taken as kExpLo) clamped to [kExpLo, kExpHi]
/// = n ln2 + r with |r| <= ln2/2 and n integral in [-150, 128]; returns e^r and sets *n. vexp
/// scales it by 2^n; a level with a one-instruction scaling can do that step itself and keep
/// vexp's bits (src/cpu/fia/fia_tiles-inl.h, FiaTiles::exp_weights).
inline Vec vexp_reduced(Vec x, Vec* n_out) {
  // Below kExpLo the result rounds to 0; above kExpHi it is +inf. Clamping keeps n in range, and
  // the true overflow then happens in the final multiplication.
  constexpr float kExpLo = -104.0f;
  constexpr float kExpHi = 89.0f;
  constexpr float kLog2e = 1.44269504088896341f;
  // ln2 split in two so n * kLn2Hi is exact (kLn2Hi has 9 significant bits, |n| <= 150).
  constexpr float kLn2Hi = 0.693359375f;
  constexpr float kLn2Lo = -2.12194440e-4f;
  const Vec xc = vmin(vmax(x, vset1(kExpLo)), vset1(kExpHi));
  const Vec n = vround(vmul(xc, vset1(kLog2e)));
  Vec r = vfma(n, vset1(-kLn2Hi), xc);
  r = vfma(n, vset1(-kLn2Lo), r);
  const Vec r2 = vmul(r, r);
  Vec y = vset1(1.9875691500e-4f);
  y = vfma(y, r, vset1(1.3981999507e-3f));
  y = vfma(y, r, vset1(8.3334519073e-3f));
  y = vfma(y, r, vset1(4.1665795894e-2f));
  y = vfma(y, r, vset1(1.6666665459e-1f));
  y = vfma(y, r, vset1(5.0000001201e-1f));
  *n_out = n;
  return vadd(vfma(y, r2, r), vset1(1.0f));
}

/// e^x for every lane, within about 2 fp32 ulp of the exact value for normal results (subnormal
/// results within about one subnormal ulp). exp(-inf) = 0, exp(NaN) = NaN, overflow gives +inf.
/// Method (Cephes expf): x = n ln2 + r with |r| <= ln2/2, e^r by a degree-7 polynomial
/// (vexp_reduced), then the result is scaled by 2^n in two steps so n down to -150 (subnormal
/// results) and up to 128 work.
inline Vec vexp(Vec x) {
  constexpr float kExpLo = -104.0f;  // vexp_reduced's
  Vec n;
  Vec y = vexp_reduced(x, &n);
  // n in [-150, 128]: 2^n = 2^n1 * 2^n2 with both halves in [-75, 64], always normal.
  const Vec n1 = vround(vmul(n, vset1(0.5f)));
  const Vec n2 = vsub(n, n1);
  y = vmul(vmul(y, vpow2i(n1)), vpow2i(n2));
  y = vselect_lt(x, vset1(kExpLo), vzero(), y);  // also exp(-inf) = 0
  return vselect_nan(x, x, y);
}

/// The same exp for one value (lane 0 of vexp), so scalar rescale factors match the vector path.
inline float exp_scalar(float x) {
  float lanes[kLanes];
  vstore(lanes, vexp(vset1(x)));
  return lanes[0];
}

// bf16 <-> fp32 with plain integer arithmetic (RNE, NaN kept quiet), identical to core/half.hpp;
// repeated here so each ISA translation unit owns its copy (see simd_avx512.h).
inline float bf16_to_f32(uint16_t h) {
  const uint32_t u = uint32_t{h} << 16;
  float f;
  __builtin_memcpy(&f, &u, sizeof(f));
  return f;
}
inline uint16_t f32_to_bf16(float f) {
  uint32_t u;
  __builtin_memcpy(&u, &f, sizeof(u));
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

/// sat8(round_half_even(x)): the int8 output rule (docs/semantics.md §0.2). NaN maps to 0.
inline int8_t f32_to_int8_sat(float x) {
  if (!(x == x)) return 0;
  // Clamp first so the rounding trick below stays in its exact range; values beyond +-128.5
  // saturate either way.
  const float c = x < -129.0f ? -129.0f : (x > 128.0f ? 128.0f : x);
  constexpr float kMagic = 0x1.8p23f;
  float r = (c + kMagic) - kMagic;  // round half to even under the default rounding mode
  r = r < -128.0f ? -128.0f : (r > 127.0f ? 127.0f : r);
  return static_cast<int8_t>(static_cast<int>(r));
}
