// FIA kernel body: one task.
// Included only by fia_kernel-inl.h, inside the ISA namespace and after the parts before it
// (no include guard, like it: compiled once per ISA, with that unit's flags).
//
// fia_task_body runs one task (batch, KV head, query tile, a range of key tiles): it loads the
// query tile, then per key tile stages and packs K and V, scores, applies the band, pse and mask,
// folds the online softmax and adds P·V, and at the end finishes its rows or hands their state to
// the merge; fia_task_tiles runs it on the matrix engine where the shape suits (units that define
// KVFLASH_FIA_TILES). Everything it calls is defined by the parts before it. fia_task_body stays
// one function: moving its query-tile load or its last loop into a function of its own changed
// the machine code (always_inline: the avx512 and AMX units', other stack slots and up to 300 more
// bytes; plain inline: every unit's), which the split into these parts did not.

/// One task: batch b, KV head n2, query tile qt, key tiles [t_first, t_last] of those the tile
/// sees (all of them: t_first = 0, t_last = INT64_MAX). `slot` null: the rows are finished and
/// written; else each row's (max, sum, count, acc) goes to slot row m (split-KV, fia_merge).
/// `scratch` is fia_scratch_floats floats, 64-byte aligned. kDot: the AVX512-BF16 score path;
/// Mm: its products on the matrix engine (FiaTiles, whose shape(p) the caller checked and whose
/// Scope it holds), void for none. kv: the key tiles packed by fia_run's packing pass (kDot
/// only; null or a tile outside it: packed here, into the scratch).
template <bool kDot, class Mm = void>
inline void fia_task_body(const FiaParams& p, const FiaPointers& d, float* scratch, int64_t b,
                          int64_t n2, int64_t qt, int64_t t_first, int64_t t_last, float* slot,
                          [[maybe_unused]] const FiaPackedKv* kv) {
  const FiaBatch& bt = p.batches[b];
  const int64_t G = p.num_heads / p.num_kv_heads, Tq = fia_query_tile(G);
  const int64_t i0 = qt * Tq, i1 = std::min(bt.q_rows, i0 + Tq), nq = i1 - i0, M = nq * G;
  const int64_t Dk = p.head_dim, Dr = p.rope_dim, Dkt = Dk + Dr, Dv = p.value_dim;
  const int64_t Mmax = fia_task_rows(G), Bk = kFiaKeyTile, P = p.prefix_len;
  const DType kvt = p.kv_int8 ? DType::kInt8 : p.dtype;
  float* qs = scratch;
  float* kt = qs + Mmax * Dkt;
  float* vs = kt + Dkt * Bk;
  [[maybe_unused]] uint16_t* vp = reinterpret_cast<uint16_t*>(vs + Bk * Dv);  // bf16 P·V's V
  float* s = vs + Bk * Dv + Bk * Dv / 2;
  float* acc = s + Mmax * Bk;
  SoftmaxState* st = reinterpret_cast<SoftmaxState*>(acc + Mmax * Dv);
  int64_t* cnt = reinterpret_cast<int64_t*>(st + Mmax);
  // The bf16 path keeps Q as bf16 rows (unscaled) and K as packed pairs in the same buffers.
  [[maybe_unused]] uint16_t* qb = reinterpret_cast<uint16_t*>(qs);
  [[maybe_unused]] uint16_t* kp = reinterpret_cast<uint16_t*>(kt);
  [[maybe_unused]] const uint16_t* krow[kFiaKeyTile];  // the tile's key / key-rope rows, packed after staging V
  [[maybe_unused]] const uint16_t* rrow[kFiaKeyTile];
  [[maybe_unused]] const uint16_t* vrow[kFiaKeyTile];  // a whole tile's value rows (bf16 P·V)
#ifdef KVFLASH_FIA_BF16_DOT
  const bool pv_dot = kDot && fia_pv_bf16_shape(p);
#else
  constexpr bool pv_dot = false;
#endif
  constexpr bool kTiles = !std::is_void_v<Mm>;
  if constexpr (kTiles) {
    // The rows past M of the last 16-row block: zero queries and accumulators, so the tiles
    // compute zeros there (nobody reads them).
    const int64_t Mt = (M + 15) / 16 * 16;
    std::fill(qb + M * Dkt, qb + Mt * Dkt, uint16_t{0});
    std::fill(acc + M * Dv, acc + Mt * Dv, 0.0f);
  }

  // ---- the query tile: row m = (i - i0) * G + g ----
  for (int64_t ii = 0; ii < nq; ++ii) {
    for (int64_t g = 0; g < G; ++g) {
      const int64_t m = ii * G + g, h = n2 * G + g, i = i0 + ii;
      const int64_t qx = bt.q_offset + i * p.q_row + h * p.q_head;
      const int64_t rx = bt.qr_offset + i * p.qr_row + h * p.qr_head;
      if constexpr (kDot) {
        uint16_t* dst = qb + m * Dkt;
        __builtin_memcpy(dst, static_cast<const uint16_t*>(d.q) + qx, Dk * 2);
        if (Dr) __builtin_memcpy(dst + Dk, static_cast<const uint16_t*>(d.q_rope) + rx, Dr * 2);
      } else {
        float* dst = qs + m * Dkt;  // scaled once here
        for (int64_t x = 0; x < Dk; ++x) dst[x] = fia_load(d.q, p.dtype, qx + x) * p.scale;
        for (int64_t x = 0; x < Dr; ++x) dst[Dk + x] = fia_load(d.q_rope, p.dtype, rx + x) * p.scale;
      }
      st[m] = SoftmaxState{};
      cnt[m] = 0;
      for (int64_t x = 0; x < Dv; ++x) acc[m * Dv + x] = 0.0f;
    }
  }

  // ---- key tiles: only those some row of the tile can see ----
  const int64_t L = bt.kv_len;
  const int64_t jlo = std::max<int64_t>(0, i0 + bt.band_lo);
  const int64_t jhi = std::min<int64_t>(L - 1, (i1 - 1) + bt.band_hi);
  const int64_t t_lo = std::max(jlo / Bk, t_first), t_hi = std::min(jhi / Bk, t_last);
  for (int64_t t = t_lo; jlo <= jhi && t <= t_hi; ++t) {
    const int64_t j0 = t * Bk, n = std::min(Bk, L - j0);
    // The rows ii in [fa, fb) see the whole tile (no mask, 64 positions in their band); `full`:
    // every row does (no per-element masking, one P·V product for all). A row's own band decides
    // (never the rows beside it in the query tile), so chunking a prompt cannot change its bits.
    int64_t fa = nq, fb = nq;
    if (!p.has_mask && n == Bk) {
      fa = std::clamp<int64_t>(j0 + Bk - 1 - bt.band_hi - i0, 0, nq);
      fb = std::clamp<int64_t>(j0 - bt.band_lo - i0 + 1, fa, nq);
    }
    const bool full = fa == 0 && fb == nq;
    // bf16 P·V for the rows that see the whole tile: a partial row sees a range of V, and V outside
    // it must never reach it (0 · NaN), which the fp32 path's per-row range ensures.
    const bool dot_rows = pv_dot && fa < fb;
    const FiaBand band{G, i0, bt.band_lo, bt.band_hi, j0, n};
    bool folded = false;  // the scores' band and fold done with them (FiaTiles::fold_tile)
    // The packed operands: the packing pass's (kv), else this task's scratch (packed below).
    [[maybe_unused]] const bool prepacked =
        kDot && kv != nullptr && t >= kv->first && t < kv->first + kv->count;
    [[maybe_unused]] const uint16_t* kpt = kp;
    [[maybe_unused]] const uint16_t* vpt = vp;
    if (prepacked) {
      kpt = kv->tiles + (t - kv->first) * fia_packed_tile_elems(p);
      vpt = kpt + Dkt * Bk;
    }
    // Stage K (bf16 pairs, or K^T in fp32: d-major, so score rows are vector FMAs) and V rows in
    // fp32 (bf16 P·V: V packed as pairs after the loop); positions past n are 0. Nothing to stage
    // for a prepacked tile every row takes whole with bf16 P·V.
    for (int64_t c = 0; !(prepacked && full && dot_rows) && c < Bk; ++c) {
      const int64_t j = j0 + c;
      if (c >= n) {
        if constexpr (kDot) {
          krow[c] = rrow[c] = nullptr;
        } else {
          for (int64_t x = 0; x < Dkt; ++x) kt[x * Bk + c] = 0.0f;
        }
        for (int64_t x = 0; x < Dv; ++x) vs[c * Dv + x] = 0.0f;
        continue;
      }
      int64_t kx = 0, rx = 0, vx = 0;
      const void* kb = fia_kv_row(p, d, bt, b, FiaKv::kKey, n2, j, &kx);
      const void* rb = Dr ? fia_kv_row(p, d, bt, b, FiaKv::kKeyRope, n2, j, &rx) : nullptr;
      const void* vb = fia_kv_row(p, d, bt, b, FiaKv::kValue, n2, j, &vx);
      const int64_t tok = bt.tok_first + (j - P);
      if (t < t_hi && j + Bk < L) {
        int64_t nx = 0;
        const void* nb = fia_kv_row(p, d, bt, b, FiaKv::kKey, n2, j + Bk, &nx);
        fia_prefetch_row(static_cast<const std::byte*>(nb) + nx * dtype_size(kvt), Dk * dtype_size(kvt));
        nb = fia_kv_row(p, d, bt, b, FiaKv::kValue, n2, j + Bk, &nx);
        fia_prefetch_row(static_cast<const std::byte*>(nb) + nx * dtype_size(kvt), Dv * dtype_size(kvt));
      }
      if constexpr (kDot) {
        krow[c] = static_cast<const uint16_t*>(kb) + kx;
        rrow[c] = Dr ? static_cast<const uint16_t*>(rb) + rx : nullptr;
      } else {
        for (int64_t x = 0; x < Dk; ++x) kt[x * Bk + c] = fia_load(kb, kvt, kx + x);
        if (p.kv_int8) fia_dequant_row(p.k_dq, d.k_scale, d.k_offset, b, n2, tok, kt + c, Dk, Bk);
        for (int64_t x = 0; x < Dr; ++x) kt[(Dk + x) * Bk + c] = fia_load(rb, p.dtype, rx + x);
      }
      if (dot_rows) {
        vrow[c] = static_cast<const uint16_t*>(vb) + vx;
        if (full) continue;  // no row takes the fp32 V
      }
      fia_widen_row(vb, kvt, vx, vs + c * Dv, Dv);
      if (p.kv_int8) fia_dequant_row(p.v_dq, d.v_scale, d.v_offset, b, n2, tok, vs + c * Dv, Dv, 1);
    }
#ifdef KVFLASH_FIA_BF16_DOT
    if constexpr (kDot) {
      if (!prepacked) {
        fia_pack_keys_bf16(kp, krow, rrow, Dk, Dr);
        if (dot_rows) fia_pack_values_bf16(vp, vrow, Dv);
      }
      if constexpr (kTiles) {
        if (full && dot_rows && !p.has_pse) {  // the whole step, 16 rows at a time
          Mm::whole_tile(qb, Dkt, kpt, Dkt / 2, s, vpt, Dv, acc, st, M, p.scale);
          for (int64_t m = 0; m < M; ++m) cnt[m] += Bk;  // full: n == Bk, no mask
          continue;
        }
        if (!p.has_pse && !p.has_mask) {  // scores, band and fold 16 rows at a time
          Mm::fold_tile(qb, Dkt, kpt, Dkt / 2, s, Dv, acc, st, M, p.scale, band);
          folded = true;
        } else {
          Mm::qk(qb, Dkt, kpt, Dkt / 2, s, Bk, M, p.scale);
        }
      } else {
        fia_qk_bf16_tile(qb, Dkt, kpt, Dkt / 2, s, Bk, M, p.scale);
      }
    }
#endif
    if constexpr (!kDot) fia_qk_tile(qs, Dkt, kt, Bk, s, Bk, M, Bk, Dkt);
    for (int64_t ii = 0; ii < nq; ++ii) {
      const int64_t i = i0 + ii;
      // The row's visible range inside the tile, [lo, hi] (empty when lo > hi); the same for its
      // G heads (masks and bands have no head dimension).
      const int64_t lo = band.lo(ii * G), hi = band.hi(ii * G);
      for (int64_t g = 0; g < G; ++g) {
        const int64_t m = ii * G + g;
        float* sr = s + m * Bk;
        if (folded) {  // no pse, no mask
          if (hi >= lo) cnt[m] += hi - lo + 1;
          continue;
        }
        if (!full) {
          for (int64_t c = 0; c < Bk; ++c)
            if (c < lo || c > hi) sr[c] = kNegInf;
        }
        if (p.has_pse) {
          const int64_t px = bt.pse_offset + (n2 * G + g) * p.pse_head + i * p.pse_row;
          for (int64_t c = lo; c <= hi; ++c) {
            const int64_t j = j0 + c, col = j + (j >= P ? bt.col_shift : 0);
            sr[c] += fia_load(d.pse, p.pse_dtype, px + col * p.pse_col);
          }
        }
        if (p.has_mask) {
          const uint8_t* mr = d.mask + bt.mask_offset + i * p.mask_row;
          for (int64_t c = lo; c <= hi; ++c) {
            const int64_t j = j0 + c, col = j + (j >= P ? bt.col_shift : 0);
            if (mr[col * p.mask_col] != 0) {
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
      }
      if (!full && hi >= lo && !(dot_rows && ii >= fa && ii < fb)) {
        // Only the row's range reaches its accumulators (V outside the band is never attended);
        // masked positions inside it are attended with weight 0, as in the reference.
        fia_pv_tile(s + ii * G * Bk + lo, Bk, vs + lo * Dv, Dv, acc + ii * G * Dv, Dv, G,
                    hi - lo + 1, Dv);
      }
    }
#ifdef KVFLASH_FIA_BF16_DOT
    if (dot_rows) {
      // Score rows [fa G, fb G): P rounded to bf16 in place, then P·V.
      float* sd = s + fa * G * Bk;
      float* ad = acc + fa * G * Dv;
      const int64_t Md = (fb - fa) * G;
      fia_round_p_bf16(sd, Md);
      if constexpr (kTiles) {
        Mm::pv(reinterpret_cast<const uint16_t*>(sd), 2 * Bk, vpt, Dv, ad, Md);
      } else {
        fia_pv_bf16_tile(reinterpret_cast<const uint16_t*>(sd), 2 * Bk, vpt, Dv, ad, Md);
      }
      continue;
    }
#endif
    if (full) fia_pv_tile(s, Bk, vs, Dv, acc, Dv, M, Bk, Dv);
  }

  // ---- finish (or hand the state to the merge) ----
  for (int64_t m = 0; m < M; ++m) {
    if (slot) {
      float* r = slot + m * fia_slot_floats(p);
      r[0] = st[m].max, r[1] = st[m].sum, r[2] = static_cast<float>(cnt[m]), r[3] = 0.0f;
      for (int64_t x = 0; x < Dv; x += kLanes) vstore(r + 4 + x, vload(acc + m * Dv + x));
    } else {
      fia_finish_row(p, d, bt, i0 + m / G, n2 * G + m % G, acc + m * Dv, st[m], cnt[m]);
    }
  }
}

#ifdef KVFLASH_FIA_TILES
/// The bf16 task of a level with a matrix engine (its FiaKernels::task_bf16): on the tiles of
/// Tiles where the shape suits them (FiaTiles::shape), holding their configuration for the task,
/// else on vdpbf16ps.
template <class Tiles>
inline void fia_task_tiles(const FiaParams& p, const FiaPointers& d, float* scratch, int64_t b,
                           int64_t n2, int64_t qt, int64_t t_first, int64_t t_last, float* slot,
                           const FiaPackedKv* kv) {
  using Engine = FiaTiles<Tiles>;
  if (!Engine::shape(p)) {
    fia_task_body<true>(p, d, scratch, b, n2, qt, t_first, t_last, slot, kv);
    return;
  }
  typename Engine::Scope tiles;
  fia_task_body<true, Engine>(p, d, scratch, b, n2, qt, t_first, t_last, slot, kv);
}
#endif
