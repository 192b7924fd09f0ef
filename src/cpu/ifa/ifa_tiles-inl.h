// The matrix-engine half of the IFA chunk task: scores and (optionally) P·V of chunk_impl
// (ifa_chunk_task-inl.h) on tiles. No include guard on purpose: ifa_chunk_task-inl.h includes it
// inside its ISA namespace where KVFLASH_IFA_TILES is defined, in a translation unit that includes
// cpu/amx/amx_kernels.hpp before the namespace and is compiled with the AMX flags
// (src/cpu/ifa/ifa_kernel_amx.cpp on the CPU's tiles, tests/support/ifa_emu_tiles_amx.cpp on the
// tests' software model of them).
//
// Written once against a tile-operations type (cpu/amx/amx_tile.hpp), so the code the tests check
// on the model is the code the hardware runs. Per tile of kIfaTile positions and kv head:
//   - QK: bf16 K rows straight from the cache as the A operand (runs of equally spaced rows, which
//     a paged cache breaks at block edges; rows of strided channels are first copied, unchanged,
//     into a contiguous staging buffer); int8 and fp16 rows of contiguous channels converted once
//     per tile into bf16 rows on AVX-512 (amx::widen_rows_int8_avx512,
//     amx::split_rows_fp16_avx512), strided ones staged by amx::scores; the group's queries packed
//     once per task as the B operand in bf16 pieces that sum to them exactly (bf16 query 1 piece,
//     fp16 2, int8 KV's scaled fp32 query 3), so every product is exact and only the fp32 sums
//     round (amx::scores; a whole 32-row run of bf16 rows goes through scores_bf16_32, the same
//     sums with two accumulators);
//   - the key-major score tile is transposed into s[g][i] (transpose16_rows), and the vector
//     body takes over: int8 bias and exact_scores, scale, pse, mask and the online softmax fold
//     (KvHeadWork::fold), so the non-finite rules are the other ISAs' (core/online_softmax.hpp);
//   - P·V (when the engine says so): V packed to VNNI pairs once per kv head (int8 widened to bf16
//     exactly, fp16 in 2 exact pieces; on AVX-512 for contiguous channels, amx_kernels.hpp; the
//     int8 scale and offset stay folded into the accumulator, KvHeadWork::finish), P in kProbPieces
//     bf16 pieces (exact; pack_probs_avx512, amx::pack_probs bit for bit), accumulated on the tiles
//     into the slot's fp32 accumulators; a block holding an infinite value runs on the vector FMAs
//     instead (amx::pack_value_rows says why). Otherwise P·V is KvHeadWork::pv_block_at, the vector
//     FMAs.
// A group of G heads goes through passes of m = ceil(G / passes) heads; the last pass starts at
// G - m, so it may repeat heads of the one before: their scores are not copied twice, and their
// probability rows are zero in its P·V (adding +0.0 leaves an accumulator as it is; a NaN value
// made those rows NaN already). A head's bits depend neither on the pass size nor on its place in a
// pass (tdpbf16ps computes each element alike whatever the tile shape: docs/perf-log.md, round 3;
// amx::scores sums in a fixed order), so neither the thread count nor the head blocking changes
// them. The rows KvHeadWork::prefetch_while_scoring and prefetch_while_accumulating name are
// prefetched a slice at a time between the tile steps of this one (score_tile, pv_tile), never in
// one burst.
//
// Where a step's time goes (G = 8, D = 128, measured on the first AMX machine: docs/perf-log.md,
// "IFA decode on AMX, round 3"): about 1.2 us of a core per kv head and 32 positions even with the
// cache in L2, spread over the V re-layout (pack_value_rows_bf16_avx512), the fold, the tile
// operations and the probability split; no part dominates. Interleaving two accumulator chains
// in P·V, keeping the probability pieces resident on a P·V palette, double-buffering the QK
// operands, and packing a head's V rows and weights ahead of the previous head's products left the
// time unchanged, so the order of the tile operations below is the plain one.

// The AVX-512 helpers around the tile steps (split_lanes_to_bf16, pack_query_f32_avx512,
// pack_probs_avx512, transpose16_rows, scores_bf16_32) are cpu/amx/amx_avx512-inl.h's, which
// ifa_chunk_task-inl.h includes just before this file; SFA's tile half
// (src/cpu/sfa/sfa_tiles-inl.h) uses the same ones.

// amx::pv_accumulate with between(g, groups) called after each channel group's products (the
// same tile operations in the same order, so the same bits).
template <class Tiles, class Between>
inline void pv_accumulate_between(const uint16_t* ppack, int m, int ppieces, const uint16_t* vpack,
                                  int vpieces, int d, float* o, ptrdiff_t o_stride,
                                  Between between) {
  const int groups = amx::num_groups(d);
  const ptrdiff_t o_bytes = o_stride * static_cast<ptrdiff_t>(sizeof(float));
  for (int g = 0; g < groups; ++g) {
    Tiles::template load<amx::kTileO>(o + 16 * g, o_bytes);
    for (int vp = 0; vp < vpieces; ++vp) {
      Tiles::template load<amx::kTileV>(
          vpack + (static_cast<ptrdiff_t>(vp) * groups + g) * amx::kTileRows * amx::kTileK,
          amx::kTileRowBytes);
      for (int pp = 0; pp < ppieces; ++pp) {
        Tiles::template load<amx::kTileP>(ppack + static_cast<ptrdiff_t>(pp) * m * amx::kTileK,
                                          amx::kTileRowBytes);
        Tiles::template dpbf16ps<amx::kTileO, amx::kTileP, amx::kTileV>();
      }
    }
    Tiles::template store<amx::kTileO>(o + 16 * g, o_bytes);
    between(g, groups);
  }
}

/// The matrix engine for chunk_impl. Tiles: the tile operations (amx::HwTiles, or the tests'
/// model); kPv: P·V on tiles (else on the vector FMAs); kHeads: the most query heads of one tile
/// pass (amx::kMaxHeads on the CPU; the tests lower it to check that the bits do not move).
template <class Tiles, bool kPv, int kHeads = amx::kMaxHeads>
struct TileEngine {
  static_assert(1 <= kHeads && kHeads <= amx::kMaxHeads, "a tile pass holds 1..16 heads");
  static constexpr bool kOnTiles = true;
  static constexpr bool kPvOnTiles = kPv;

  /// Tile passes for a group of G heads, and the heads of each (all passes the same size, so one
  /// tile configuration serves the whole task).
  static constexpr int64_t passes(int64_t group) { return (group + kHeads - 1) / kHeads; }
  static constexpr int64_t pass_heads(int64_t group) {
    return (group + passes(group) - 1) / passes(group);
  }
  /// Packed query heads a task holds at most: kv heads per task (ifa_schedule: at most
  /// kIfaMaxGroup / G) x passes x heads per pass, over every group size.
  static constexpr int64_t max_packed_heads() {
    int64_t most = 0;
    for (int64_t g = 1; g <= kIfaMaxGroup; ++g) {
      const int64_t heads = kIfaMaxGroup / g * passes(g) * pass_heads(g);
      most = heads > most ? heads : most;
    }
    return most;
  }

  /// The tile configuration of a task (loaded at its start, released at its end).
  struct Scope : amx::BasicTileScope<Tiles> {
    explicit Scope(int64_t group)
        : amx::BasicTileScope<Tiles>(amx::decode_palette(static_cast<int>(pass_heads(group)))) {}
  };
};

template <class Tiles, bool kPv, int kHeads, KvKind kKind>
class TileChunk<TileEngine<Tiles, kPv, kHeads>, kKind> {
  using Engine = TileEngine<Tiles, kPv, kHeads>;
  static constexpr amx::KvType kType = kKind == KvKind::kInt8   ? amx::KvType::kInt8
                                       : kKind == KvKind::kBf16 ? amx::KvType::kBf16
                                                                : amx::KvType::kFp16;
  // Pieces of the query: a bf16 query (bf16 KV) is one piece, an fp16 query (fp16 KV) two, int8
  // KV's query scaled by the antiquant scale (fp32) three; all exact. Validation pairs a bf16 or
  // fp16 cache with a query of its own type.
  static constexpr int kQueryPieces = kKind == KvKind::kInt8 ? 3 : (kKind == KvKind::kBf16 ? 1 : 2);
  // Pieces of the fp32 probabilities: three make each product exact (two would leave 2^-16 of
  // each weight, a quarter of the fp32 output's tolerance).
  static constexpr int kProbPieces = amx::kMaxPieces;
  static constexpr int64_t kEs = kv_elem_size<kKind>();
  static constexpr size_t kPackedHeads = static_cast<size_t>(Engine::max_packed_heads());
  static constexpr size_t kQueryElems =
      kPackedHeads * amx::query_pack_size(1, kIfaMaxHeadDim, kQueryPieces);

 public:
  // The packed queries of the task's kv heads (work[0, num_kv), each initialised: the slot holds
  // its fp32 queries).
  void init(const IfaProblem& p, const IfaLayout& l, const KvHeadWork<kKind>* work,
            int64_t num_kv) {
    group_ = p.group;
    d_ = static_cast<int>(p.head_dim);
    hf_ = l.head_floats;
    passes_ = Engine::passes(group_);
    m_ = static_cast<int>(Engine::pass_heads(group_));
    pass_elems_ = amx::query_pack_size(m_, d_, kQueryPieces);
    std::memset(st_, 0, sizeof(st_));  // the transpose reads whole 16-key blocks
    assert(static_cast<size_t>(num_kv * passes_) * pass_elems_ <= kQueryElems);
    for (int64_t k = 0; k < num_kv; ++k) {
      for (int64_t b = 0; b < passes_; ++b) {
        const float* q = work[k].slot_ + pass_start(b) * hf_ + l.dp;
        pack_query_f32_avx512(q, hf_, m_, d_, kQueryPieces, qpack(k, b));
      }
    }
  }

  // Scores of the tile's rows against every head of kv head k (work w) into s[g][0, rows.n).
  void score_tile(int64_t k, const KvHeadWork<kKind>& w, const TileRows& rows,
                  float (*s)[kIfaTile]) {
    const int64_t n = rows.n;
    // The rows prefetched while scoring (the next tile's K rows, or this tile's V rows across the
    // streams), a slice after each 32-channel step of scores_bf16_32 (spread out:
    // issued all at once they fill the miss queues and stall the tile instructions behind them,
    // measured 1.2-1.3 times slower: docs/perf-log.md, "IFA decode on AMX (2026-12-05)"); after
    // the scores where another kernel scores the tile.
    int64_t prefetched = 0;
    const int64_t to_prefetch = w.across_ ? n : rows.n_next;  // see prefetch_while_scoring
    const auto prefetch_slice = [&](int64_t step, int64_t steps) {
      const int64_t upto = to_prefetch * (step + 1) / steps;
      for (; prefetched < upto; ++prefetched) w.prefetch_while_scoring(rows, prefetched);
    };
    // int8 and fp16 rows of contiguous channels: converted once for every pass into bf16 rows
    // (int8 widened, fp16 split in 2 pieces; what amx::scores<Tiles, kType> would stage, element
    // for element, a 16 x 32 block at a time and once per pass), scored as bf16 below.
    const bool widened = kKind != KvKind::kBf16 && w.k_sdim_ == 1;
    if (widened) widen_k(w, rows, prefetch_slice);
    // Runs of rows a tile operand can take as they are: [start, start + len) at one stride.
    int64_t run_start[kIfaTile], run_len[kIfaTile];
    ptrdiff_t run_stride[kIfaTile];
    int64_t runs = 0;
    for (int64_t j = 0; j < n && !widened;) {
      int64_t len = 1;
      ptrdiff_t stride = 0;
      if (w.k_sdim_ != 1) {
        len = min_i64(amx::kTileRows, n - j);  // staged, amx::kTileRows rows at a time
      } else if (j + 1 < n) {
        stride = rows.k[j + 1] - rows.k[j];
        len = 2;
        while (j + len < n && rows.k[j + len] - rows.k[j + len - 1] == stride) ++len;
      }
      run_start[runs] = j, run_len[runs] = len, run_stride[runs] = stride / kEs;
      ++runs;
      j += len;
    }
    for (int64_t b = 0; b < passes_; ++b) {
      const uint16_t* qp = qpack(k, b);
      if (widened && kKind == KvKind::kInt8) {
        amx::scores<Tiles, amx::KvType::kBf16>(kwide_, d_, static_cast<int>(n), d_, qp, m_,
                                               kQueryPieces, st_, amx::kMaxHeads);
      } else if (widened) {
        amx::scores_split<Tiles>(kwide_, kwide_ + kWidePlane, d_, static_cast<int>(n), d_, qp, m_,
                                 kQueryPieces, st_, amx::kMaxHeads);
      }
      for (int64_t r = 0; r < runs; ++r) {
        const int64_t j = run_start[r];
        const void* k0 = rows.k[j] + w.k_head_off_;
        ptrdiff_t stride = run_stride[r];
        if (w.k_sdim_ != 1) {
          stage_rows(rows, j, run_len[r], w.k_head_off_, w.k_sdim_);
          k0 = kstage_;
          stride = d_;
        }
        if (kKind == KvKind::kBf16 && run_len[r] == 2 * amx::kTileRows && d_ % amx::kTileK == 0) {
          scores_bf16_32<Tiles>(static_cast<const std::byte*>(k0), stride * kEs, d_, qp, m_,
                                st_ + j * amx::kMaxHeads, [&](int c, int chunks) {
                                  if (b == 0 && runs == 1) prefetch_slice(c, chunks);
                                });
          continue;
        }
        amx::scores<Tiles, kType>(k0, stride, static_cast<int>(run_len[r]), d_, qp, m_,
                                  kQueryPieces, st_ + j * amx::kMaxHeads, amx::kMaxHeads);
      }
      prefetch_slice(0, 1);  // what the steps above left
      // Key-major to s[g][j], 16 keys at a time: rows of st_ past n (zeros or an earlier tile's)
      // land in s[g][n, 32), which KvHeadWork::fold pads and pack_probs_avx512 leaves out.
      const int64_t g0 = pass_start(b);
      for (int64_t j = 0; j < n; j += amx::kTileRows) {
        transpose16_rows(st_ + j * amx::kMaxHeads, amx::kMaxHeads, b * m_ - g0, m_, s[g0] + j,
                         kIfaTile);
      }
    }
  }

  // acc_g += sum over the tile's rows of p_g[i] * v_i for every head of the kv head of w (s: the
  // weights, KvHeadWork::fold). buf: KvHeadWork::pv_block_at's staging, for the FMA fallback.
  void pv_tile(const KvHeadWork<kKind>& w, const TileRows& rows, float (*s)[kIfaTile], float* buf) {
    const int n = static_cast<int>(rows.n);
    // The rows prefetched while accumulating (the next tile's V rows, or its K rows across the
    // streams): a slice after each channel group of P·V (see score_tile).
    int64_t prefetched = 0;
    const auto prefetch_slice = [&](int64_t step, int64_t steps) {
      const int64_t upto = rows.n_next * (step + 1) / steps;
      for (; prefetched < upto; ++prefetched) w.prefetch_while_accumulating(rows, prefetched);
    };
    bool finite;
    if (kKind == KvKind::kBf16 && w.v_sdim_ == 1) {
      const uint16_t* v[kIfaTile];
      for (int i = 0; i < n; ++i) {
        v[i] = reinterpret_cast<const uint16_t*>(rows.v[i] + w.v_head_off_);
      }
      finite = amx::pack_value_rows_bf16_avx512(v, n, d_, vpack_);
    } else if (kKind == KvKind::kInt8 && w.v_sdim_ == 1) {
      const int8_t* v[kIfaTile];
      for (int i = 0; i < n; ++i) v[i] = reinterpret_cast<const int8_t*>(rows.v[i] + w.v_head_off_);
      finite = amx::pack_value_rows_int8_avx512(v, n, d_, vpack_);
    } else if (kKind == KvKind::kFp16 && w.v_sdim_ == 1) {
      const uint16_t* v[kIfaTile];
      for (int i = 0; i < n; ++i) {
        v[i] = reinterpret_cast<const uint16_t*>(rows.v[i] + w.v_head_off_);
      }
      finite = amx::pack_value_rows_fp16_avx512(v, n, d_, vpack_);
    } else {
      const void* v[kIfaTile];
      for (int i = 0; i < n; ++i) v[i] = rows.v[i] + w.v_head_off_;
      finite = amx::pack_value_rows<kType>(v, w.v_sdim_, n, d_, vpack_);
    }
    if (!finite) {
      prefetch_slice(0, 1);
      for (int64_t i0 = 0; i0 < n; i0 += kPvRows) {
        w.pv_block_at(rows, i0, min_i64(kPvRows, n - i0), s, buf);
      }
      return;
    }
    for (int64_t b = 0; b < passes_; ++b) {
      const int64_t g0 = pass_start(b);
      pack_probs_avx512(s[g0], kIfaTile, m_, n, kProbPieces, ppack_);
      // Heads the pass before accumulated already: zero weights.
      for (int64_t i = 0; i < b * m_ - g0; ++i) {
        for (int q = 0; q < kProbPieces; ++q) {
          std::memset(ppack_ + (q * m_ + i) * amx::kTileK, 0, amx::kTileRowBytes);
        }
      }
      pv_accumulate_between<Tiles>(ppack_, m_, kProbPieces, vpack_, amx::kv_pieces(kType), d_,
                                   w.slot_ + g0 * hf_, hf_, [&](int g, int groups) {
                                     if (b == 0) prefetch_slice(g, groups);
                                   });
    }
    prefetch_slice(0, 1);
  }

 private:
  // The first head of pass b (the last pass ends at the group's last head).
  int64_t pass_start(int64_t b) const { return min_i64(b * m_, group_ - m_); }
  uint16_t* qpack(int64_t k, int64_t b) {
    return qpack_ + static_cast<size_t>(k * passes_ + b) * pass_elems_;
  }
  // The tile's K rows (int8 or fp16, contiguous channels) as bf16 rows of d_ channels in kwide_
  // (fp16's second pieces kWidePlane elements on), prefetching a slice after each row.
  template <class PrefetchSlice>
  void widen_k(const KvHeadWork<kKind>& w, const TileRows& rows, PrefetchSlice& prefetch_slice) {
    const int64_t n = rows.n;
    for (int64_t j = 0; j < n; ++j) {
      const std::byte* row = rows.k[j] + w.k_head_off_;
      uint16_t* out = kwide_ + j * d_;
      if constexpr (kKind == KvKind::kInt8) {
        const auto* typed = reinterpret_cast<const int8_t*>(row);
        amx::widen_rows_int8_avx512(&typed, 1, d_, out, d_);
      } else if constexpr (kKind == KvKind::kFp16) {
        const auto* typed = reinterpret_cast<const uint16_t*>(row);
        amx::split_rows_fp16_avx512(&typed, 1, d_, out, out + kWidePlane, d_);
      }
      prefetch_slice(j, n);
    }
  }
  // Rows [j, j + len) of a strided-channel cache copied, element for element, into kstage_ as
  // contiguous rows of d_ channels.
  void stage_rows(const TileRows& rows, int64_t j, int64_t len, int64_t head_off, int64_t sdim) {
    for (int64_t r = 0; r < len; ++r) {
      const std::byte* src = rows.k[j + r] + head_off;
      std::byte* dst = kstage_ + r * d_ * kEs;
      for (int64_t x = 0; x < d_; ++x) std::memcpy(dst + x * kEs, src + x * sdim * kEs, kEs);
    }
  }

  int64_t group_, hf_, passes_;
  int m_, d_;
  size_t pass_elems_;
  alignas(64) float st_[kIfaTile * amx::kMaxHeads];  // one pass's scores, key-major
  alignas(64) uint16_t qpack_[kQueryElems];
  alignas(64) std::byte kstage_[amx::kTileRows * kIfaMaxHeadDim * kEs];
  static constexpr size_t kWidePlane = kIfaTile * kIfaMaxHeadDim;
  alignas(64) uint16_t kwide_[kKind == KvKind::kBf16 ? 1 : amx::kv_pieces(kType) * kWidePlane];
  alignas(64) uint16_t vpack_[kPv ? amx::value_pack_size(kIfaMaxHeadDim, kType) : 1];
  alignas(64) uint16_t ppack_[amx::prob_pack_size(amx::kMaxHeads, kProbPieces)];
};
