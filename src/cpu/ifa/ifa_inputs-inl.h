// IFA kernel body: how it reads its inputs.
// Included only by ifa_kernel-inl.h, inside the ISA namespace and after the parts before it
// (no include guard, like it: compiled once per ISA, with that unit's flags).
//
// The K and V row addresses of a kv head for a run of positions (contiguous, strided or paged:
// kv_rows), a row's elements widened to fp32 (kv_vector in registers, load_row into a zero-padded
// buffer), the software prefetch of a row, and the query row and parameter element loads. The
// layouts' address arithmetic and the dtype widening live here, so the micro-kernels and the
// per-head work see only rows of a KvKind.

namespace ifa_detail {

// kF32: a row already widened into an fp32 buffer (strided or padded rows).
enum class KvKind { kFp16, kBf16, kInt8, kF32 };

inline int64_t min_i64(int64_t a, int64_t b) { return a < b ? a : b; }

template <KvKind kKind>
constexpr int64_t kv_elem_size() {
  return kKind == KvKind::kInt8 ? 1 : (kKind == KvKind::kF32 ? 4 : 2);
}

// Element i (in elements from row) of a K/V row, widened; memcpy because rows may be misaligned.
template <KvKind kKind>
inline float kv_scalar(const std::byte* row, int64_t i) {
  if constexpr (kKind == KvKind::kInt8) {
    int8_t x;
    std::memcpy(&x, row + i, sizeof(x));
    return static_cast<float>(x);
  } else {
    uint16_t h;
    std::memcpy(&h, row + 2 * i, sizeof(h));
    return kKind == KvKind::kFp16 ? fp16_to_f32(h) : bf16_to_f32(h);
  }
}

template <KvKind kKind>
inline Vec kv_vector(const std::byte* p) {
  if constexpr (kKind == KvKind::kInt8) {
    return vload_int8(reinterpret_cast<const int8_t*>(p));
  } else if constexpr (kKind == KvKind::kFp16) {
    return vload_fp16(reinterpret_cast<const uint16_t*>(p));
  } else if constexpr (kKind == KvKind::kF32) {
    return vload(reinterpret_cast<const float*>(p));
  } else {
    return vload_bf16(reinterpret_cast<const uint16_t*>(p));
  }
}

// dst[0, dp) = the d channels of a row (channel stride s_dim) widened to fp32 (int8: the raw
// integers; the antiquant scale and offset are folded into q and the accumulator, see
// KvHeadWork), zero padded.
template <KvKind kKind>
inline void load_row(const std::byte* row, int64_t s_dim, int64_t d, int64_t dp, float* dst) {
  int64_t i = 0;
  if (s_dim == 1) {
    for (; i + kLanes <= d; i += kLanes)
      vstore(dst + i, kv_vector<kKind>(row + i * kv_elem_size<kKind>()));
  }
  for (; i < d; ++i) dst[i] = kv_scalar<kKind>(row, i * s_dim);
  for (; i < dp; ++i) dst[i] = 0.0f;
}

// Channel stride of the K or V rows of sequence b.
inline int64_t kv_dim_stride(const core::KvCacheView& kv,
                             const std::vector<core::KvCacheView::Seq>& seqs, int64_t b) {
  return kv.paged ? kv.s_dim : seqs[b].s_dim;
}

// Addresses of the K and V rows of kv head n2 for positions [j, j + n) (n >= 1, all attended) of
// sequence b. A paged cache costs one division per call and one block-table read per block, not
// a division per row; no block-table entry beyond the last position is read.
template <KvKind kKind>
inline void kv_rows(const IfaProblem& p, const IfaData& d, int64_t b, int64_t n2, int64_t j,
                    int64_t n, const std::byte** k_rows, const std::byte** v_rows) {
  constexpr int64_t es = kv_elem_size<kKind>();
  if (!p.k.paged) {
    const core::KvCacheView::Seq& ks = p.k_seqs[b];
    const core::KvCacheView::Seq& vs = p.v_seqs[b];
    const auto* kb =
        static_cast<const std::byte*>(d.k_seq[b]) + (j * ks.s_pos + n2 * ks.s_head) * es;
    const auto* vb =
        static_cast<const std::byte*>(d.v_seq[b]) + (j * vs.s_pos + n2 * vs.s_head) * es;
    for (int64_t i = 0; i < n; ++i) {
      k_rows[i] = kb + i * ks.s_pos * es;
      v_rows[i] = vb + i * vs.s_pos * es;
    }
    return;
  }
  const core::BlockTableView& bt = p.block_table;
  const auto* kc = static_cast<const std::byte*>(d.k_cache) + n2 * p.k.s_head * es;
  const auto* vc = static_cast<const std::byte*>(d.v_cache) + n2 * p.v.s_head * es;
  int64_t slot = j / bt.block_size;
  int64_t o = j % bt.block_size;
  int64_t blk = d.block_table[b * bt.s0 + slot * bt.s1];
  for (int64_t i = 0; i < n; ++i, ++o) {
    if (o == bt.block_size) {
      ++slot;
      o = 0;
      blk = d.block_table[b * bt.s0 + slot * bt.s1];
    }
    k_rows[i] = kc + (blk * p.k.s_block + o * p.k.s_pos) * es;
    v_rows[i] = vc + (blk * p.v.s_block + o * p.v.s_pos) * es;
  }
}

// Software prefetch of one row's cache lines into L2 (prefetcht1: L1 has too few miss buffers
// to keep enough lines in flight; measured 25% faster than prefetcht0 on Zen 4, and 27-36% on an
// Intel Xeon in kvflash_read_rate_bench, bench/read_rate_bench.cpp). Rows of one kv
// head are typically 1-4 KB apart (BSH/BSND caches interleave the heads) and paged blocks are
// scattered, which hardware prefetchers follow poorly: without this a row costs a memory latency
// (measured 20-40% slower even with the position-major order).
// The instruction is issued with asm volatile rather than __builtin_prefetch: GCC's pure-const
// analysis treats a function whose only effect is __builtin_prefetch as side-effect free and
// deletes calls to it when it is not inlined early (measured: every prefetch vanished). A
// prefetch never faults and reads nothing architecturally.
inline void prefetch_row(const std::byte* row, int64_t bytes) {
  constexpr int64_t kLine = 64;
  for (int64_t o = 0; o < bytes; o += kLine) {
    __asm__ volatile("prefetcht1 %0" : : "m"(*(row + o)));
  }
}

// Element index of a View3 of the query dtype bound at data, widened.
inline float view_f32(const core::View3& v, const void* data, int64_t index) {
  uint16_t h;
  std::memcpy(&h, static_cast<const uint16_t*>(data) + index, sizeof(h));
  return v.dtype == DType::kFloat16 ? fp16_to_f32(h) : bf16_to_f32(h);
}

// Element index of an fp16 / bf16 / fp32 parameter tensor (sink, per-token antiquant), widened.
inline float param_f32(DType dtype, const void* data, int64_t index) {
  if (dtype == DType::kFloat32) {
    float x;
    std::memcpy(&x, static_cast<const float*>(data) + index, sizeof(x));
    return x;
  }
  uint16_t x;
  std::memcpy(&x, static_cast<const uint16_t*>(data) + index, sizeof(x));
  return dtype == DType::kFloat16 ? fp16_to_f32(x) : bf16_to_f32(x);
}

// q[0, d) = query row (b, h) widened to fp32: kLanes at a time when its channels are contiguous
// (a per-element loop cost about a fifth of a 16-token call), else element by element.
inline void load_query(const IfaProblem& p, const IfaData& data, int64_t b, int64_t h, float* q) {
  const int64_t d = p.head_dim;
  int64_t i = 0;
  if (p.q.s2 == 1) {
    const uint16_t* src = static_cast<const uint16_t*>(data.q) + p.q.index(b, h, 0);
    const bool fp16 = p.q.dtype == DType::kFloat16;
    for (; i + kLanes <= d; i += kLanes)
      vstore(q + i, fp16 ? vload_fp16(src + i) : vload_bf16(src + i));
  }
  for (; i < d; ++i) q[i] = view_f32(p.q, data.q, p.q.index(b, h, i));
}

}  // namespace ifa_detail
