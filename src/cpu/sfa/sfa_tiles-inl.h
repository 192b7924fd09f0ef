// The matrix-engine half of the SFA task: gather, scores and P·V of process_tile
// (sfa_kernel-inl.h) on tiles. No include guard on purpose: sfa_kernel-inl.h includes it inside
// its ISA namespace where KVFLASH_SFA_TILES is defined, in a translation unit that includes
// cpu/amx/amx_kernels.hpp before the namespace and is compiled with the AMX flags
// (src/cpu/sfa/sfa_kernel_amx.cpp on the CPU's tiles, tests/support/sfa_emu_tiles_amx.cpp on the
// tests' software model of them).
//
// Written once against a tile-operations type (cpu/amx/amx_tile.hpp), so the code the tests check
// on the model is the code the hardware runs. Per task (query row, heads [0, nh)) and tile of
// kSfaTile selected positions:
//   - the task's queries (fp32 in the scratch) are packed once, in passes of m heads, as the B
//     operand in bf16 pieces that sum to them exactly (bf16 1 piece, fp16 2);
//   - a task of one pass over bf16 rows of contiguous channels reads each selected latent (512) +
//     rope (64) row once for its scores, so it stages them 16 keys x 32 channels at a time into a
//     1 KiB tile that stays in L1 (score_rows_direct); copying the whole tile's rows first (72 KiB,
//     more than L1) and reading them back cost the 16-head shard about a fifth of its time
//     (docs/perf-log.md, "SFA 16-head shard on AMX");
//   - otherwise the tile's rows are gathered ONCE for all nh heads into contiguous 576-channel rows
//     (the scratch's kt, read as bf16 bits): bf16 rows as stored, fp16 rows split into 2 exact
//     bf16 planes, so no pass of heads re-splits them (amx::scores_split); every pass scores the
//     same gathered rows (bf16: scores_bf16_32, 32 keys on two accumulators), and the key-major
//     score tile is transposed and scaled into s[h][t];
//   - the vector body takes over for the online softmax (fold_tile), so the non-finite rules are
//     the other ISAs' (core/online_softmax.hpp);
//   - P·V: each block of 32 value rows is packed to VNNI pairs once (from the cache, fp16 in 2
//     exact pieces) and used by every pass, P in kProbPieces bf16 pieces (exact;
//     pack_probs_avx512), accumulated on the tiles into the scratch's fp32 accumulators (passes of
//     16 bf16 heads: every block of the tile at once, amx::pv_accumulate_heads16); a block holding
//     an infinite value runs on the vector FMAs instead (pv_rows; amx::pack_value_rows says why).
// A task of nh heads goes through passes of m = ceil(nh / passes) heads; the last pass starts at
// nh - m, so it may repeat heads of the one before: their scores are not copied twice, and their
// probability rows are zero in its P·V (adding +0.0 leaves an accumulator as it is). A head's bits
// depend neither on the pass size nor on its place in a pass (tdpbf16ps computes each element alike
// whatever the tile shape: docs/perf-log.md, round 3), so neither the thread count nor the head
// blocking changes them.

/// The most query heads of one SFA task (validation: N1 is at most 128).
inline constexpr int64_t kSfaMaxHeads = 128;

/// The matrix engine for run_one. Tiles: the tile operations (amx::HwTiles, or the tests' model);
/// kHeads: the most query heads of one tile pass (amx::kMaxHeads on the CPU; the tests lower it
/// to check that the bits do not move).
template <class Tiles, int kHeads = kvflash::cpu::amx::kMaxHeads>
struct TileEngine {
  static_assert(1 <= kHeads && kHeads <= kvflash::cpu::amx::kMaxHeads,
                "a tile pass holds 1..16 heads");
  static constexpr bool kOnTiles = true;

  /// Tile passes for a task of nh heads, and the heads of each (all passes the same size, so one
  /// tile configuration serves the whole task).
  static constexpr int64_t passes(int64_t nh) { return (nh + kHeads - 1) / kHeads; }
  static constexpr int64_t pass_heads(int64_t nh) { return (nh + passes(nh) - 1) / passes(nh); }
  /// Packed query heads a task holds at most, over every head count.
  static constexpr int64_t max_packed_heads() {
    int64_t most = 0;
    for (int64_t nh = 1; nh <= kSfaMaxHeads; ++nh) {
      const int64_t heads = passes(nh) * pass_heads(nh);
      most = heads > most ? heads : most;
    }
    return most;
  }

  /// The tile configuration of a task (loaded at its start, released at its end).
  struct Scope : kvflash::cpu::amx::BasicTileScope<Tiles> {
    explicit Scope(int64_t nh)
        : kvflash::cpu::amx::BasicTileScope<Tiles>(
              kvflash::cpu::amx::decode_palette(static_cast<int>(pass_heads(nh)))) {}
  };
};

template <class Tiles, int kHeads>
class TileTask<TileEngine<Tiles, kHeads>> {
  using Engine = TileEngine<Tiles, kHeads>;
  static constexpr int64_t kTile = kvflash::cpu::kSfaTile;
  // Keys of one P·V block (the K dimension of a tdpbf16ps with keys in pairs).
  static constexpr int64_t kPvKeys = 2 * kvflash::cpu::amx::kTileRows;
  // Pieces of the fp32 probabilities: three make each product exact (two would leave 2^-16 of
  // each weight).
  static constexpr int kProbPieces = kvflash::cpu::amx::kMaxPieces;
  static constexpr size_t kQueryElems =
      static_cast<size_t>(Engine::max_packed_heads()) *
      kvflash::cpu::amx::query_pack_size(1, static_cast<int>(kQk), 2);
  static_assert(kTile % kPvKeys == 0);
  // pv_tile16 packs every block's bf16 values at once into the scratch's vt.
  static_assert(kTile / kPvKeys *
                    kvflash::cpu::amx::value_pack_size(static_cast<int>(kNope),
                                                       kvflash::cpu::amx::KvType::kBf16) *
                    2 <=
                kTile * kNope * 4);
  // The scratch's kt (kSfaTile x 576 fp32) holds the two bf16 planes of a tile's fp16 rows, and
  // its vt (kSfaTile x 512 fp32) one block's packed values followed by the fp32 rows of a block
  // that falls back to the FMAs.
  static_assert(2 * kTile * kQk * 2 <= kTile * kQk * 4);
  static_assert(kvflash::cpu::amx::value_pack_size(static_cast<int>(kNope),
                                                   kvflash::cpu::amx::KvType::kFp16) *
                        2 +
                    kPvKeys * kNope * 4 <=
                kTile * kNope * 4);

 public:
  // Packs the queries of the task's nh heads (fp32 in w.q) for every pass.
  void init(const SfaProblem& p, int64_t nh, const Scratch& w) {
    fp16_ = p.dtype == DType::kFloat16;
    pieces_ = fp16_ ? 2 : 1;
    nh_ = nh;
    passes_ = Engine::passes(nh);
    m_ = static_cast<int>(Engine::pass_heads(nh));
    pass_elems_ = kvflash::cpu::amx::query_pack_size(m_, static_cast<int>(kQk), pieces_);
    std::memset(st_, 0, sizeof(st_));  // the transpose reads whole 16-key blocks
    for (int64_t b = 0; b < passes_; ++b) {
      pack_query_f32_avx512(w.q + pass_start(b) * kQk, kQk, m_, static_cast<int>(kQk), pieces_,
                            qpack(b));
    }
  }

  // Gathers the n selected positions' K rows (latent then rope) as bf16 rows of 576 channels in
  // w.kt (fp16: split into the planes hi, lo) and notes their V rows, prefetching the rows of the
  // next tile (next, n_next of them) as gather_tile does. A task of one pass over bf16 rows of
  // contiguous channels copies nothing here: its scores read each row once, so they stage the
  // rows a 16 x 32-channel block at a time (score_rows_direct) instead of copying all 64 rows
  // (72 KiB, more than L1) to read them back.
  void gather(const SfaProblem& p, const SfaData& d, int64_t b, const int64_t* pos, int64_t n,
              const int64_t* next, int64_t n_next, const Scratch& w) {
    const int64_t rows = n > n_next ? n : n_next;
    uint16_t* hi = reinterpret_cast<uint16_t*>(w.kt);
    uint16_t* lo = hi + kTile * kQk;
    direct_ = !fp16_ && passes_ == 1 && p.k.s_dim == 1 && p.k_rope.s_dim == 1;
    for (int64_t t = 0; t < rows; ++t) {
      if (t < n_next) prefetch_position(p, d, b, next[t]);
      if (t >= n) continue;
      const int64_t j = pos[t];
      const void* k = kv_row(p, d, d.k, p.k, b, j);
      const void* rope = kv_row(p, d, d.k_rope, p.k_rope, b, j);
      if (direct_) {
        krow_[t] = static_cast<const uint16_t*>(k);
        rrow_[t] = static_cast<const uint16_t*>(rope);
      } else {
        copy_row(k, p.k.s_dim, kNope, hi + t * kQk, lo + t * kQk);
        copy_row(rope, p.k_rope.s_dim, kRope, hi + t * kQk + kNope, lo + t * kQk + kNope);
      }
      vrow_[t] = d.v_is_k ? k : kv_row(p, d, d.v, p.v, b, j);
    }
    v_sdim_ = d.v_is_k ? p.k.s_dim : p.v.s_dim;
  }

  // Channels [32c, 32c + 32) of keys [j0, j0 + rows) (krow_, rrow_) into a 16 x 32 bf16 staging
  // tile, zero rows past `rows` (their scores land past n, where fold_tile pads).
  void stage_rows(int64_t j0, int64_t rows, int c, uint16_t* stage) const {
    constexpr int kLatentChunks = static_cast<int>(kNope / amx::kTileK);
    for (int64_t r = 0; r < amx::kTileRows; ++r) {
      __m512i x = _mm512_setzero_si512();
      if (r < rows) {
        x = _mm512_loadu_si512(c < kLatentChunks ? krow_[j0 + r] + c * amx::kTileK
                                                 : rrow_[j0 + r] + (c - kLatentChunks) * amx::kTileK);
      }
      _mm512_store_si512(stage + r * amx::kTileK, x);
    }
  }

  // scores_bf16_32 (amx::scores' bits) of the n keys of krow_ and rrow_ for the task's one pass,
  // 32 keys at a time, the A operands staged from the rows (stage_rows): key block 0 in kTileS0,
  // block 1 in kTileS1, chunk by chunk from zero.
  void score_rows_direct(int64_t n) {
    constexpr int kChunks = amx::num_chunks(static_cast<int>(kQk));
    constexpr ptrdiff_t kRowBytes = amx::kMaxHeads * sizeof(float);
    const ptrdiff_t q_tile = static_cast<ptrdiff_t>(amx::kTileRows) * 2 * m_;  // elements
    alignas(64) uint16_t stage0[amx::kTileRows * amx::kTileK];
    alignas(64) uint16_t stage1[amx::kTileRows * amx::kTileK];
    for (int64_t j = 0; j < n; j += 2 * amx::kTileRows) {
      const int64_t rows0 = n - j < amx::kTileRows ? n - j : amx::kTileRows;
      const int64_t rows1 = n - j - rows0 < amx::kTileRows ? n - j - rows0 : amx::kTileRows;
      Tiles::template zero<amx::kTileS0>();
      Tiles::template zero<amx::kTileS1>();
      for (int c = 0; c < kChunks; ++c) {
        stage_rows(j, rows0, c, stage0);
        Tiles::template load<amx::kTileK0>(stage0, amx::kTileRowBytes);
        Tiles::template load<amx::kTileQ>(qpack(0) + c * q_tile, 4 * m_);
        Tiles::template dpbf16ps<amx::kTileS0, amx::kTileK0, amx::kTileQ>();
        if (rows1 > 0) {
          stage_rows(j + amx::kTileRows, rows1, c, stage1);
          Tiles::template load<amx::kTileK1>(stage1, amx::kTileRowBytes);
          Tiles::template dpbf16ps<amx::kTileS1, amx::kTileK1, amx::kTileQ>();
        }
      }
      Tiles::template store<amx::kTileS0>(st_ + j * amx::kMaxHeads, kRowBytes);
      if (rows1 > 0) {
        Tiles::template store<amx::kTileS1>(st_ + (j + amx::kTileRows) * amx::kMaxHeads, kRowBytes);
      }
    }
  }

  // Scores of every head against the n gathered rows into w.s (scaled), pass by pass. bf16 rows
  // go 32 keys at a time through amx_avx512-inl.h's scores_bf16_32 (amx::scores' bits, two
  // interleaved accumulator chains).
  void scores(const SfaProblem& p, int64_t, int64_t n, const Scratch& w) {
    const uint16_t* hi = reinterpret_cast<const uint16_t*>(w.kt);
    const uint16_t* lo = hi + kTile * kQk;
    constexpr int kStS = amx::kMaxHeads;
    static_assert(kQk % amx::kTileK == 0);
    const int kn = static_cast<int>(n);
    const int64_t pairs = n / (2 * amx::kTileRows);
    for (int64_t b = 0; b < passes_; ++b) {
      if (direct_) {
        score_rows_direct(n);
      } else if (fp16_) {
        amx::scores_split<Tiles>(hi, lo, kQk, kn, static_cast<int>(kQk), qpack(b), m_, pieces_,
                                 st_, kStS);
      } else {
        for (int64_t j2 = 0; j2 < pairs; ++j2) {
          const int64_t j = j2 * 2 * amx::kTileRows;
          scores_bf16_32<Tiles>(reinterpret_cast<const std::byte*>(hi + j * kQk), kQk * 2,
                                static_cast<int>(kQk), qpack(b), m_, st_ + j * kStS,
                                [](int, int) {});
        }
        const int64_t done = pairs * 2 * amx::kTileRows;
        if (done < n) {
          amx::scores<Tiles, amx::KvType::kBf16>(hi + done * kQk, kQk, kn - static_cast<int>(done),
                                                 static_cast<int>(kQk), qpack(b), m_, pieces_,
                                                 st_ + done * kStS, kStS);
        }
      }
      // Key-major to s[h][t], 16 keys at a time, then scaled (the same product as element by
      // element). Rows of st_ past n (zeros or an earlier tile's) land in s[h][n, 16 ceil(n/16)),
      // which fold_tile pads with -inf before anything reads them.
      const int64_t g0 = pass_start(b);
      const int64_t padded = (n + amx::kTileRows - 1) / amx::kTileRows * amx::kTileRows;
      for (int64_t j = 0; j < n; j += amx::kTileRows) {
        transpose16_rows(st_ + j * kStS, kStS, b * m_ - g0, m_, w.s + g0 * kTile + j, kTile);
      }
      const __m512 scale = _mm512_set1_ps(p.scale);
      for (int64_t i = b * m_ - g0; i < m_; ++i) {
        float* s = w.s + (g0 + i) * kTile;
        for (int64_t t = 0; t < padded; t += 16) {
          _mm512_storeu_ps(s + t, _mm512_mul_ps(_mm512_loadu_ps(s + t), scale));
        }
      }
    }
  }

  // acc[h] += sum over the tile's n rows of P[h][t] * V_t for every head (P: w.s after fold_tile).
  // Passes of 16 heads with bf16 values take the whole tile at once (pv_tile16); otherwise one
  // block of kPvKeys rows at a time.
  void pv(const SfaProblem& p, const SfaData& d, int64_t b, int64_t nh, const int64_t* pos,
          int64_t n, const Scratch& w) {
    if (!fp16_ && m_ == amx::kMaxHeads && pv_tile16(n, w)) return;
    pv_blocks(p, d, b, nh, pos, n, w);
  }

  // pv for passes of amx::kMaxHeads heads and bf16 values: every block of the tile packed once
  // (values, then each pass's probabilities) and accumulated by amx::pv_accumulate_heads16 (the
  // same bits as pv_blocks). false, with nothing accumulated, when a block holds an infinite value
  // or its values are not contiguous: pv_blocks then runs the tile.
  bool pv_tile16(int64_t n, const Scratch& w) {
    if (v_sdim_ != 1) return false;
    constexpr size_t kVBlock = amx::value_pack_size(static_cast<int>(kNope), amx::KvType::kBf16);
    constexpr size_t kPBlock = amx::prob_pack_size(amx::kMaxHeads, kProbPieces);
    uint16_t* vpack = reinterpret_cast<uint16_t*>(w.vt);
    const int blocks = static_cast<int>((n + kPvKeys - 1) / kPvKeys);
    for (int k = 0; k < blocks; ++k) {
      const int64_t k0 = k * kPvKeys;
      const int nb = static_cast<int>(n - k0 < kPvKeys ? n - k0 : kPvKeys);
      const uint16_t* rows[kPvKeys];
      for (int i = 0; i < nb; ++i) rows[i] = static_cast<const uint16_t*>(vrow_[k0 + i]);
      if (!amx::pack_value_rows_bf16_avx512(rows, nb, static_cast<int>(kNope),
                                            vpack + k * kVBlock)) {
        return false;
      }
    }
    for (int64_t b = 0; b < passes_; ++b) {
      const int64_t g0 = pass_start(b);
      for (int k = 0; k < blocks; ++k) {
        const int64_t k0 = k * kPvKeys;
        const int nb = static_cast<int>(n - k0 < kPvKeys ? n - k0 : kPvKeys);
        uint16_t* pk = ppack_ + k * kPBlock;
        pack_probs_avx512(w.s + g0 * kTile + k0, kTile, m_, nb, kProbPieces, pk);
        zero_repeated_heads(b, g0, pk);
      }
      amx::pv_accumulate_heads16<Tiles>(ppack_, blocks, vpack, static_cast<int>(kNope),
                                        w.acc + g0 * kNope, kNope);
    }
    return true;
  }

  // pv one block of kPvKeys rows at a time.
  void pv_blocks(const SfaProblem& p, const SfaData&, int64_t, int64_t nh, const int64_t*,
                 int64_t n, const Scratch& w) {
    uint16_t* vpack = reinterpret_cast<uint16_t*>(w.vt);
    float* vf = w.vt + amx::value_pack_size(static_cast<int>(kNope), amx::KvType::kFp16) / 2;
    const amx::KvType vt = fp16_ ? amx::KvType::kFp16 : amx::KvType::kBf16;
    for (int64_t k0 = 0; k0 < n; k0 += kPvKeys) {
      const int nb = static_cast<int>(n - k0 < kPvKeys ? n - k0 : kPvKeys);
      bool finite;
      if (fp16_) {
        finite = amx::pack_value_rows<amx::KvType::kFp16>(vrow_ + k0, v_sdim_, nb,
                                                          static_cast<int>(kNope), vpack);
      } else if (v_sdim_ == 1) {
        const uint16_t* rows[kPvKeys];
        for (int i = 0; i < nb; ++i) rows[i] = static_cast<const uint16_t*>(vrow_[k0 + i]);
        finite = amx::pack_value_rows_bf16_avx512(rows, nb, static_cast<int>(kNope), vpack);
      } else {
        finite = amx::pack_value_rows<amx::KvType::kBf16>(vrow_ + k0, v_sdim_, nb,
                                                          static_cast<int>(kNope), vpack);
      }
      if (!finite) {
        for (int i = 0; i < nb; ++i) {
          convert_row(vrow_[k0 + i], p.dtype, v_sdim_, kNope, vf + i * kNope);
        }
        pv_rows(w.s + k0, nh, vf, kNope, nb, w.acc);
        continue;
      }
      for (int64_t b = 0; b < passes_; ++b) {
        const int64_t g0 = pass_start(b);
        pack_probs_avx512(w.s + g0 * kTile + k0, kTile, m_, nb, kProbPieces, ppack_);
        zero_repeated_heads(b, g0, ppack_);
        amx::pv_accumulate<Tiles>(ppack_, m_, kProbPieces, vpack, amx::kv_pieces(vt),
                                  static_cast<int>(kNope), w.acc + g0 * kNope, kNope);
      }
    }
  }

 private:
  // Heads of pass b (first head g0) that the pass before accumulated already: zero weights in the
  // packed probabilities pk of one block.
  void zero_repeated_heads(int64_t b, int64_t g0, uint16_t* pk) const {
    for (int64_t i = 0; i < b * m_ - g0; ++i) {
      for (int q = 0; q < kProbPieces; ++q) {
        std::memset(pk + (q * m_ + i) * amx::kTileK, 0, amx::kTileRowBytes);
      }
    }
  }
  // The first head of pass b (the last pass ends at the task's last head).
  int64_t pass_start(int64_t b) const { return b * m_ < nh_ - m_ ? b * m_ : nh_ - m_; }
  uint16_t* qpack(int64_t b) { return qpack_ + static_cast<size_t>(b) * pass_elems_; }
  // n elements at base (stride elements apart) as bf16: bf16 bits as stored into hi; fp16 values
  // split into hi + lo (exact, amx::split_to_bf16).
  void copy_row(const void* base, int64_t stride, int64_t n, uint16_t* hi, uint16_t* lo) const {
    const uint16_t* src = static_cast<const uint16_t*>(base);
    if (!fp16_) {
      if (stride == 1) {
        std::memcpy(hi, src, static_cast<size_t>(n) * 2);
      } else {
        for (int64_t x = 0; x < n; ++x) hi[x] = src[x * stride];
      }
      return;
    }
    uint16_t piece[2];
    for (int64_t x = 0; x < n; ++x) {
      kvflash::cpu::amx::split_to_bf16(kvflash::core::fp16_to_float(src[x * stride]), 2, piece);
      hi[x] = piece[0];
      lo[x] = piece[1];
    }
  }

  bool fp16_ = false;
  int pieces_ = 1, m_ = 1;
  int64_t nh_ = 0, passes_ = 0, v_sdim_ = 1;
  size_t pass_elems_ = 0;
  const void* vrow_[kvflash::cpu::kSfaTile];
  // gather's row addresses of a direct task (latent, rope), and whether the task is one.
  const uint16_t* krow_[kvflash::cpu::kSfaTile];
  const uint16_t* rrow_[kvflash::cpu::kSfaTile];
  bool direct_ = false;
  alignas(64) float st_[kvflash::cpu::kSfaTile * kvflash::cpu::amx::kMaxHeads];  // key-major
  // One block's packed probabilities per kPvKeys keys of the tile (pv_tile16 packs them all).
  alignas(64) uint16_t ppack_[kTile / kPvKeys * kvflash::cpu::amx::prob_pack_size(
                                                     kvflash::cpu::amx::kMaxHeads, kProbPieces)];
  alignas(64) uint16_t qpack_[kQueryElems];
};
