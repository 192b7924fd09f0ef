// The matrix-engine half of the FIA prefill task: the two products of fia_task_body's bf16 path
// (fia_task_body-inl.h, KVFLASH_FIA_BF16_DOT) on tiles instead of vdpbf16ps, over the same packed
// operands. No include guard on purpose: fia_kernel-inl.h includes it inside its ISA namespace
// when KVFLASH_FIA_TILES is defined, in a translation unit compiled with the AMX flags that
// includes cpu/amx/amx_tile.hpp first (src/cpu/fia/fia_kernel_amx.cpp on the CPU's tiles,
// tests/support/fia_emu_tiles_amx.cpp on the tests' software model of them).
//
// Written once against a tile-operations type (cpu/amx/amx_tile.hpp), so the code the tests check
// on the model is the code the hardware runs. Both products read bf16 operands whose products are
// exact and sum them into fp32 (tdpbf16ps), as the vdpbf16ps path does in another order (allowed:
// docs/semantics.md §0.2):
//   - S = scale · Q·Kᵀ: the query rows as they are (bf16, Dk + Dr channels) are the A operand, 32
//     channels a tile; the key tile packed by fia_pack_keys_bf16 ([16 keys][pair][2] per group of
//     16 keys) is exactly the B operand's pair layout, 16 pairs a tile; 4 accumulator tiles hold a
//     16-row block's scores of the 64 keys;
//   - acc += P·V on full tiles with a bf16 output (fia_pv_bf16_shape): P rounded to bf16 in place
//     (fia_round_p_bf16) is the A operand, 32 keys a tile; V packed by fia_pack_values_bf16
//     ([pair][Dv][2]) is the B operand, 16 pairs x 16 channels a tile; the accumulators are loaded,
//     added to and stored back 16 x 32 channels at a time.
// Rows are taken 16 at a time: the task keeps round_up(M, 16) rows of Q, S and acc, the rows past M
// zero (fia_task_body), so a last partial block of the scores computes zeros nobody reads, and one
// tile configuration (every tile 16 x 64 bytes) serves the whole task; P·V, which may cover only
// some of the task's rows, stages a last partial block. Every element of a result is one
// row of A against one column of B, so a row's bits depend neither on the block it falls in nor on
// the rows beside it: the same bits for any thread count and batch composition.
//
// Without pse or mask the tile's whole step runs per 16-row block while the block is in the
// first-level cache (whole_tile: a key tile every row sees with bf16 P·V; fold_tile: the others):
// the products, each row's band and fold (fold_block: softmax_fold_tile's operations per row, its
// horizontal reductions for 16 rows at once, its exp vexp's with one vscalefps) and, for whole
// tiles, P·V one block behind. Every row gets the operations the row-by-row path gives it, so the
// same bits (tests/cpu_amx_fia_test.cpp, AmxFiaExp.SameBitsAsVexp; docs/perf-log.md, "FIA prefill
// on AMX tiles (2026-12-05)").

/// The matrix engine for fia_task_body. Tiles: the tile operations (amx::HwTiles, or the tests'
/// model).
template <class Tiles>
struct FiaTiles {
  /// Whether the task of p runs on tiles: the bf16 path (fia_bf16_dot_shape) with whole tiles of
  /// channels (Dk + Dr a multiple of 32, Dv of 16); other shapes take the vdpbf16ps path.
  static bool shape(const FiaParams& p) {
    return fia_bf16_dot_shape(p) && (p.head_dim + p.rope_dim) % amx::kTileK == 0 &&
           p.value_dim % 16 == 0;
  }

  /// The tile configuration of a task (loaded at its start, released at its end): every tile
  /// 16 x 64 bytes, the roles fixed per product (qk, pv below).
  struct Scope : amx::BasicTileScope<Tiles> {
    Scope() : amx::BasicTileScope<Tiles>(amx::uniform_palette()) {}
  };

  /// s[m][0, 64) = scale · q[m] · k for rows m < round_up(M, 16): q bf16 rows of 2 · pairs
  /// channels, ldq elements apart (rows past M readable); kp the key tile as fia_pack_keys_bf16
  /// packs it; pairs a multiple of 16; s rows lds floats apart.
  static void qk(const uint16_t* q, int64_t ldq, const uint16_t* kp, int64_t pairs, float* s,
                 int64_t lds, int64_t M, float scale) {
    for (int64_t m = 0; m < M; m += amx::kTileRows)
      qk_block(q + m * ldq, ldq, kp, pairs, s + m * lds, lds, scale);
  }

  /// qk for the 16 rows from q. Tiles: 0 the query block, 1-3 the key groups' operands, 4-7 the
  /// scores of key groups 0-3.
  static void qk_block(const uint16_t* q, int64_t ldq, const uint16_t* kp, int64_t pairs, float* s,
                       int64_t lds, float scale) {
    qk_products(q, ldq, kp, pairs, s, lds);
    const Vec sc = vset1(scale);
    for (int64_t r = 0; r < amx::kTileRows; ++r) {
      for (int64_t c = 0; c < kFiaKeyTile; c += kLanes) {
        vstore(s + r * lds + c, vmul(vload(s + r * lds + c), sc));
      }
    }
  }

  /// qk_block's products, unscaled.
  static void qk_products(const uint16_t* q, int64_t ldq, const uint16_t* kp, int64_t pairs,
                          float* s, int64_t lds) {
    const ptrdiff_t qs = ldq * 2, ss = lds * 4;
    Tiles::template zero<4>();
    Tiles::template zero<5>();
    Tiles::template zero<6>();
    Tiles::template zero<7>();
    for (int64_t pr = 0; pr < pairs; pr += amx::kTileRows) {
      Tiles::template load<0>(q + 2 * pr, qs);
      const uint16_t* k = kp + pr * 32;  // key group c's pairs [pr, pr + 16) at + c * pairs * 32
      Tiles::template load<1>(k, amx::kTileRowBytes);
      Tiles::template load<2>(k + pairs * 32, amx::kTileRowBytes);
      Tiles::template dpbf16ps<4, 0, 1>();
      Tiles::template load<3>(k + 2 * pairs * 32, amx::kTileRowBytes);
      Tiles::template dpbf16ps<5, 0, 2>();
      Tiles::template load<1>(k + 3 * pairs * 32, amx::kTileRowBytes);
      Tiles::template dpbf16ps<6, 0, 3>();
      Tiles::template dpbf16ps<7, 0, 1>();
    }
    Tiles::template store<4>(s, ss);
    Tiles::template store<5>(s + 16, ss);
    Tiles::template store<6>(s + 32, ss);
    Tiles::template store<7>(s + 48, ss);
  }

  /// A key tile that every row of the task sees whole, with no pse (fia_task_body's `full` on the
  /// bf16 P·V path): its whole step for rows m < M, 16 rows at a time, so that a block's scores,
  /// weights and accumulators stay in the first-level cache from one product to the next (the
  /// separate passes over all the task's rows streamed 64 KB of scores and 128 KB of accumulators
  /// through the second level several times per key tile). Per block: its products
  /// (qk_products), the rows' folds (fold_block), P·V (pv). The blocks are software-pipelined:
  /// block b's P·V runs after block b + 1's products, because a tile load cannot take data from
  /// vector stores still in flight (perf: half of P·V's time was its first tdpbf16ps waiting for
  /// the weights and accumulators fold_block had just stored). s: round_up(M, 16) rows of
  /// kFiaKeyTile floats; st: the rows' softmax states.
  static void whole_tile(const uint16_t* q, int64_t ldq, const uint16_t* kp, int64_t pairs,
                         float* s, const uint16_t* vp, int64_t Dv, float* acc, SoftmaxState* st,
                         int64_t M, float scale) {
    constexpr int64_t R = amx::kTileRows;
    const auto rows = [M](int64_t m) { return std::min<int64_t>(amx::kTileRows, M - m); };
    qk_products(q, ldq, kp, pairs, s, kFiaKeyTile);
    fold_block(s, st, acc, Dv, rows(0), scale);
    for (int64_t m = 0; m < M; m += R) {
      const int64_t n = m + R;
      if (n < M) qk_products(q + n * ldq, ldq, kp, pairs, s + n * kFiaKeyTile, kFiaKeyTile);
      pv(reinterpret_cast<const uint16_t*>(s + m * kFiaKeyTile), 2 * kFiaKeyTile, vp, Dv,
         acc + m * Dv, rows(m));
      if (n < M) fold_block(s + n * kFiaKeyTile, st + n, acc + n * Dv, Dv, rows(n), scale);
    }
  }

  /// The scores of a key tile that is not a whole_tile (a band cuts it, or the output keeps P in
  /// fp32) with each row's band applied and its fold and accumulator rescale done, 16 rows at a
  /// time: per block its products (qk_products), then fold_block with the band, which leaves the
  /// weights in fp32 in s for fia_task_body's P·V. The same bits as qk, the band's -inf,
  /// softmax_fold_tile and softmax_scale_acc row by row. No pse, no mask (fia_task_body applies
  /// those between the products and the fold).
  static void fold_tile(const uint16_t* q, int64_t ldq, const uint16_t* kp, int64_t pairs,
                        float* s, int64_t Dv, float* acc, SoftmaxState* st, int64_t M, float scale,
                        const FiaBand& band) {
    for (int64_t m = 0; m < M; m += amx::kTileRows) {
      qk_products(q + m * ldq, ldq, kp, pairs, s + m * kFiaKeyTile, kFiaKeyTile);
      fold_block<false, true>(s + m * kFiaKeyTile, st + m, acc + m * Dv, Dv,
                        std::min<int64_t>(amx::kTileRows, M - m), scale, &band, m);
    }
  }

  /// vexp (src/cpu/simd_math-inl.h) with its last step, e^r · 2^n, done by one vscalefps: the
  /// exact product rounded once, as vexp's two multiplications round it (the first, by 2^n1, is
  /// always exact), so the same bits for every input (tests/cpu_amx_fia_test.cpp,
  /// AmxFiaExp.SameBitsAsVexp) in 15 vector operations instead of 24: the exps are most of
  /// fold_block's work. Below vexp's kExpLo (-104: a band's -inf, a first tile's rescale from
  /// -inf) the lane is 0, as vexp selects, and is masked out of the scaling: an underflowing
  /// vscalefps takes a microcode assist (perf: the banded fold ran 8 times slower per tile); NaN
  /// is kept as vexp keeps it.
  static Vec exp_weights(Vec x) {
    Vec n;
    const Vec y = vexp_reduced(x, &n);
    const __mmask16 live = _mm512_cmp_ps_mask(x.v, _mm512_set1_ps(-104.0f), _CMP_GE_OQ);
    return vselect_nan(x, x, Vec{_mm512_maskz_scalef_ps(live, y.v, n.v)});
  }

  /// Lane of row r in reduce16's result.
  static constexpr int reduce16_lane(int64_t r) { return static_cast<int>(4 * (r % 4) + r / 4); }

  /// The 16 horizontal reductions of x[0..15] by op at once: lane reduce16_lane(r) of the result
  /// is x[r] reduced in vreduce_max's and vreduce_add's tree and operand order (lanes i and i + 8,
  /// then i and i + 4, i and i + 2, i and i + 1, the lower lane first), so the same bits as those
  /// row by row, NaN included, in 15 operations instead of 60 and without their serial chains.
  template <class Op>
  static __m512 reduce16(const __m512* x, Op op) {
    __m512 h[8], q[4], e[2];
    for (int k = 0; k < 8; ++k)  // lane i of row 2k + (i >= 8): row's i % 8 and i % 8 + 8
      h[k] = op(_mm512_shuffle_f32x4(x[2 * k], x[2 * k + 1], 0x44),
                _mm512_shuffle_f32x4(x[2 * k], x[2 * k + 1], 0xEE));
    for (int j = 0; j < 4; ++j)  // 128-bit block t: row 4j + t's lanes i and i + 4, i < 4
      q[j] = op(_mm512_shuffle_f32x4(h[2 * j], h[2 * j + 1], 0x88),
                _mm512_shuffle_f32x4(h[2 * j], h[2 * j + 1], 0xDD));
    for (int u = 0; u < 2; ++u) {  // block t: rows 8u + t and 8u + 4 + t, lanes i and i + 2
      const __m512d a = _mm512_castps_pd(q[2 * u]), b = _mm512_castps_pd(q[2 * u + 1]);
      e[u] = op(_mm512_castpd_ps(_mm512_unpacklo_pd(a, b)),
                _mm512_castpd_ps(_mm512_unpackhi_pd(a, b)));
    }
    return op(_mm512_shuffle_ps(e[0], e[1], 0x88), _mm512_shuffle_ps(e[0], e[1], 0xDD));
  }

  /// softmax_fold_tile, softmax_scale_acc and fia_round_p_bf16 for the rows r < rows (at most 16)
  /// of a block of raw products (s, kFiaKeyTile floats apart; scaled here), with the same
  /// operations on each row in the same order, so the same bits; only the rows' horizontal
  /// reductions (reduce16) and their rescale factors' exps (one exp_weights, whose lanes are
  /// exp_scalar's) run for the 16 rows together. The rules are core::softmax_tile_begin's and
  /// softmax_tile_end's, called per row; the exp the first asks for is recorded and taken after.
  /// kBf16: the weights rounded to bf16 in place (fia_round_p_bf16's layout), else kept in fp32
  /// as softmax_fold_tile keeps them. kBand: band masks the positions outside task row
  /// m0 + r's range with -inf before the fold, as fia_task_body does.
  template <bool kBf16 = true, bool kBand = false>
  static void fold_block(float* s, SoftmaxState* st, float* acc, int64_t Dv, int64_t rows,
                         float scale, const FiaBand* band = nullptr, int64_t m0 = 0) {
    const Vec sc = vset1(scale);
    const __m512i iota =
        _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    __m512 x[amx::kTileRows];
    alignas(64) float red[amx::kTileRows];
    for (int64_t r = 0; r < amx::kTileRows; ++r) {
      float* sr = s + r * kFiaKeyTile;
      Vec mx = vset1(kNegInf);
      if (r < rows) {
        // Lanes outside [lo, hi] (positions counted from c = 0) become -inf.
        __m512i lo = _mm512_setzero_si512(), hi = _mm512_set1_epi32(kFiaKeyTile - 1);
        if constexpr (kBand) {
          const int64_t l = std::clamp<int64_t>(band->lo(m0 + r), 0, kFiaKeyTile);
          const int64_t h = std::clamp<int64_t>(band->hi(m0 + r), -1, kFiaKeyTile - 1);
          lo = _mm512_set1_epi32(static_cast<int>(l)), hi = _mm512_set1_epi32(static_cast<int>(h));
        }
        for (int64_t c = 0; c < kFiaKeyTile; c += kLanes) {
          Vec v = vmul(vload(sr + c), sc);
          if constexpr (kBand) {
            const __m512i pos = _mm512_add_epi32(iota, _mm512_set1_epi32(static_cast<int>(c)));
            const __mmask16 out = _mm512_cmplt_epi32_mask(pos, lo) | _mm512_cmpgt_epi32_mask(pos, hi);
            v.v = _mm512_mask_mov_ps(v.v, out, _mm512_set1_ps(kNegInf));
          }
          vstore(sr + c, v);
          mx = vmax(mx, v);
        }
      }
      x[r] = mx.v;
    }
    _mm512_store_ps(red, reduce16(x, [](__m512 a, __m512 b) { return _mm512_max_ps(a, b); }));
    core::SoftmaxTile t[amx::kTileRows];
    alignas(64) float arg[amx::kTileRows] = {};
    bool deferred[amx::kTileRows] = {};
    for (int64_t r = 0; r < rows; ++r) {
      const float* sr = s + r * kFiaKeyTile;
      t[r] = core::softmax_tile_begin(
          st[r], red[reduce16_lane(r)], [sr] { return softmax_any_nan(sr, kFiaKeyTile); },
          [&arg, &deferred, r](float a) {
            arg[r] = a, deferred[r] = true;
            return 0.0f;  // replaced below
          });
    }
    alignas(64) float ex[amx::kTileRows];
    vstore(ex, exp_weights(vload(arg)));
    for (int64_t r = 0; r < amx::kTileRows; ++r) {
      if (r < rows && deferred[r]) t[r].alpha = ex[r];
      x[r] = _mm512_setzero_ps();
    }
    for (int64_t r = 0; r < rows; ++r) {
      float* sr = s + r * kFiaKeyTile;
      const Vec pivot = vset1(t[r].pivot);
      Vec p[kFiaKeyTile / kLanes];
      Vec sum = vzero();
      for (int64_t c = 0; c < kFiaKeyTile / kLanes; ++c) {
        p[c] = exp_weights(vsub(vload(sr + c * kLanes), pivot));
        sum = vadd(sum, p[c]);
      }
      x[r] = sum.v;
      if constexpr (kBf16) {
        uint16_t* pb = reinterpret_cast<uint16_t*>(sr);  // fia_round_p_bf16's layout and rounding
        for (int64_t c = 0; c < kFiaKeyTile / kLanes; c += 2)
          _mm512_storeu_si512(pb + c * kLanes, (__m512i)_mm512_cvtne2ps_pbh(p[c + 1].v, p[c].v));
      } else {
        for (int64_t c = 0; c < kFiaKeyTile / kLanes; ++c) vstore(sr + c * kLanes, p[c]);
      }
    }
    _mm512_store_ps(red, reduce16(x, [](__m512 a, __m512 b) { return _mm512_add_ps(a, b); }));
    for (int64_t r = 0; r < rows; ++r) {
      core::softmax_tile_end(st[r], t[r], red[reduce16_lane(r)]);
      softmax_scale_acc(acc + r * Dv, Dv, t[r].alpha);
    }
  }

  /// acc[m][0, Dv) += sum over the tile's 64 keys of p[m][c] · v[c][0, Dv) for rows m < M: p
  /// bf16 rows ldp elements apart, vp as fia_pack_values_bf16 packs it, Dv a multiple of 16, acc
  /// rows Dv floats apart. The rows past M are other rows' (fia_task_body's dot_rows): a last
  /// block of fewer than 16 rows goes through 16-row staging copies (pv_tail), so nothing outside
  /// [0, M) is read or written. Tiles: 0-1 the probabilities of keys 0-31 and 32-63, 2-3 two
  /// 16-channel accumulator blocks, 4-7 their value operands (pairs 0-15 and 16-31).
  static void pv(const uint16_t* p, int64_t ldp, const uint16_t* vp, int64_t Dv, float* acc,
                 int64_t M) {
    const ptrdiff_t ps = ldp * 2, as = Dv * 4, vs = Dv * 4;
    const uint16_t* v1 = vp + 16 * Dv * 2;  // pairs 16-31
    const int64_t whole = M / amx::kTileRows * amx::kTileRows;
    if (whole < M) pv_tail(p + whole * ldp, ldp, vp, Dv, acc + whole * Dv, M - whole);
    for (int64_t m = 0; m < whole; m += amx::kTileRows) {
      Tiles::template load<0>(p + m * ldp, ps);
      Tiles::template load<1>(p + m * ldp + 32, ps);
      float* am = acc + m * Dv;
      int64_t x = 0;
      for (; x + 32 <= Dv; x += 32) {
        Tiles::template load<2>(am + x, as);
        Tiles::template load<4>(vp + 2 * x, vs);
        Tiles::template load<3>(am + x + 16, as);
        Tiles::template load<5>(vp + 2 * x + 32, vs);
        Tiles::template dpbf16ps<2, 0, 4>();
        Tiles::template load<6>(v1 + 2 * x, vs);
        Tiles::template dpbf16ps<3, 0, 5>();
        Tiles::template load<7>(v1 + 2 * x + 32, vs);
        Tiles::template dpbf16ps<2, 1, 6>();
        Tiles::template dpbf16ps<3, 1, 7>();
        Tiles::template store<2>(am + x, as);
        Tiles::template store<3>(am + x + 16, as);
      }
      if (x < Dv) {  // 16 channels left
        Tiles::template load<2>(am + x, as);
        Tiles::template load<4>(vp + 2 * x, vs);
        Tiles::template load<6>(v1 + 2 * x, vs);
        Tiles::template dpbf16ps<2, 0, 4>();
        Tiles::template dpbf16ps<2, 1, 6>();
        Tiles::template store<2>(am + x, as);
      }
    }
  }

  /// pv for r < 16 rows through staging copies of their probabilities and of each 16-channel
  /// block of their accumulators (the staged rows past r zero). Each element is still one row of
  /// P against one column of V: the same bits as in a whole block.
  static void pv_tail(const uint16_t* p, int64_t ldp, const uint16_t* vp, int64_t Dv, float* acc,
                      int64_t r) {
    alignas(64) uint16_t ps[amx::kTileRows][kFiaKeyTile] = {};
    alignas(64) float as[amx::kTileRows][16] = {};
    for (int64_t i = 0; i < r; ++i) __builtin_memcpy(ps[i], p + i * ldp, sizeof ps[i]);
    Tiles::template load<0>(ps[0], sizeof ps[0]);
    Tiles::template load<1>(ps[0] + 32, sizeof ps[0]);
    const uint16_t* v1 = vp + 16 * Dv * 2;
    for (int64_t x = 0; x < Dv; x += 16) {
      for (int64_t i = 0; i < r; ++i) __builtin_memcpy(as[i], acc + i * Dv + x, sizeof as[i]);
      Tiles::template load<2>(as[0], sizeof as[0]);
      Tiles::template load<4>(vp + 2 * x, Dv * 4);
      Tiles::template load<6>(v1 + 2 * x, Dv * 4);
      Tiles::template dpbf16ps<2, 0, 4>();
      Tiles::template dpbf16ps<2, 1, 6>();
      Tiles::template store<2>(as[0], sizeof as[0]);
      for (int64_t i = 0; i < r; ++i) __builtin_memcpy(acc + i * Dv + x, as[i], sizeof as[i]);
    }
  }
};
