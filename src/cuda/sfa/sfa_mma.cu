// SFA on tensor cores: mma.sync m16n8k16 (bf16 / fp16 in, fp32 accumulation), sm_80 and later
// (sm_90a runs the same instructions; there is no wgmma path). Geometry and shared-memory layout:
// sfa_mma_geometry.hpp. Semantics: exactly the SIMT kernel's (sfa_kernel.cu) and the CPU's
// (src/cpu/sfa/sfa_kernel-inl.h), with one difference in arithmetic: P is rounded to the input
// dtype for the P.V product (the softmax sum uses the fp32 P), which the output tolerance covers
// (docs/semantics.md §0.2 item 3: rtol * max|V| with rtol 2^-7 bf16 / 2^-10 fp16, P's rounding is
// 2^-9 / 2^-11).
//
// Per CTA (one query row r, heads [h0, h0 + 16 * m_tiles)):
//   prologue  bad lengths: NaN; uncovered / causally empty row: zeros; PA_BSND: every selected
//             range's block ids checked by the whole CTA before any row is read (bad: NaN row,
//             its row flag and the fault word's bit 1).
//   Q         the heads x 576 block, 16-bit, in shared memory (padded rows: 584).
//   list      a prologue kernel (sfa_expand_kernel, one CTA per row) expands the selection (spec
//             §3.4: first -1 ends the row, < -1 and out-of-range skipped, duplicates counted,
//             gather order) into the row's list of positions in the workspace.
//   pipeline  lane i of warp 0 turns list entry i of the next tile of 32 into element offsets
//             (block table lookups); every thread issues 16-byte cp.async copies of those rows
//             (K 512 + rope 64, V 512 when it does not alias K) into the other stage while the
//             current tile computes; positions past the tile's end are zero-filled.
//   S = Q K^T warp (mi, di): heads 16 mi.., key columns 8 di.., 36 k-steps over d in order; times
//             scale, columns past the tile's end -inf; fp32 to shared memory.
//   softmax   4 heads per warp, 8 lanes per head (4 columns each): max / NaN flag / sum by xor
//             butterflies (every lane the same bits), the non-finite rules of
//             core/online_softmax.hpp; P in the input dtype to shared memory, max / sum / rescale
//             per head in shared memory.
//   O += P V  warp (mi, di): output dims 128 di.. (16 n-tiles, fp32 registers), rescaled by the
//             tile's alpha first; V fragments with ldmatrix.trans.
//   finish    sinks, empty selection, the final sum as the CPU; O / l stored in the output dtype.
// Every result has one fixed order of operations (the mma instruction sequence, the butterflies),
// independent of scheduling: runs are bit-identical.
//
// STATUS: compiled (sm_80, sm_90a), never run: no GPU was available when it was written.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/sfa/sfa_device.cuh"
#include "cuda/sfa/sfa_launch.hpp"
#include "cuda/sfa/sfa_mma_geometry.hpp"

namespace kvflash::cuda {
namespace {

constexpr int kMaxThreads = 32 * kMmaDimWarps * 4;  // m_tiles <= 4
constexpr int kChunksK = kMmaQk / 8;                // 16-byte chunks of a gathered K+rope row
constexpr int kChunksNope = kMmaNope / 8;
constexpr int kHeadsPerSoftmaxWarp = 4;  // 16 heads per m-tile / 4 warps per m-tile

static_assert(kMmaTile == 8 * kMmaDimWarps, "one 8-column n-tile of S per warp of an m-tile");
static_assert(kMmaTile % 16 == 0, "P.V k-steps of 16 positions");
static_assert(kMmaTile / 8 == 4 && kHeadsPerSoftmaxWarp * 8 == 32, "8 lanes x 4 columns per head");

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void cp_async16(void* dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr(dst)), "l"(src)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
// Waits until at most N of this thread's committed groups are in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ uint32_t ld32(const uint16_t* p) {
  return *reinterpret_cast<const uint32_t*>(p);
}

// B fragments of two adjacent 8-column n-tiles of a row-major [k][n] 16-bit matrix (k = 16 rows
// from `row0`, columns n0 .. n0 + 15): ldmatrix.x4.trans, lanes 0-15 address rows k of columns
// n0.., lanes 16-31 rows k of columns n0 + 8...
__device__ __forceinline__ void ldsm_x4_trans(const uint16_t* row0, int stride, int n0, int lane,
                                              uint32_t* b) {
  const uint16_t* p = row0 + (lane & 15) * stride + n0 + (lane >> 4) * 8;
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(b[0]), "=r"(b[1]), "=r"(b[2]), "=r"(b[3])
               : "r"(smem_addr(p)));
}

// c += A (16 x 16, row) * B (16 x 8, col), fp32 accumulators.
template <bool kBf16>
__device__ __forceinline__ void mma16816(float* c, const uint32_t* a, uint32_t b0, uint32_t b1) {
  if constexpr (kBf16) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

// A fragment of the 16 x 16 block at `base` (row-major, `stride` elements), columns k0...
__device__ __forceinline__ void load_a(const uint16_t* base, int stride, int k0, int g, int t,
                                       uint32_t* a) {
  a[0] = ld32(base + g * stride + k0 + 2 * t);
  a[1] = ld32(base + (g + 8) * stride + k0 + 2 * t);
  a[2] = ld32(base + g * stride + k0 + 8 + 2 * t);
  a[3] = ld32(base + (g + 8) * stride + k0 + 8 + 2 * t);
}

struct Smem {
  uint16_t *q, *k, *v, *p;
  float *s, *max, *sum, *alpha;
  int64_t* offs;  // [stage][K, rope, V][kMmaTile]
  int* misc;      // [0, 1] bad-block scratch, [2 + stage] tile sizes, [4] any_selected
};

__device__ __forceinline__ Smem carve_smem(unsigned char* raw, const SfaMmaLayout& l) {
  Smem s;
  s.q = reinterpret_cast<uint16_t*>(raw + l.q);
  s.k = reinterpret_cast<uint16_t*>(raw + l.k);
  s.v = reinterpret_cast<uint16_t*>(raw + l.v);
  s.p = reinterpret_cast<uint16_t*>(raw + l.p);
  s.s = reinterpret_cast<float*>(raw + l.s);
  s.max = reinterpret_cast<float*>(raw + l.state);
  s.sum = s.max + l.heads;
  s.alpha = s.sum + l.heads;
  s.offs = reinterpret_cast<int64_t*>(raw + l.offs);
  s.misc = reinterpret_cast<int*>(raw + l.misc);
  return s;
}

// Issues the copies of a tile of n gathered positions into stage st (rows past n zero-filled).
__device__ __forceinline__ void gather(const SfaLaunchProblem& p, const core::SfaData& d,
                                       const SfaMmaLayout& l, const Smem& s, int st, int n) {
  const int tid = static_cast<int>(threadIdx.x), nt = static_cast<int>(blockDim.x);
  const int64_t* ko = s.offs + st * 3 * kMmaTile;
  const int64_t* ro = ko + kMmaTile;
  const int64_t* vo = ro + kMmaTile;
  const auto* kp = static_cast<const uint16_t*>(d.k);
  const auto* rp = static_cast<const uint16_t*>(d.k_rope);
  const auto* vp = static_cast<const uint16_t*>(d.v);
  uint16_t* kd = s.k + st * (l.k_stage / sizeof(uint16_t));
  for (int i = tid; i < kMmaTile * kChunksK; i += nt) {
    const int pos = i / kChunksK, c = i % kChunksK;
    uint16_t* dst = kd + pos * kMmaKStride + c * 8;
    if (pos < n) {
      cp_async16(dst, c < kChunksNope ? kp + ko[pos] + c * 8 : rp + ro[pos] + (c - kChunksNope) * 8);
    } else {
      *reinterpret_cast<uint4*>(dst) = make_uint4(0, 0, 0, 0);  // weight 0 times 0, never NaN
    }
  }
  if (!l.v_smem) return;
  uint16_t* vd = s.v + st * (l.v_stage / sizeof(uint16_t));
  for (int i = tid; i < kMmaTile * kChunksNope; i += nt) {
    const int pos = i / kChunksNope, c = i % kChunksNope;
    uint16_t* dst = vd + pos * kMmaVStride + c * 8;
    if (pos < n) {
      cp_async16(dst, vp + vo[pos] + c * 8);
    } else {
      *reinterpret_cast<uint4*>(dst) = make_uint4(0, 0, 0, 0);
    }
  }
}

// ---- prologue 2: each row's selection as a list of positions ---------------------------------

constexpr int kExpandThreads = 256;

// Row r's selection (docs/semantics.md §3.4 step 2) expanded in gather order into list[r * list_cap
// ...] and its length into counts[r]: the first -1 before valid_count ends the row (found with an
// atomicMin), every thread then counts the positions of a contiguous chunk of the entries before
// it, one exclusive scan (thread 0, 256 values) gives each chunk its start, and each thread
// writes its chunk's positions. Reads only the indices (block ids are the main kernel's, checked
// before any row is read); the list is the same whatever the schedule.
__global__ void __launch_bounds__(kExpandThreads)
    sfa_expand_kernel(SfaLaunchProblem p, core::SfaData d, Ws w) {
  __shared__ int first_end;
  __shared__ int64_t start[kExpandThreads];
  const int tid = static_cast<int>(threadIdx.x);
  const int64_t r = blockIdx.x;
  const RowLimits lim = row_limits(p, d, r);
  if ((*w.fault & kFaultLengths) != 0 || lim.invalid || lim.valid_count == 0) {
    if (tid == 0) w.counts[r] = 0;
    return;
  }
  if (tid == 0) first_end = static_cast<int>(lim.valid_count);
  __syncthreads();
  for (int64_t k = tid; k < lim.valid_count; k += kExpandThreads) {
    if (d.indices[p.indices.index(r, 0, k)] == -1) atomicMin(&first_end, static_cast<int>(k));
  }
  __syncthreads();
  const int64_t entries = first_end;
  const int64_t per = (entries + kExpandThreads - 1) / kExpandThreads;
  const int64_t k0 = tid * per, k1 = k0 + per < entries ? k0 + per : entries;
  int64_t mine = 0;
  for (int64_t k = k0; k < k1; ++k) {
    int64_t bg, en;
    selected_range(d.indices[p.indices.index(r, 0, k)], p.sparse_block_size, lim.thr, &bg, &en);
    mine += en - bg;
  }
  start[tid] = mine;
  __syncthreads();
  if (tid == 0) {
    int64_t total = 0;
    for (int i = 0; i < kExpandThreads; ++i) {
      const int64_t c = start[i];
      start[i] = total;
      total += c;
    }
    // total <= valid_count * min(sbs, thr) <= list_cap by construction (sfa_position_list_cap).
    w.counts[r] = static_cast<int32_t>(total < p.list_cap ? total : p.list_cap);
  }
  __syncthreads();
  int32_t* out = w.list + r * p.list_cap;
  int64_t at = start[tid];
  for (int64_t k = k0; k < k1; ++k) {
    int64_t bg, en;
    selected_range(d.indices[p.indices.index(r, 0, k)], p.sparse_block_size, lim.thr, &bg, &en);
    for (int64_t j = bg; j < en && at < p.list_cap; ++j) out[at++] = static_cast<int32_t>(j);
  }
}

// Element offsets (K, rope, V) of positions [first, first + n) of row r's list, one lane each.
__device__ __forceinline__ void tile_offsets(const SfaLaunchProblem& p, const core::SfaData& d,
                                             const Ws& w, const RowLimits& lim, int64_t r,
                                             int64_t first, int n, int64_t* off) {
  const int i = static_cast<int>(threadIdx.x);
  if (i >= n) return;
  const int64_t j = w.list[r * p.list_cap + first + i];
  off[i] = kv_offset(p, d, p.k, lim.bt, lim.b, j);
  off[kMmaTile + i] = kv_offset(p, d, p.k_rope, lim.bt, lim.b, j);
  off[2 * kMmaTile + i] = kv_offset(p, d, p.v, lim.bt, lim.b, j);
}

template <bool kBf16>
__global__ void __launch_bounds__(kMaxThreads, 1)
    sfa_mma_kernel(SfaLaunchProblem p, core::SfaData d, Ws w, SfaMmaLayout l) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const Smem s = carve_smem(smem_raw, l);
  const int tid = static_cast<int>(threadIdx.x), nt = static_cast<int>(blockDim.x);
  const int lane = tid & 31, warp = tid >> 5;
  const int mi = warp / kMmaDimWarps, di = warp % kMmaDimWarps;
  const int g = lane >> 2, t = lane & 3;
  const int64_t r = blockIdx.x;
  const int64_t h0 = static_cast<int64_t>(blockIdx.y) * l.heads;
  const int nh = static_cast<int>(p.num_heads - h0 < l.heads ? p.num_heads - h0 : l.heads);
  const float nan = __int_as_float(0x7fc00000);

  if (*w.fault & kFaultLengths) {  // bad lengths: every output NaN (as the CPU's write_all_nan)
    write_row_value(p, d, r, h0, nh, nan, nan);
    return;
  }
  const RowLimits lim = row_limits(p, d, r);
  if (lim.invalid) {  // uncovered or causally empty: zeros, max = sum = 0, even with sinks
    write_row_value(p, d, r, h0, nh, 0.0f, 0.0f);
    return;
  }
  if (row_has_bad_block(p, d, r, lim, s.misc)) {
    if (tid == 0) {
      w.row_fault[r] = 1;
      atomicOr(w.fault, kFaultBlockId);
    }
    write_row_value(p, d, r, h0, nh, nan, nan);
    return;
  }

  // Q (heads past nh are zeros: finite scores, never stored) and the softmax state.
  for (int i = tid; i < l.heads * kMmaQk; i += nt) {
    const int h = i / kMmaQk, dd = i % kMmaQk;
    uint16_t x = 0;
    if (h < nh) {
      x = dd < kMmaNope
              ? static_cast<const uint16_t*>(d.q)[p.q.index(r, h0 + h, dd)]
              : static_cast<const uint16_t*>(d.q_rope)[p.q_rope.index(r, h0 + h, dd - kMmaNope)];
    }
    s.q[h * kMmaKStride + dd] = x;
  }
  for (int h = tid; h < l.heads; h += nt) {
    s.max[h] = -INFINITY;
    s.sum[h] = 0.0f;
  }

  float o[kMmaNope / kMmaDimWarps / 8][4];  // 16 n-tiles of 8 output dims
#pragma unroll
  for (int j = 0; j < kMmaNope / kMmaDimWarps / 8; ++j) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.0f;

  // The row's positions (sfa_expand_kernel), kMmaTile per tile; their offsets one lane each.
  const int64_t total = w.counts[r];
  const auto tile_n = [total](int64_t tile) {
    const int64_t left = total - tile * kMmaTile;
    return static_cast<int>(left < kMmaTile ? (left > 0 ? left : 0) : kMmaTile);
  };
  int n_cur = tile_n(0);
  tile_offsets(p, d, w, lim, r, 0, n_cur, s.offs);
  __syncthreads();
  if (n_cur > 0) gather(p, d, l, s, 0, n_cur);
  cp_async_commit();

  const uint16_t* qa = s.q + 16 * mi * kMmaKStride;
  for (int it = 0; n_cur > 0; ++it) {
    const int st = it & 1, nx = st ^ 1;
    static_assert(kMmaStages == 2, "the loop alternates two stages");
    const int n_next = tile_n(it + 1);
    tile_offsets(p, d, w, lim, r, static_cast<int64_t>(it + 1) * kMmaTile, n_next,
                 s.offs + nx * 3 * kMmaTile);
    __syncthreads();  // offsets of tile it + 1 visible; stage nx free since the last iteration
    if (n_next > 0) gather(p, d, l, s, nx, n_next);
    cp_async_commit();
    cp_async_wait<1>();  // tile it has landed (this thread's copies) ...
    __syncthreads();     // ... and every thread's

    const uint16_t* kt = s.k + st * (l.k_stage / sizeof(uint16_t));
    const uint16_t* vt = l.v_smem ? s.v + st * (l.v_stage / sizeof(uint16_t)) : kt;
    const int vstride = l.v_smem ? kMmaVStride : kMmaKStride;

    // S = Q K^T for heads 16 mi.., key columns 8 di.., then * scale, -inf past the tile's end.
    {
      float c[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      const uint16_t* kb = kt + 8 * di * kMmaKStride;
#pragma unroll 4
      for (int k0 = 0; k0 < kMmaQk; k0 += 16) {
        uint32_t a[4];
        load_a(qa, kMmaKStride, k0, g, t, a);
        const uint32_t b0 = ld32(kb + g * kMmaKStride + k0 + 2 * t);
        const uint32_t b1 = ld32(kb + g * kMmaKStride + k0 + 8 + 2 * t);
        mma16816<kBf16>(c, a, b0, b1);
      }
      const int col = 8 * di + 2 * t;
      float* srow = s.s + (16 * mi + g) * kMmaSStride;
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int cc = col + (e & 1);
        const float sc = cc < n_cur ? c[e] * p.scale : -INFINITY;
        srow[(e >> 1) * 8 * kMmaSStride + cc] = sc;
      }
    }
    __syncthreads();

    // Online softmax: head 4 warp + lane / 8, columns 4 (lane % 8)...
    {
      const int h = kHeadsPerSoftmaxWarp * warp + (lane >> 3), c0 = 4 * (lane & 7);
      core::SoftmaxState st{s.max[h], s.sum[h]};
      float sc[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) sc[e] = s.s[h * kMmaSStride + c0 + e];
      float mx = sc[0];
      int has_nan = sc[0] != sc[0];
#pragma unroll
      for (int e = 1; e < 4; ++e) {
        mx = core::softmax_max_nan(mx, sc[e]);
        has_nan |= sc[e] != sc[e];
      }
#pragma unroll
      for (int off = 4; off > 0; off >>= 1) {
        mx = core::softmax_max_nan(mx, __shfl_xor_sync(0xffffffffu, mx, off));
        has_nan |= __shfl_xor_sync(0xffffffffu, has_nan, off);
      }
      // The CPU's softmax_fold_tile over the head's 32 columns; has_nan is the tile's NaN test.
      const core::SoftmaxTile tile = core::softmax_tile_begin(
          st, mx, [has_nan] { return has_nan != 0; }, core::DeviceExp{});
      float pw[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) pw[e] = expf(sc[e] - tile.pivot);
      float sum = ((pw[0] + pw[1]) + pw[2]) + pw[3];
#pragma unroll
      for (int off = 4; off > 0; off >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, off);
#pragma unroll
      for (int e = 0; e < 4; ++e) s.p[h * kMmaPStride + c0 + e] = from_f32(pw[e], kBf16);
      __syncwarp();  // every lane has read max / sum before lane 0 of the head writes them
      core::softmax_tile_end(st, tile, sum);
      if ((lane & 7) == 0) {
        s.max[h] = st.max;
        s.sum[h] = st.sum;
        s.alpha[h] = tile.alpha;
      }
    }
    __syncthreads();

    // O = O * alpha + P V for heads 16 mi.., dims 128 di...
    {
      const float a_lo = s.alpha[16 * mi + g], a_hi = s.alpha[16 * mi + g + 8];
      if (a_lo != 1.0f || a_hi != 1.0f) {
#pragma unroll
        for (int j = 0; j < kMmaNope / kMmaDimWarps / 8; ++j) {
          o[j][0] *= a_lo;
          o[j][1] *= a_lo;
          o[j][2] *= a_hi;
          o[j][3] *= a_hi;
        }
      }
      const uint16_t* pa = s.p + 16 * mi * kMmaPStride;
#pragma unroll
      for (int kk = 0; kk < kMmaTile; kk += 16) {
        uint32_t a[4];
        load_a(pa, kMmaPStride, kk, g, t, a);
        const uint16_t* vrow = vt + kk * vstride;
#pragma unroll
        for (int j = 0; j < kMmaNope / kMmaDimWarps / 8; j += 2) {
          uint32_t b[4];
          ldsm_x4_trans(vrow, vstride, kMmaNope / kMmaDimWarps * di + 8 * j, lane, b);
          mma16816<kBf16>(o[j], a, b[0], b[1]);
          mma16816<kBf16>(o[j + 1], a, b[2], b[3]);
        }
      }
    }
    __syncthreads();  // stage st, P and S are rewritten by the next iteration
    n_cur = n_next;
  }
  cp_async_wait<0>();

  // Finish per head (sinks, empty selection, the final sum), as the CPU's run_task: a range with
  // begin < end was selected exactly when the list is not empty.
  const bool any_selected = total > 0;
  const bool divide = d.sinks != nullptr || any_selected;
  for (int h = tid; h < nh; h += nt) {
    float m = s.max[h], sum = s.sum[h];
    const float* sink = d.sinks != nullptr ? d.sinks + (h0 + h) * p.sinks_s0 : nullptr;
    s.alpha[h] = finish_softmax(sink, divide, m, sum);
    s.sum[h] = sum;
    if (d.softmax_max != nullptr) {
      d.softmax_max[p.softmax_max.index(r, h0 + h, 0)] = m;
      d.softmax_sum[p.softmax_sum.index(r, h0 + h, 0)] = sum;
    }
  }
  __syncthreads();
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int h = 16 * mi + g + 8 * half;
    if (h >= nh) continue;
    const float a = s.alpha[h], den = s.sum[h];
#pragma unroll
    for (int j = 0; j < kMmaNope / kMmaDimWarps / 8; ++j) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        float x = o[j][2 * half + e];
        if (!divide) {
          x = 0.0f;
        } else {
          if (a != 1.0f) x *= a;
          x = x / den;
        }
        const int dim = kMmaNope / kMmaDimWarps * di + 8 * j + 2 * t + e;
        store_out(p, d.out, p.out.index(r, h0 + h, dim), x);
      }
    }
  }
}

template <bool kBf16>
int launch(const SfaLaunchProblem& p, const core::SfaData& d, const Ws& w, const SfaMmaLayout& l,
           cudaStream_t st) {
  const int smem = static_cast<int>(l.bytes);
  if (cudaError_t e = cudaFuncSetAttribute(sfa_mma_kernel<kBf16>,
                                           cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
      e != cudaSuccess) {
    return static_cast<int>(e);
  }
  const dim3 grid(static_cast<unsigned>(p.num_rows), static_cast<unsigned>(l.ctas_per_row));
  sfa_mma_kernel<kBf16><<<grid, static_cast<unsigned>(l.threads), smem, st>>>(p, d, w, l);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace

int sfa_mma_launch(const SfaLaunchProblem& p, const core::SfaData& d, void* ws_base, int m_tiles,
                   cudaStream_t st) {
  const SfaMmaLayout l = sfa_mma_layout(p.num_heads, m_tiles, d.v_is_k);
  const Ws w = carve(p, ws_base);
  sfa_expand_kernel<<<static_cast<unsigned>(p.num_rows), kExpandThreads, 0, st>>>(p, d, w);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return static_cast<int>(e);
  return p.bf16 ? launch<true>(p, d, w, l, st) : launch<false>(p, d, w, l, st);
}

}  // namespace kvflash::cuda
