// IFA kernel body: one kv head's share of a chunk task.
// Included only by ifa_kernel-inl.h, inside the ISA namespace and after the parts before it
// (no include guard, like it: compiled once per ISA, with that unit's flags).
//
// KvHeadWork holds what a task keeps per kv head and does that head's steps on each tile: the
// setup of its G query heads (query load, the int8 antiquant folding, bf16 queries for the dot
// products), the scores on the micro-kernels (ifa_score_kernels-inl.h), scale, bias, pse, mask and
// the online-softmax fold (fold), P·V (ifa_pv_kernels-inl.h) and the slot header the merge reads
// (finish). TileRows carries a tile's row addresses, found once for the task's first kv head.
// Keeping a head's state in an object of its own is what lets the task loop
// (ifa_chunk_task-inl.h) interleave several heads position by position.

namespace ifa_detail {

// Byte distance between the rows of kv heads n2 and n2 + 1 at one position of sequence b.
template <KvKind kKind>
inline int64_t kv_head_bytes(const core::KvCacheView& kv,
                             const std::vector<core::KvCacheView::Seq>& seqs, int64_t b) {
  return (kv.paged ? kv.s_head : seqs[b].s_head) * kv_elem_size<kKind>();
}

// The row addresses of one tile, for the first kv head of a task: every other head of the task is
// a fixed byte offset away, so the block table is read once per tile, not once per head.
struct TileRows {
  int64_t n = 0;       ///< positions in this tile
  int64_t n_next = 0;  ///< positions of the next tile of the chunk (prefetched), 0 if none
  const std::byte* k[kIfaTile];
  const std::byte* v[kIfaTile];
  const std::byte* k_next[kIfaTile];
  const std::byte* v_next[kIfaTile];
};

// The part of a chunk task that belongs to one kv head n2: its G query heads' states and the
// per-tile work. A task runs several of these (adjacent kv heads) position block by position
// block, so when the heads of one position are adjacent in memory (BSH/BSND, paged or not) the
// task reads its region front to back, which hardware prefetchers follow. Every head's
// arithmetic (and so every bit) is the same in any interleaving.
template <KvKind kKind>
class KvHeadWork {
 public:
  // qbf: room for the group's queries as bf16 (group * dp), used when K is scored with bf16 dots.
  void init(const IfaProblem& p, const IfaData& data, const IfaLayout& l, std::byte* base,
            const IfaChunkTask& t, int64_t n2, SoftmaxState* st, bool* any_unmasked,
            uint16_t* qbf) {
    p_ = &p;
    d_ = &data;
    l_ = &l;
    b_ = t.b;
    n2_ = n2;
    k_bf16_dot_ = false;
    qbf_ = nullptr;
    k_sc_ = v_sc_ = k_off_ = v_off_ = nullptr;
    any_exact_ = false;
    across_ = t.prefetch_across;
    st_ = st;
    any_unmasked_ = any_unmasked;
    k_head_off_ = (n2 - t.n2_begin) * kv_head_bytes<kKind>(p.k, p.k_seqs, t.b);
    v_head_off_ = (n2 - t.n2_begin) * kv_head_bytes<kKind>(p.v, p.v_seqs, t.b);
    const auto* first = reinterpret_cast<const int64_t*>(base + l.chunk_first);
    slot_ = ifa_slot(l, base, first, t.b, n2, t.chunk, t.num_chunks);
    if constexpr (kKind == KvKind::kInt8) {
      // Per-channel fp32 antiquant tables of this kv head (prepared once per run).
      const auto* aq = reinterpret_cast<const float*>(base + l.antiquant);
      const int64_t nd = p.num_kv_heads * p.head_dim;
      k_sc_ = aq + n2 * p.head_dim;
      v_sc_ = aq + nd + n2 * p.head_dim;
      k_off_ = aq + 2 * nd + n2 * p.head_dim;
      v_off_ = aq + 3 * nd + n2 * p.head_dim;
    }
    const int64_t d = p.head_dim, dp = l.dp;
    for (int64_t g = 0; g < p.group; ++g) {
      float* acc = slot_ + g * l.head_floats;
      float* q = acc + dp;
      const int64_t h = n2 * p.group + g;
      for (int64_t i = 0; i < dp; i += kLanes) vstore(acc + i, vzero());
      load_query(p, data, t.b, h, q);
      for (int64_t i = d; i < dp; ++i) q[i] = 0.0f;
      if constexpr (kKind == KvKind::kInt8) {
        // q·((k + off) * sc) = (q * sc)·k + (q * sc)·off: the row dot products then run on the
        // raw integers, and the second term is one constant per head, added to each score.
        float bias = 0.0f;
        bool finite = true;
        for (int64_t i = 0; i < d; ++i) {
          q[i] *= k_sc_[i];
          bias += q[i] * k_off_[i];
          finite = finite && __builtin_isfinite(q[i]);
        }
        // With an infinite (q * sc)_i the folded form is not the spec's arithmetic (inf * 0 is
        // NaN where q·((k + off) * sc) has +-inf): such heads are scored term by term
        // (exact_scores), without the bias.
        exact_[g] = !finite || !__builtin_isfinite(bias);
        if (exact_[g]) {
          bias = 0.0f;
          any_exact_ = true;
        }
        acc[2 * dp + IfaHeadSlot::kKeyBias] = bias;
        if (p.token_k) {  // the tables are 1 and 0: q is unscaled, the bias 0
          float qsum = 0.0f;
          for (int64_t i = 0; i < d; ++i) qsum += q[i];
          acc[2 * dp + IfaHeadSlot::kQuerySum] = qsum;
        }
        acc[2 * dp + IfaHeadSlot::kValueConst] = 0.0f;
      }
      if constexpr (kKind != KvKind::kInt8) exact_[g] = false;
      st_[g] = SoftmaxState{};
      any_unmasked_[g] = false;
    }
    k_sdim_ = kv_dim_stride(p.k, p.k_seqs, t.b);
    v_sdim_ = kv_dim_stride(p.v, p.v_seqs, t.b);
    k_bytes_ = prefetch_bytes(k_sdim_);
    k_in_place_ = k_sdim_ == 1 && d == dp;
    if constexpr (kKind == KvKind::kBf16) {
      // qbf null: the tile engine scores (no bf16 query buffer, whatever the schedule says).
      k_bf16_dot_ = qbf != nullptr && k_in_place_ && dp % 32 == 0 &&
                    p.q.dtype == DType::kBFloat16 && t.bf16_dot;
      if (k_bf16_dot_) {
        // The fp32 queries were widened from bf16: their top halves are the bf16 bits.
        qbf_ = qbf;
        for (int64_t g = 0; g < p.group; ++g) {
          const float* q = slot_ + g * l.head_floats + dp;
          for (int64_t i = 0; i < dp; ++i) {
            uint32_t u;
            std::memcpy(&u, q + i, sizeof(u));
            qbf[g * dp + i] = static_cast<uint16_t>(u >> 16);
          }
        }
      }
    }
    v_bytes_ = prefetch_bytes(v_sdim_);
    v_in_place_ = v_sdim_ == 1 && d == dp;
  }

  // Prefetches the K and V rows of the first tile (rows as in `tile`); only K when prefetching
  // across the streams (its K pass prefetches its V rows).
  void prefetch_first(const TileRows& rows) const {
    for (int64_t i = 0; i < rows.n; ++i) {
      prefetch_row(rows.k[i] + k_head_off_, k_bytes_);
      if (!across_) prefetch_row(rows.v[i] + v_head_off_, v_bytes_);
    }
  }

  // The row prefetched while K row i of the tile is scored: V row i of this tile when
  // prefetching across the streams (IfaSchedule::prefetch_across), else K row i of the next tile
  // (never beyond the chunk). One row per row processed: spread out, so the prefetches never
  // pile up in the miss queues.
  void prefetch_while_scoring(const TileRows& rows, int64_t i) const {
    if (across_) {
      prefetch_row(rows.v[i] + v_head_off_, v_bytes_);
    } else if (i < rows.n_next) {
      prefetch_row(rows.k_next[i] + k_head_off_, k_bytes_);
    }
  }
  // The row prefetched while V row i of the tile is accumulated: row i of the next tile, K when
  // prefetching across the streams, else V.
  void prefetch_while_accumulating(const TileRows& rows, int64_t i) const {
    if (i >= rows.n_next) return;
    if (across_) {
      prefetch_row(rows.k_next[i] + k_head_off_, k_bytes_);
    } else {
      prefetch_row(rows.v_next[i] + v_head_off_, v_bytes_);
    }
  }

  // Scores of tile rows [i, i + kBlockRows) against every head into s[g][i ..], prefetching as
  // prefetch_while_scoring says. Contiguous rows of dp channels are read in place; others are
  // widened into buf first (kBlockRows fp32 rows, kIfaMaxHeadDim apart).
  void score_block_at(const TileRows& rows, int64_t i, float (*s)[kIfaTile], float* buf) const {
    const int64_t d = p_->head_dim, dp = l_->dp;
    const std::byte* k[kBlockRows];
    for (int64_t r = 0; r < kBlockRows; ++r) {
      prefetch_while_scoring(rows, i + r);
      k[r] = rows.k[i + r] + k_head_off_;
    }
    const float* q0 = slot_ + dp;
    if (k_bf16_dot_) {
      score_bf16_dot(qbf_, p_->group, dp, k, kBlockRows, s, i);
      return;
    }
    if (k_in_place_) {
      score_block<kKind>(q0, l_->head_floats, p_->group, dp, k, s, i);
      return;
    }
    for (int64_t r = 0; r < kBlockRows; ++r) {
      float* dst = buf + r * kIfaMaxHeadDim;
      load_row<kKind>(k[r], k_sdim_, d, dp, dst);
      k[r] = reinterpret_cast<const std::byte*>(dst);
    }
    score_block<KvKind::kF32>(q0, l_->head_floats, p_->group, dp, k, s, i);
  }

  // Scores of the single tile row i (the tail of a tile).
  void score_row_at(const TileRows& rows, int64_t i, float (*s)[kIfaTile], float* buf) const {
    const int64_t d = p_->head_dim, dp = l_->dp;
    prefetch_while_scoring(rows, i);
    const std::byte* k = rows.k[i] + k_head_off_;
    const float* q0 = slot_ + dp;
    if (k_bf16_dot_) {
      score_bf16_dot(qbf_, p_->group, dp, &k, 1, s, i);
      return;
    }
    if (k_in_place_) {
      score_row<kKind>(q0, l_->head_floats, p_->group, dp, k, s, i);
      return;
    }
    load_row<kKind>(k, k_sdim_, d, dp, buf);
    score_row<KvKind::kF32>(q0, l_->head_floats, p_->group, dp,
                            reinterpret_cast<const std::byte*>(buf), s, i);
  }

  // int8 K: the scores of the heads whose scaled query is not finite, recomputed term by term as
  // sum_i (q * sc)_i * (k_i + off_i), replacing the folded (q * sc)·k (see init). Rare: only
  // non-finite queries or scales get here.
  void exact_scores(const TileRows& rows, int64_t n, float (*s)[kIfaTile]) const {
    if constexpr (kKind == KvKind::kInt8) {
      if (!any_exact_) return;
      const int64_t d = p_->head_dim, dp = l_->dp, hf = l_->head_floats;
      for (int64_t g = 0; g < p_->group; ++g) {
        if (!exact_[g]) continue;
        const float* q = slot_ + g * hf + dp;
        for (int64_t i = 0; i < n; ++i) {
          const std::byte* row = rows.k[i] + k_head_off_;
          float acc = 0.0f;
          for (int64_t c = 0; c < d; ++c)
            acc += q[c] * (kv_scalar<kKind>(row, c * k_sdim_) + k_off_[c]);
          s[g][i] = acc;
        }
      }
    } else {
      (void)rows, (void)n, (void)s;
    }
  }

  // Scale, bias, mask (docs/semantics.md §2.5 steps 3-5) of the n scores of the tile at positions
  // [j0, ..), then folds them into each head's state: s becomes the weights p. Inlined into the
  // chunk loop as it was before the per-token paths made GCC keep it out of line (2 % more
  // instructions on the int8 path, callgrind at avx2).
  [[gnu::always_inline]] void fold(int64_t j0, int64_t n, float (*s)[kIfaTile]) {
    const IfaProblem& p = *p_;
    const int64_t group = p.group, dp = l_->dp, hf = l_->head_floats;
    const auto* mask = static_cast<const uint8_t*>(d_->mask);
    const int64_t n_vec = (n + kLanes - 1) / kLanes * kLanes;
    // Per-token int8 parameters of the tile's positions (scale, offset; key, value).
    [[maybe_unused]] float tok[4][kIfaTile];
    if constexpr (kKind == KvKind::kInt8) {
      if (p.token_k)
        token_params(p.antiquant_scale, p.antiquant_offset, d_->antiquant_scale,
                     d_->antiquant_offset, j0, n, tok[0], tok[1]);
      if (p.token_v)
        token_params(p.antiquant_scale_v, p.antiquant_offset_v, d_->antiquant_scale_v,
                     d_->antiquant_offset_v, j0, n, tok[2], tok[3]);
    }
    for (int64_t g = 0; g < group; ++g) {
      const int64_t h = n2_ * group + g;
      float* sg = s[g];
      if constexpr (kKind == KvKind::kInt8) {
        if (p.token_k) {
          // q·((k + off_j) * sc_j) = (q·k + off_j * sum_i q_i) * sc_j.
          const float qsum = slot_[g * hf + 2 * dp + IfaHeadSlot::kQuerySum];
          const Vec qv = vset1(qsum);
          int64_t i = 0;
          for (; i + kLanes <= n; i += kLanes)
            vstore(sg + i, vmul(vfma(vload(tok[1] + i), qv, vload(sg + i)), vload(tok[0] + i)));
          for (; i < n; ++i) sg[i] = __builtin_fmaf(tok[1][i], qsum, sg[i]) * tok[0][i];
        }
        const float bias = slot_[g * hf + 2 * dp + IfaHeadSlot::kKeyBias];
        const Vec bv = vset1(bias);
        int64_t i = 0;
        for (; i + kLanes <= n; i += kLanes) vstore(sg + i, vadd(vload(sg + i), bv));
        for (; i < n; ++i) sg[i] += bias;
      }
      if (!p.pse.present && mask == nullptr) {
        // The common case: only the scale (the same single rounding as the general path).
        const Vec scale = vset1(p.scale);
        int64_t i = 0;
        for (; i + kLanes <= n; i += kLanes) vstore(sg + i, vmul(vload(sg + i), scale));
        for (; i < n; ++i) sg[i] *= p.scale;
        any_unmasked_[g] = true;
      }
      for (int64_t i = 0; i < n && (p.pse.present || mask != nullptr); ++i) {
        const int64_t j = j0 + i;
        float x = sg[i] * p.scale;
        if (p.pse.present) x += view_f32(p.pse, d_->pse, p.pse.index(b_, h, j));
        if (mask != nullptr && mask[p.mask.index(b_, h, j)] != 0) {
          x = core::kMaskedScore;
        } else {
          any_unmasked_[g] = true;
        }
        sg[i] = x;
      }
      for (int64_t i = n; i < n_vec; ++i) sg[i] = kNegInf;
      const float alpha = softmax_fold_tile(st_[g], sg, n_vec);
      softmax_scale_acc(slot_ + g * hf, dp, alpha);
      if constexpr (kKind == KvKind::kInt8) {
        if (p.token_v) {
          // sum_t p_t (v_t + off_t) sc_t = sum_t (p_t sc_t) v_t + sum_t p_t sc_t off_t: the
          // weights take the scale, the constant is rescaled as acc is and added by finish().
          // The tile's part is summed in lanes, then reduced (a fixed order: the same bits for
          // any thread count).
          float& c = slot_[g * hf + 2 * dp + IfaHeadSlot::kValueConst];
          if (alpha != 1.0f) c *= alpha;
          Vec part = vzero();
          int64_t i = 0;
          for (; i + kLanes <= n; i += kLanes) {
            const Vec w = vmul(vload(sg + i), vload(tok[2] + i));
            vstore(sg + i, w);
            part = vfma(w, vload(tok[3] + i), part);
          }
          float tail = 0.0f;
          for (; i < n; ++i) {
            sg[i] *= tok[2][i];
            tail = __builtin_fmaf(sg[i], tok[3][i], tail);
          }
          c += vreduce_add(part) + tail;
        }
      }
    }
  }

  // acc_g += p_g[i] * v_i for tile rows [i0, i0 + m), m <= kPvRows: each V row widened once and
  // used by every head, each accumulator vector loaded and stored once per block; the FMAs still
  // run in row order, so the result is the same as one row at a time.
  void pv_block_at(const TileRows& rows, int64_t i0, int64_t m, float (*s)[kIfaTile],
                   float* buf) const {
    const int64_t d = p_->head_dim, dp = l_->dp, hf = l_->head_floats, group = p_->group;
    for (int64_t r = 0; r < m; ++r) prefetch_while_accumulating(rows, i0 + r);
    int64_t i = i0;
    if (v_in_place_) {
      // Contiguous rows of dp channels: four rows at a time straight from the cache.
      for (; i + 4 <= i0 + m; i += 4) {
        const std::byte* v[4];
        for (int64_t r = 0; r < 4; ++r) v[r] = rows.v[i + r] + v_head_off_;
        int64_t g = 0;
        if constexpr (kScoreHeads >= 4) {
          for (; g + 4 <= group; g += 4) pv_rows4_heads4<kKind>(slot_, hf, dp, s, g, i, v);
        }
        if constexpr (kScoreHeads >= 2) {
          for (; g + 2 <= group; g += 2) pv_rows4_heads2<kKind>(slot_, hf, dp, s, g, i, v);
        }
        for (; g < group; ++g) pv_rows4_head1<kKind>(slot_, hf, dp, s, g, i, v);
      }
    }
    const int64_t rest = i0 + m - i;
    if (rest == 0) return;
    for (int64_t r = 0; r < rest; ++r) {
      load_row<kKind>(rows.v[i + r] + v_head_off_, v_sdim_, d, dp, buf + r * kIfaMaxHeadDim);
    }
    for (int64_t g = 0; g < group; ++g) accumulate_pv(slot_ + g * hf, dp, s[g] + i, buf, rest);
  }

  // Per-token parameters of positions [j0, j0 + n) of this batch: sc[i], off[i] (0 without an
  // offset tensor).
  void token_params(const core::View3& scale, const core::View3& offset, const void* sd,
                    const void* od, int64_t j0, int64_t n, float* sc, float* off) const {
    param_run(scale, sd, j0, n, sc);
    if (offset.present) {
      param_run(offset, od, j0, n, off);
    } else {
      for (int64_t i = 0; i < n; ++i) off[i] = 0.0f;
    }
  }

  // dst[0, n) = elements (b, j0 + i, 0) of v, widened: kLanes at a time when positions are
  // contiguous (the usual (B, S) tensors), else one by one.
  void param_run(const core::View3& v, const void* data, int64_t j0, int64_t n, float* dst) const {
    const int64_t at = v.index(b_, j0, 0);
    int64_t i = 0;
    if (v.s1 == 1) {
      for (; i + kLanes <= n; i += kLanes) {
        if (v.dtype == DType::kFloat32) {
          vstore(dst + i, vload(static_cast<const float*>(data) + at + i));
        } else if (v.dtype == DType::kFloat16) {
          vstore(dst + i, vload_fp16(static_cast<const uint16_t*>(data) + at + i));
        } else {
          vstore(dst + i, vload_bf16(static_cast<const uint16_t*>(data) + at + i));
        }
      }
    }
    for (; i < n; ++i) dst[i] = param_f32(v.dtype, data, at + i * v.s1);
  }

  // Leaves (max, sum, any_unmasked) of each head in the slot for the merge.
  // int8 V: acc holds sum_t p_t v_t over the raw integers and st.sum = sum_t p_t (both with the
  // same rescales), so sum_t p_t (v_t + off) * sc = (acc + off * sum) * sc.
  void finish() {
    for (int64_t g = 0; g < p_->group; ++g) {
      if constexpr (kKind == KvKind::kInt8) {
        float* acc = slot_ + g * l_->head_floats;
        const int64_t d = p_->head_dim;
        if (p_->token_v) {  // no per-channel value parameters: the constant of fold()
          const float c = acc[2 * l_->dp + IfaHeadSlot::kValueConst];
          for (int64_t i = 0; i < d; ++i) acc[i] += c;
        } else {
          const float sum = st_[g].sum;
          const Vec sv = vset1(sum);
          int64_t i = 0;
          for (; i + kLanes <= d; i += kLanes) {
            vstore(acc + i, vmul(vfma(vload(v_off_ + i), sv, vload(acc + i)), vload(v_sc_ + i)));
          }
          for (; i < d; ++i) acc[i] = __builtin_fmaf(v_off_[i], sum, acc[i]) * v_sc_[i];
        }
      }
      float* hdr = slot_ + g * l_->head_floats + 2 * l_->dp;
      hdr[IfaHeadSlot::kMax] = st_[g].max;
      hdr[IfaHeadSlot::kSum] = st_[g].sum;
      hdr[IfaHeadSlot::kAnyUnmasked] = any_unmasked_[g] ? 1.0f : 0.0f;
    }
  }

 private:
  // The matrix-engine path (ifa_tiles-inl.h) scores and accumulates for these heads.
  template <class Engine, KvKind kTileKind>
  friend class TileChunk;

  // Bytes to prefetch of a row: all of it when its channels are contiguous, else the first line
  // (strided channels are a rare slow path).
  int64_t prefetch_bytes(int64_t s_dim) const {
    return s_dim == 1 ? p_->head_dim * kv_elem_size<kKind>() : 1;
  }

  // No default member initializers: chunk_impl keeps kIfaMaxGroup of these on its stack and
  // initialising them all cost about a quarter of a 16-token call (callgrind: a memset per task);
  // init() sets every member.
  const IfaProblem* p_;
  const IfaData* d_;
  const IfaLayout* l_;
  int64_t b_, n2_;
  int64_t k_sdim_, v_sdim_;
  int64_t k_bytes_, v_bytes_;
  bool k_in_place_;  // K rows are contiguous with dp channels: scored without a copy
  bool k_bf16_dot_;  // ... and scored with bf16 dot products against qbf_
  const uint16_t* qbf_;
  bool v_in_place_;  // the same for V rows
  int64_t k_head_off_, v_head_off_;
  SoftmaxState* st_;
  bool* any_unmasked_;
  float* slot_;
  const float* k_sc_;
  const float* v_sc_;
  const float* k_off_;
  const float* v_off_;
  bool exact_[kIfaMaxGroup];  // int8 K: heads [0, group) scored term by term (exact_scores)
  bool any_exact_;
  bool across_;  // IfaChunkTask::prefetch_across
};

}  // namespace ifa_detail
