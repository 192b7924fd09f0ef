#include "support/vec_ops.hpp"

namespace kvflash::cpu {

// The per-ISA definitions (vec_ops_<isa>.cpp).
#define KVFLASH_DECLARE_VEC_OPS(ns)                              \
  namespace ns {                                                 \
  void vec_exp(const float* x, float* y, size_t n);              \
  void vec_fp16_to_float(const uint16_t* x, float* y, size_t n); \
  void vec_bf16_to_float(const uint16_t* x, float* y, size_t n); \
  void vec_int8_to_float(const int8_t* x, float* y, size_t n);   \
  void vec_float_to_fp16(const float* x, uint16_t* y, size_t n); \
  void vec_float_to_bf16(const float* x, uint16_t* y, size_t n); \
  }
KVFLASH_DECLARE_VEC_OPS(scalar)
KVFLASH_DECLARE_VEC_OPS(avx2)
KVFLASH_DECLARE_VEC_OPS(avx512)
#undef KVFLASH_DECLARE_VEC_OPS

namespace {
Isa usable(Isa isa) {
  const Isa detected = detected_isa();
  return static_cast<int>(isa) > static_cast<int>(detected) ? detected : isa;
}
}  // namespace

#define KVFLASH_DISPATCH(fn, ...)     \
  switch (usable(isa)) {              \
    case Isa::kAmx:                   \
    case Isa::kAvx512Bf16:            \
    case Isa::kAvx512:                \
      return avx512::fn(__VA_ARGS__); \
    case Isa::kAvx2:                  \
      return avx2::fn(__VA_ARGS__);   \
    case Isa::kScalar:                \
      return scalar::fn(__VA_ARGS__); \
  }

void vec_exp(Isa isa, const float* x, float* y, size_t n) { KVFLASH_DISPATCH(vec_exp, x, y, n) }
void vec_fp16_to_float(Isa isa, const uint16_t* x, float* y, size_t n) {
  KVFLASH_DISPATCH(vec_fp16_to_float, x, y, n)
}
void vec_bf16_to_float(Isa isa, const uint16_t* x, float* y, size_t n) {
  KVFLASH_DISPATCH(vec_bf16_to_float, x, y, n)
}
void vec_int8_to_float(Isa isa, const int8_t* x, float* y, size_t n) {
  KVFLASH_DISPATCH(vec_int8_to_float, x, y, n)
}
void vec_float_to_fp16(Isa isa, const float* x, uint16_t* y, size_t n) {
  KVFLASH_DISPATCH(vec_float_to_fp16, x, y, n)
}
void vec_float_to_bf16(Isa isa, const float* x, uint16_t* y, size_t n) {
  KVFLASH_DISPATCH(vec_float_to_bf16, x, y, n)
}
#undef KVFLASH_DISPATCH

}  // namespace kvflash::cpu
