// FIA kernel body: the fp32 QK and P·V micro-kernels.
// Included only by fia_kernel-inl.h, inside the ISA namespace and after the parts before it
// (no include guard, like it: compiled once per ISA, with that unit's flags).
//
// The register blocks of every level: scores S = Q·Kᵀ over fp32 rows (fia_qk_tile, K staged
// transposed) and acc += P·V (fia_pv_tile), R rows x C vectors at a time, a row remainder through
// fia_rows_tail. Apart from the bf16 products (fia_bf16_score_kernels-inl.h,
// fia_bf16_pv_kernels-inl.h) because every level runs them (the bf16 path too, for the P·V of rows
// that see part of a key tile), and they know nothing of layouts, masks or the softmax:
// fia_task_body stages their operands.

// Register blocks: R score rows x C vectors (AVX-512 6x4 = 24 accumulators of 32 registers, with
// room for the 4 key / value vectors and a broadcast; AVX2 4x2 = 8 of 16; scalar 4x2). Every
// element's arithmetic is the same in any block shape (one fp32 chain in a fixed order), so the
// blocking never changes a bit.
inline constexpr int kFiaVecs = kLanes >= 16 ? 4 : 2;
inline constexpr int kFiaRows = kLanes >= 16 ? 6 : 4;

/// Calls f(integral_constant<R>) for the row-block remainder r in [1, kFiaRows).
template <class F>
inline void fia_rows_tail(int64_t r, F&& f) {
  switch (r) {
    case 1: f(std::integral_constant<int, 1>{}); break;
    case 2: f(std::integral_constant<int, 2>{}); break;
    case 3: f(std::integral_constant<int, 3>{}); break;
    case 4: if constexpr (kFiaRows > 4) f(std::integral_constant<int, 4>{}); break;
    case 5: if constexpr (kFiaRows > 5) f(std::integral_constant<int, 5>{}); break;
    default: break;
  }
}

template <int R>
inline void fia_qk_block(const float* q, int64_t ldq, const float* kt, int64_t ldk, float* s,
                         int64_t lds, int64_t D) {
  Vec acc[R][kFiaVecs];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < kFiaVecs; ++c) acc[r][c] = vzero();
  for (int64_t d = 0; d < D; ++d) {
    Vec kv[kFiaVecs];
    for (int c = 0; c < kFiaVecs; ++c) kv[c] = vload(kt + d * ldk + c * kLanes);
    for (int r = 0; r < R; ++r) {
      const Vec qb = vset1(q[r * ldq + d]);
      for (int c = 0; c < kFiaVecs; ++c) acc[r][c] = vfma(qb, kv[c], acc[r][c]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < kFiaVecs; ++c) vstore(s + r * lds + c * kLanes, acc[r][c]);
}

/// s[m][0, n) = sum_d q[m][d] * kt[d][m'] for M rows; n a multiple of kFiaVecs * kLanes.
inline void fia_qk_tile(const float* q, int64_t ldq, const float* kt, int64_t ldk, float* s,
                        int64_t lds, int64_t M, int64_t n, int64_t D) {
  for (int64_t c0 = 0; c0 < n; c0 += kFiaVecs * kLanes) {
    int64_t m = 0;
    for (; m + kFiaRows <= M; m += kFiaRows)
      fia_qk_block<kFiaRows>(q + m * ldq, ldq, kt + c0, ldk, s + m * lds + c0, lds, D);
    fia_rows_tail(M - m, [&](auto r) {
      fia_qk_block<decltype(r)::value>(q + m * ldq, ldq, kt + c0, ldk, s + m * lds + c0, lds, D);
    });
  }
}

template <int R, int C>
inline void fia_pv_block(const float* p, int64_t ldp, const float* v, int64_t ldv, float* acc,
                         int64_t lda, int64_t n) {
  Vec a[R][C];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) a[r][c] = vload(acc + r * lda + c * kLanes);
  for (int64_t j = 0; j < n; ++j) {
    Vec vv[C];
    for (int c = 0; c < C; ++c) vv[c] = vload(v + j * ldv + c * kLanes);
    for (int r = 0; r < R; ++r) {
      const Vec pb = vset1(p[r * ldp + j]);
      for (int c = 0; c < C; ++c) a[r][c] = vfma(pb, vv[c], a[r][c]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) vstore(acc + r * lda + c * kLanes, a[r][c]);
}

template <int R>
inline void fia_pv_rows(const float* p, int64_t ldp, const float* v, int64_t ldv, float* acc,
                        int64_t lda, int64_t n, int64_t dv) {
  int64_t d = 0;
  for (; d + kFiaVecs * kLanes <= dv; d += kFiaVecs * kLanes)
    fia_pv_block<R, kFiaVecs>(p, ldp, v + d, ldv, acc + d, lda, n);
  for (; d < dv; d += kLanes) fia_pv_block<R, 1>(p, ldp, v + d, ldv, acc + d, lda, n);
}

/// acc[m][0, dv) += sum_j p[m][j] * v[j][0, dv) for M rows, j < n; dv a multiple of kLanes.
inline void fia_pv_tile(const float* p, int64_t ldp, const float* v, int64_t ldv, float* acc,
                        int64_t lda, int64_t M, int64_t n, int64_t dv) {
  int64_t m = 0;
  for (; m + kFiaRows <= M; m += kFiaRows)
    fia_pv_rows<kFiaRows>(p + m * ldp, ldp, v, ldv, acc + m * lda, lda, n, dv);
  fia_rows_tail(M - m, [&](auto r) {
    fia_pv_rows<decltype(r)::value>(p + m * ldp, ldp, v, ldv, acc + m * lda, lda, n, dv);
  });
}
