// The FIA / PFA prefill kernel body (see fia_kernel.hpp), compiled once per ISA: included inside
// kvflash::cpu::<isa> after simd_<isa>.h, simd_math-inl.h and softmax_state.h (no include guard
// on purpose).
//
// Matrix-engine seam. The two products of a tile go through fia_qk_tile (S = Q·Kᵀ) and fia_pv_tile
// (acc += P·V) below, over fp32 staging buffers with the strides given. A translation unit that
// has a matrix engine (AMX) defines KVFLASH_FIA_MATRIX_TILES and its own two functions with these
// signatures before including this file; everything else (staging, bands, softmax, output) stays.
// Their contract: any summation order, fp32 accumulation, no other side effects.

#ifndef KVFLASH_FIA_MATRIX_TILES
// Register blocks: 4 score rows x C vectors (AVX-512 4x4 = 16 accumulators of 32 registers;
// AVX2 4x2 = 8 of 16; scalar 4x2).
inline constexpr int kFiaVecs = kLanes >= 16 ? 4 : 2;

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
    for (; m + 4 <= M; m += 4) fia_qk_block<4>(q + m * ldq, ldq, kt + c0, ldk, s + m * lds + c0, lds, D);
    for (; m < M; ++m) fia_qk_block<1>(q + m * ldq, ldq, kt + c0, ldk, s + m * lds + c0, lds, D);
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
  for (; m + 4 <= M; m += 4) fia_pv_rows<4>(p + m * ldp, ldp, v, ldv, acc + m * lda, lda, n, dv);
  for (; m < M; ++m) fia_pv_rows<1>(p + m * ldp, ldp, v, ldv, acc + m * lda, lda, n, dv);
}
#endif  // KVFLASH_FIA_MATRIX_TILES

/// Element x of a fp16 / bf16 / fp32 array, widened exactly.
inline float fia_load(const void* base, DType t, int64_t x) {
  if (t == DType::kFloat32) return static_cast<const float*>(base)[x];
  const uint16_t h = static_cast<const uint16_t*>(base)[x];
  if (t == DType::kFloat16) return fp16_to_f32(h);
  uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  __builtin_memcpy(&f, &u, 4);
  return f;
}

/// n (a multiple of kLanes) contiguous elements widened into dst.
inline void fia_widen_row(const void* base, DType t, int64_t x, float* dst, int64_t n) {
  if (t == DType::kFloat32) {
    for (int64_t i = 0; i < n; i += kLanes) vstore(dst + i, vload(static_cast<const float*>(base) + x + i));
  } else if (t == DType::kFloat16) {
    for (int64_t i = 0; i < n; i += kLanes)
      vstore(dst + i, vload_fp16(static_cast<const uint16_t*>(base) + x + i));
  } else {
    for (int64_t i = 0; i < n; i += kLanes)
      vstore(dst + i, vload_bf16(static_cast<const uint16_t*>(base) + x + i));
  }
}

/// Element offset of position j of a batch in a K/V tensor (pos/head/block strides given).
inline int64_t fia_kv_elem(const FiaParams& p, const FiaData& d, const FiaBatch& bt, int64_t off,
                           int64_t pos_stride, int64_t block_stride, int64_t j) {
  if (!p.paged) return off + j * pos_stride;
  const int64_t blk = d.block_table[bt.k_offset + j / p.block_size];
  return blk * block_stride + (j % p.block_size) * pos_stride;
}

/// The scratch floats one participant needs.
inline int64_t fia_scratch_floats(const FiaParams& p) {
  const int64_t G = p.num_heads / p.num_kv_heads;
  const int64_t M = fia_query_tile(G) * G, Dkt = p.head_dim + p.rope_dim, Dv = p.value_dim;
  // Q, K^T, V, S, acc, softmax states (2 floats), visible counts (2 floats each: int64).
  return M * Dkt + Dkt * kFiaKeyTile + kFiaKeyTile * Dv + M * kFiaKeyTile + M * Dv + 2 * M + 2 * M;
}

/// One task: batch b, KV head n2, query tile qt. `scratch` is fia_scratch_floats floats, 64-byte
/// aligned.
inline void fia_task(const FiaParams& p, const FiaData& d, float* scratch, int64_t b, int64_t n2,
                     int64_t qt) {
  const FiaBatch& bt = p.batches[b];
  const int64_t G = p.num_heads / p.num_kv_heads, Tq = fia_query_tile(G);
  const int64_t i0 = qt * Tq, i1 = std::min(bt.q_rows, i0 + Tq), nq = i1 - i0, M = nq * G;
  const int64_t Dk = p.head_dim, Dr = p.rope_dim, Dkt = Dk + Dr, Dv = p.value_dim;
  const int64_t Mmax = Tq * G, Bk = kFiaKeyTile;
  float* qs = scratch;
  float* kt = qs + Mmax * Dkt;
  float* vs = kt + Dkt * Bk;
  float* s = vs + Bk * Dv;
  float* acc = s + Mmax * Bk;
  SoftmaxState* st = reinterpret_cast<SoftmaxState*>(acc + Mmax * Dv);
  int64_t* cnt = reinterpret_cast<int64_t*>(st + Mmax);

  // ---- the query tile, scaled: row m = (i - i0) * G + g ----
  for (int64_t ii = 0; ii < nq; ++ii) {
    for (int64_t g = 0; g < G; ++g) {
      const int64_t m = ii * G + g, h = n2 * G + g, i = i0 + ii;
      float* dst = qs + m * Dkt;
      const int64_t qx = bt.q_offset + i * p.q_row + h * p.q_head;
      for (int64_t x = 0; x < Dk; ++x) dst[x] = fia_load(d.q, p.dtype, qx + x) * p.scale;
      const int64_t rx = bt.qr_offset + i * p.qr_row + h * p.qr_head;
      for (int64_t x = 0; x < Dr; ++x) dst[Dk + x] = fia_load(d.q_rope, p.dtype, rx + x) * p.scale;
      st[m] = SoftmaxState{};
      cnt[m] = 0;
      for (int64_t x = 0; x < Dv; ++x) acc[m * Dv + x] = 0.0f;
    }
  }

  // ---- key tiles: only those some row of the tile can see ----
  const int64_t L = bt.kv_len;
  const int64_t jlo = std::max<int64_t>(0, i0 + bt.band_lo);
  const int64_t jhi = std::min<int64_t>(L - 1, (i1 - 1) + bt.band_hi);
  const int64_t koff = bt.k_offset + n2 * p.k_head, kroff = bt.kr_offset + n2 * p.kr_head;
  const int64_t voff = bt.v_offset + n2 * p.v_head;
  for (int64_t t = jlo < 0 ? 0 : jlo / Bk; jlo <= jhi && t <= jhi / Bk; ++t) {
    const int64_t j0 = t * Bk, n = std::min(Bk, L - j0);
    // Stage K^T (d-major, so score rows are vector FMAs) and V rows; positions past n are 0.
    for (int64_t c = 0; c < Bk; ++c) {
      if (c >= n) {
        for (int64_t x = 0; x < Dkt; ++x) kt[x * Bk + c] = 0.0f;
        for (int64_t x = 0; x < Dv; ++x) vs[c * Dv + x] = 0.0f;
        continue;
      }
      const int64_t kx = fia_kv_elem(p, d, bt, koff, p.k_pos, p.k_block, j0 + c) +
                         (p.paged ? n2 * p.k_head : 0);
      for (int64_t x = 0; x < Dk; ++x) kt[x * Bk + c] = fia_load(d.k, p.dtype, kx + x);
      if (Dr) {
        const int64_t rx = fia_kv_elem(p, d, bt, kroff, p.kr_pos, p.kr_block, j0 + c) +
                           (p.paged ? n2 * p.kr_head : 0);
        for (int64_t x = 0; x < Dr; ++x) kt[(Dk + x) * Bk + c] = fia_load(d.k_rope, p.dtype, rx + x);
      }
      const int64_t vx = fia_kv_elem(p, d, bt, voff, p.v_pos, p.v_block, j0 + c) +
                         (p.paged ? n2 * p.v_head : 0);
      fia_widen_row(d.v, p.dtype, vx, vs + c * Dv, Dv);
    }
    // Whole tile visible to every row (and no mask): no per-element masking, one P·V product.
    const bool full = !p.has_mask && n == Bk && (i1 - 1) + bt.band_lo <= j0 &&
                      j0 + Bk - 1 <= i0 + bt.band_hi;
    fia_qk_tile(qs, Dkt, kt, Bk, s, Bk, M, Bk, Dkt);
    for (int64_t m = 0; m < M; ++m) {
      const int64_t i = i0 + m / G;
      float* sr = s + m * Bk;
      // The row's visible range inside the tile, [lo, hi] (empty when lo > hi).
      const int64_t lo = std::max<int64_t>(0, i + bt.band_lo - j0);
      const int64_t hi = std::min<int64_t>(n - 1, i + bt.band_hi - j0);
      if (!full) {
        for (int64_t c = 0; c < Bk; ++c)
          if (c < lo || c > hi) sr[c] = kNegInf;
      }
      if (p.has_mask) {
        const uint8_t* mr = d.mask + bt.mask_offset + i * p.mask_row;
        for (int64_t c = lo; c <= hi; ++c) {
          if (mr[(j0 + c) * p.mask_col] != 0) {
            sr[c] = kNegInf;
          } else {
            ++cnt[m];
          }
        }
      } else if (hi >= lo) {
        cnt[m] += hi - lo + 1;
      }
      const float alpha = softmax_fold_tile(st[m], sr, Bk);
      softmax_scale_acc(acc + m * Dv, Dv, alpha);
      if (!full && hi >= lo) {
        // Only the row's range reaches its accumulator (V outside the band is never attended);
        // masked positions inside it are attended with weight 0, as in the reference.
        fia_pv_tile(sr + lo, Bk, vs + lo * Dv, Dv, acc + m * Dv, Dv, 1, hi - lo + 1, Dv);
      }
    }
    if (full) fia_pv_tile(s, Bk, vs, Dv, acc, Dv, M, Bk, Dv);
  }

  // ---- finish: normalise, round once, LSE ----
  for (int64_t m = 0; m < M; ++m) {
    const int64_t h = n2 * G + m % G, i = i0 + m / G;
    const int64_t ox = bt.out_offset + i * p.o_row + h * p.o_head;
    float* a = acc + m * Dv;
    float lse = kPosInf;
    if (cnt[m] == 0) {
      for (int64_t x = 0; x < Dv; ++x) a[x] = 0.0f;  // D5: nothing visible
    } else {
      float sum = softmax_final_sum(st[m]);
      if (p.has_sink) sum += exp_scalar(fia_load(d.sink, p.sink_dtype, h) - st[m].max);  // D8
      const Vec inv = vset1(1.0f / sum);
      for (int64_t x = 0; x < Dv; x += kLanes) vstore(a + x, vmul(vload(a + x), inv));
      lse = core::softmax_lse(st[m].max, sum, SoftmaxLog{});
    }
    if (p.out_dtype == DType::kFloat32) {
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
}
