// The body of the merge's vector row kernel (merge_rows.hpp), included inside namespace
// kvflash::cpu::<isa> after that level's simd_<isa>.h. No include guard on purpose: each ISA
// translation unit compiles its own copy. Nothing here calls a shared inline function (core/,
// std:: algorithms): the linker could keep this unit's ISA-specific copy for a baseline caller.
//
// Per element the operations are merge_kernel.cpp's portable loop, in its order: acc = 0, then
// for each live part acc = x * w + acc (x widened exactly), then acc / L rounded to the output
// dtype to nearest even. kBlock vectors of sums stay in registers over all parts, so the parts
// are read once and nothing goes through memory between them.

namespace merge_rows {

/// Vectors of sums kept in registers across the parts (4 x 16 lanes = 64 values on AVX-512).
constexpr int kBlock = 4;

template <DType kIn>
inline Vec load_part(const std::byte* row, int64_t i) {
  if constexpr (kIn == DType::kFloat32) {
    return vload(reinterpret_cast<const float*>(row) + i);
  } else if constexpr (kIn == DType::kBFloat16) {
    return vload_bf16(reinterpret_cast<const uint16_t*>(row) + i);
  } else {
    return vload_fp16(reinterpret_cast<const uint16_t*>(row) + i);
  }
}

template <DType kOut>
inline void store_out(std::byte* out, int64_t i, Vec v) {
  if constexpr (kOut == DType::kFloat32) {
    vstore(reinterpret_cast<float*>(out) + i, v);
  } else if constexpr (kOut == DType::kBFloat16) {
    vstore_bf16(reinterpret_cast<uint16_t*>(out) + i, v);
  } else {
    vstore_fp16(reinterpret_cast<uint16_t*>(out) + i, v);
  }
}

template <DType kIn>
inline float load_one(const std::byte* row, int64_t i) {
  if constexpr (kIn == DType::kFloat32) {
    return reinterpret_cast<const float*>(row)[i];
  } else if constexpr (kIn == DType::kBFloat16) {
    return bf16_to_f32(reinterpret_cast<const uint16_t*>(row)[i]);
  } else {
    return fp16_to_f32(reinterpret_cast<const uint16_t*>(row)[i]);
  }
}

template <DType kOut>
inline void store_one(std::byte* out, int64_t i, float x) {
  if constexpr (kOut == DType::kFloat32) {
    reinterpret_cast<float*>(out)[i] = x;
  } else if constexpr (kOut == DType::kBFloat16) {
    reinterpret_cast<uint16_t*>(out)[i] = f32_to_bf16(x);
  } else {
    reinterpret_cast<uint16_t*>(out)[i] = f32_to_fp16(x);
  }
}

/// nv (1..kBlock) vectors of values from column d0: sums over the parts in registers, then stored.
template <DType kIn, DType kOut, int kNv>
inline void merge_columns(const MergeRowJob& j, int64_t d0) {
  Vec acc[kNv];
  for (int b = 0; b < kNv; ++b) acc[b] = vzero();
  for (int64_t k = 0; k < j.parts; ++k) {
    const Vec w = vset1(j.weights[k]);
    const std::byte* row = j.rows[k];
    for (int b = 0; b < kNv; ++b) {
      acc[b] = vadd(vmul(load_part<kIn>(row, d0 + b * kLanes), w), acc[b]);
    }
  }
  const Vec l = vset1(j.l);
  for (int b = 0; b < kNv; ++b) store_out<kOut>(j.out, d0 + b * kLanes, vdiv(acc[b], l));
}

template <DType kIn, DType kOut>
void merge_row_typed(const MergeRowJob& j) {
  constexpr int64_t kWide = int64_t{kBlock} * kLanes;
  int64_t d = 0;
  for (; d + kWide <= j.dim; d += kWide) merge_columns<kIn, kOut, kBlock>(j, d);
  for (; d + kLanes <= j.dim; d += kLanes) merge_columns<kIn, kOut, 1>(j, d);
  for (; d < j.dim; ++d) {
    float acc = 0.0f;
    for (int64_t k = 0; k < j.parts; ++k) acc = load_one<kIn>(j.rows[k], d) * j.weights[k] + acc;
    store_one<kOut>(j.out, d, acc / j.l);
  }
}

template <DType kIn>
void merge_row_in(const MergeRowJob& j) {
  switch (j.out_dtype) {
    case DType::kFloat32:
      return merge_row_typed<kIn, DType::kFloat32>(j);
    case DType::kBFloat16:
      return merge_row_typed<kIn, DType::kBFloat16>(j);
    default:
      return merge_row_typed<kIn, DType::kFloat16>(j);
  }
}

}  // namespace merge_rows

void merge_row(const MergeRowJob& j) {
  switch (j.part_dtype) {
    case DType::kFloat32:
      return merge_rows::merge_row_in<DType::kFloat32>(j);
    case DType::kBFloat16:
      return merge_rows::merge_row_in<DType::kBFloat16>(j);
    default:
      return merge_rows::merge_row_in<DType::kFloat16>(j);
  }
}
