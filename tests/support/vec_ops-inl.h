// Bodies of vec_ops.hpp for one ISA. No include guard: included inside kvflash::cpu::<isa> after
// cpu/simd_<isa>.h and cpu/simd_math-inl.h.

void vec_exp(const float* x, float* y, size_t n) {
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) vstore(y + i, vexp(vload(x + i)));
  for (; i < n; ++i) y[i] = exp_scalar(x[i]);
}

void vec_fp16_to_float(const uint16_t* x, float* y, size_t n) {
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) vstore(y + i, vload_fp16(x + i));
  for (; i < n; ++i) y[i] = fp16_to_f32(x[i]);
}

void vec_bf16_to_float(const uint16_t* x, float* y, size_t n) {
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) vstore(y + i, vload_bf16(x + i));
  for (; i < n; ++i) y[i] = bf16_to_f32(x[i]);
}

void vec_int8_to_float(const int8_t* x, float* y, size_t n) {
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) vstore(y + i, vload_int8(x + i));
  for (; i < n; ++i) y[i] = static_cast<float>(x[i]);
}

void vec_float_to_fp16(const float* x, uint16_t* y, size_t n) {
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) vstore_fp16(y + i, vload(x + i));
  for (; i < n; ++i) y[i] = f32_to_fp16(x[i]);
}

void vec_float_to_bf16(const float* x, uint16_t* y, size_t n) {
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) vstore_bf16(y + i, vload(x + i));
  for (; i < n; ++i) y[i] = f32_to_bf16(x[i]);
}
