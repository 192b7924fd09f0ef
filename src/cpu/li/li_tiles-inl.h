// The LightningIndexer's bf16 scorer on the matrix engine: score_rows_bf16 (li_kernel-inl.h) with
// the dot products of 16 keys x 16 heads on a tile. No include guard on purpose: li_kernel-inl.h
// includes it inside li_body when KVFLASH_LI_TILES is defined, in a translation unit compiled with
// the AMX flags that includes cpu/amx/amx_tile.hpp first (src/cpu/li/li_kernel_amx.cpp on the CPU's
// tiles, tests/support/li_emu_tiles_amx.cpp on the tests' software model of them).
//
// Per block of 16 keys, for each query row of the group: S = K · Q over the 128 channels, K the 16
// key rows (copied into contiguous scratch rows, zero past the last key) as the A operand, 32
// channels a tile, the query's pairs as stage_query_pairs lays them out (pair p of 16 heads in one
// 64-byte row) as the B operand; one accumulator tile per 16 heads holds a key's heads in a row,
// which is exactly the head vector fold_heads takes. So step 1 of li_kernel-inl.h's arithmetic
// becomes: bf16 products exact, summed in fp32 in the tile's order (tdpbf16ps; inputs and results
// below 2^-126 flushed to zero, as vdpbf16ps), steps 2 and 3 (ReLU, the weights, the head sum)
// stay the vector code's. Every element of S is one key row against one head column, so a key's
// score depends neither on the block it falls in nor on the keys beside it: equal keys score
// alike, and the bits depend neither on the thread count nor on the batch composition.

template <class Tiles>
struct LiTiles {
  /// Tiles 0-3 the scores of head vectors 0-3, 4 the key operand, 5-7 the query operands.
  static constexpr int kKeyTile = 4;

  /// s[j][0, 16 hv) = K_j · q_h for the 16 key rows of kb (128 bf16 each, contiguous), qp the
  /// query's pairs for hv head vectors (hp = 16 hv heads per pair row).
  template <int HV>
  static void dots(const uint16_t* kb, const uint16_t* qp, float* s) {
    constexpr int64_t hp = HV * 16;
    zero_scores<HV>(std::make_integer_sequence<int, HV>{});
    for (int64_t c = 0; c < kD / amx::kTileK; ++c) {
      Tiles::template load<kKeyTile>(kb + c * amx::kTileK, kD * 2);
      dot_chunk<HV>(qp + c * 16 * hp * 2, std::make_integer_sequence<int, HV>{});
    }
    store_scores<HV>(s, std::make_integer_sequence<int, HV>{});
  }

  template <int HV, int... V>
  static void zero_scores(std::integer_sequence<int, V...>) {
    (Tiles::template zero<V>(), ...);
  }
  // Head vector v: its 16 pairs x 16 heads of chunk c at qp + v * 32 (rows hp pairs apart).
  template <int HV, int... V>
  static void dot_chunk(const uint16_t* qp, std::integer_sequence<int, V...>) {
    constexpr ptrdiff_t stride = HV * 16 * 4;
    ((Tiles::template load<5 + V % 3>(qp + V * 32, stride),
      Tiles::template dpbf16ps<V, kKeyTile, 5 + V % 3>()),
     ...);
  }
  template <int HV, int... V>
  static void store_scores(float* s, std::integer_sequence<int, V...>) {
    (Tiles::template store<V>(s + V * 16, HV * 16 * 4), ...);
  }

  /// score_rows_bf16 on tiles: the same inputs, order keys and histograms.
  template <int count>
  static void score_rows_n(const LiParams& p, const LiData& d, const LiRowRef* rows,
                           const LiScratch* s) {
    for (int r = 0; r < count; ++r) {
      if (rows[r].stage) {
        stage_query_pairs(p, d, rows[r].row, reinterpret_cast<uint16_t*>(s[r].q));
        stage_weights(p, d, rows[r].row, s[r].w);
      }
      clear_hist(s[r].hist);
    }
    LiRowRef span = rows[0];
    span.j1 = group_end(rows, count);
    if (span.j0 >= span.j1) return;
    const int64_t hv = head_vectors(p.num_heads);
    const int tail = static_cast<int>(p.num_heads - (hv - 1) * kLanes);
    amx::BasicTileScope<Tiles> scope(amx::uniform_palette());
    uint16_t* kb = s[0].kb;                   // 16 contiguous key rows
    float* st = s[0].kt;                      // their scores: 16 keys x 16 hv heads
    kvflash::cpu::LiKeyCursor cur(p, d, span.batch, span.kv_first, span.j0);
    for (int64_t c0 = span.j0; c0 < span.j1; c0 += amx::kTileRows) {
      const int64_t n = span.j1 - c0 < amx::kTileRows ? span.j1 - c0 : amx::kTileRows;
      for (int64_t i = 0; i < n; ++i) {
        prefetch_key(p, d, span, c0 + i + kPrefetchAhead);
        const uint16_t* src = cur.next();
        if (p.k_sd == 1) {
          std::memcpy(kb + i * kD, src, kD * 2);
        } else {
          for (int64_t dd = 0; dd < kD; ++dd) kb[i * kD + dd] = src[dd * p.k_sd];
        }
      }
      if (n < amx::kTileRows) std::memset(kb + n * kD, 0, (amx::kTileRows - n) * kD * 2);
      for (int r = 0; r < count; ++r) {
        const int64_t e = c0 + n < rows[r].j1 ? c0 + n : rows[r].j1;
        if (e <= c0) continue;
        const uint16_t* qp = reinterpret_cast<const uint16_t*>(s[r].q);
        switch (hv) {
          case 1: dots<1>(kb, qp, st); break;
          case 2: dots<2>(kb, qp, st); break;
          case 3: dots<3>(kb, qp, st); break;
          default: dots<4>(kb, qp, st); break;
        }
        for (int64_t j = c0; j < e; ++j) {
          const float* sj = st + (j - c0) * hv * kLanes;
          Vec tv = vzero();
          for (int64_t v = 0; v < hv; ++v) {
            Vec x = vmax(vzero(), vload(sj + v * kLanes));
            if (v == hv - 1 && tail != kLanes) {
              x = vselect_lt(vload(kLaneIds), vset1(static_cast<float>(tail)), x, vzero());
            }
            tv = vfma(vload(s[r].w + v * kLanes), x, tv);
          }
          put_key(vreduce_add(tv), s[r].keys + j, s[r].hist);
        }
      }
    }
  }

  static void score_rows(const LiParams& p, const LiData& d, const LiRowRef* rows,
                         const LiScratch* s, int count) {
    static_assert(kvflash::cpu::kLiRowGroup == 2);
    if (count == 1) return score_rows_n<1>(p, d, rows, s);
    score_rows_n<2>(p, d, rows, s);
  }
};
