// FIA kernel body: a task's path and the band of a key tile.
// Included only by fia_kernel-inl.h, inside the ISA namespace and after the parts before it
// (no include guard, like it: compiled once per ISA, with that unit's flags).
//
// Which score path a problem's tasks take (fia_bf16_dot_shape, also the driver's choice through
// the scalar unit's entry) and which positions of a key tile each row of a query tile sees
// (FiaBand). Both come before the matrix-engine half (fia_tiles-inl.h), which uses them as the
// task body does.

/// Whether the task runs the bf16 dot path (a property of the problem and the ISA entry only).
inline bool fia_bf16_dot_shape(const FiaParams& p) {
  return p.dtype == DType::kBFloat16 && !p.kv_int8 && p.head_dim % 2 == 0 && p.rope_dim % 2 == 0;
}

/// The visible positions of a key tile (first position j0, n positions) for the rows of a query
/// tile (first query row i0, G heads a row, the batch's band): task row m sees [lo(m), hi(m)],
/// empty when lo > hi; the same for a row's G heads (bands have no head dimension).
struct FiaBand {
  int64_t G, i0, band_lo, band_hi, j0, n;
  int64_t lo(int64_t m) const { return std::max<int64_t>(0, i0 + m / G + band_lo - j0); }
  int64_t hi(int64_t m) const { return std::min<int64_t>(n - 1, i0 + m / G + band_hi - j0); }
};
