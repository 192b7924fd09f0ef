// IFA on CUDA: the whole CPU feature set (src/cpu/ifa/ifa_kernel-inl.h, docs/semantics.md §2) for
// device tensors.
// STATUS: compiled (sm_80, sm_90a), never run: no GPU was available when it was written
// (docs/gpu.md lists what remains to verify).
//
// Kernels, queued in this order on the run's stream (fixed per plan, no host synchronisation):
//  1. upload (one or more): the per-sequence table (K/V bases and strides, lengths, chunk numbers)
//     from kernel parameters into the workspace;
//  2. prologue: reads kv_padding_size in stream order, derives each batch's first position and
//     state (run / empty / mask-range fault), clears the fault record and the bad-slot minima;
//  3. chunk kernel: one CTA per (chunk, kv head, head block). It first checks the block ids of its
//     range (a bad one: atomicMin into the batch's bad slot, nothing read), then streams the K/V
//     rows of its kv head through a 2-stage cp.async pipeline into shared memory, tile by tile
//     (32 positions), for up to 16 query heads of that kv head: each K/V byte is read from memory
//     once per head block (once when G <= 16). Scores: warp w owns heads w, w+4, ...; lane t scores
//     position t (fp32 dot in channel order; int8 dequantised in registers as (x + off) * sc), then
//     the warp folds its head's tile into the online softmax (core/online_softmax.hpp, warp
//     butterfly reductions broadcast from lane 0). P.V: thread i owns channels i + 128c of every
//     head, accumulating positions in order. The CTA leaves (max, sum, any_unmasked, acc) per head.
//  4. report: the first faulted batch's core::FaultRecord at the workspace's start, the fields the
//     CPU prologue fills (cpu/ifa/ifa_workspace.cpp: ifa_report_faults);
//  5. merge: one CTA per (b, h): chunks combined in chunk order (the CPU's log-sum-exp merge),
//     output rounding (fp16/bf16/fp32, int8 quant with quant_scale2/offset2), LSE, the empty,
//     fully-masked and fault rows.
// Every sum has one fixed order, so results are bit-identical across runs and do not depend on
// the other sequences of the batch (chunk split points depend on kv_len[b] only).
//
// Why SIMT and not mma.sync: decode attention reads each K/V element once and does 2*G flops per
// element; for G <= 8 the SIMT work per 16 KB tile (G*32*D FMAs, twice) is in the range an SM
// hides behind its share of HBM bandwidth, and it keeps every rounding rule (NaN/inf scores,
// per-element antiquant) identical to the CPU's. Tensor cores (G in the MMA's M dimension) are the
// next step where the benchmark shows the SIMT path compute-bound (G >= 8, D = 128).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "core/device_fault.hpp"
#include "core/online_softmax.hpp"
#include "cuda/ifa/ifa_launch.hpp"
#include "ops/ifa/ifa_problem.hpp"

namespace kvflash::cuda {
namespace {

// The plan's params and the run's bound data, by value: the structs the CPU kernels read.
using P = core::IfaParams;
using D = core::IfaData;

constexpr DType kF32 = DType::kFloat32, kF16 = DType::kFloat16, kI8 = DType::kInt8,
                kBf16 = DType::kBFloat16;
constexpr float kMasked = -1.0e12f;                          // core::kMaskedScore
constexpr int kHeadsPerWarp = kIfaCudaMaxHeads / kIfaCudaWarps;

// The workspace's arrays (ifa_cuda_layout).
struct Ws {
  core::FaultRecord* fault;
  IfaCudaSeq* seqs;
  int64_t* kv_begin;
  int32_t* state;
  unsigned long long* bad_slot;
  float* slots;
  int64_t head_floats;
};

Ws carve(const IfaCudaLayout& l, void* base) {
  auto* b = static_cast<unsigned char*>(base);
  return Ws{reinterpret_cast<core::FaultRecord*>(b + l.fault),
            reinterpret_cast<IfaCudaSeq*>(b + l.seqs),
            reinterpret_cast<int64_t*>(b + l.kv_begin),
            reinterpret_cast<int32_t*>(b + l.state),
            reinterpret_cast<unsigned long long*>(b + l.bad_slot),
            reinterpret_cast<float*>(b + l.slots),
            l.head_floats};
}

__device__ __forceinline__ float half_bits(uint16_t x) { return __half2float(__ushort_as_half(x)); }
__device__ __forceinline__ float bf16_bits(uint16_t x) {
  return __bfloat162float(__ushort_as_bfloat16(x));
}

// Element i of a buffer of dtype fp32 / fp16 / bf16, widened.
__device__ __forceinline__ float load_f(const void* base, DType dtype, int64_t i) {
  if (dtype == kF32) return static_cast<const float*>(base)[i];
  const uint16_t x = static_cast<const uint16_t*>(base)[i];
  return dtype == kF16 ? half_bits(x) : bf16_bits(x);
}

__device__ __forceinline__ float warp_max_nan(float x) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) x = core::softmax_max_nan(x, __shfl_xor_sync(0xffffffffu, x, o));
  return __shfl_sync(0xffffffffu, x, 0);  // one value for every lane (+0 / -0 included)
}

__device__ __forceinline__ float warp_sum(float x) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
  return __shfl_sync(0xffffffffu, x, 0);
}

__device__ __forceinline__ int8_t to_int8_sat(float x) {
  if (x != x) return 0;
  const float c = fminf(fmaxf(x, -129.0f), 128.0f);
  const float r = fminf(fmaxf(rintf(c), -128.0f), 127.0f);  // rintf: half to even, as the CPU
  return static_cast<int8_t>(static_cast<int>(r));
}

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void cp_async_wait1() { asm volatile("cp.async.wait_group 1;\n" ::); }

// ---- 1. upload ---------------------------------------------------------------------------------

__global__ void upload_kernel(IfaCudaSeqUpload u, IfaCudaSeq* seqs) {
  const int i = static_cast<int>(threadIdx.x);
  if (i < u.count) seqs[u.first + i] = u.seqs[i];
}

// ---- 2. prologue -------------------------------------------------------------------------------

__global__ void prologue_kernel(P p, D d, Ws w) {
  if (threadIdx.x == 0) *w.fault = core::FaultRecord{};
  const int64_t pad = p.left_padding ? d.kv_padding_size[0] : 0;
  for (int64_t b = threadIdx.x; b < p.batch; b += blockDim.x) {
    const int64_t len = w.seqs[b].kv_len;
    const core::IfaKvRange r = core::ifa_kv_range_of(p.left_padding, p.kv_seq_len, len, pad);
    const int32_t state = core::ifa_range_state(p, r.empty, r.begin, len);
    w.kv_begin[b] = r.begin;
    w.state[b] = state;
    w.bad_slot[b] = kIfaCudaNoBadSlot;
  }
}

// ---- 3. chunk kernel ---------------------------------------------------------------------------

// Widens 8 packed 16-bit values.
template <DType kKv>
__device__ __forceinline__ void widen8(const uint4& v, float* f) {
  const uint16_t* h = reinterpret_cast<const uint16_t*>(&v);
#pragma unroll
  for (int i = 0; i < 8; ++i) f[i] = kKv == kF16 ? half_bits(h[i]) : bf16_bits(h[i]);
}

// The K/V element (row, channel dd) of a tile row in shared memory, widened; int8 dequantised.
template <DType kKv>
__device__ __forceinline__ float row_elem(const unsigned char* row, int64_t dd) {
  if constexpr (kKv == kI8) {
    return static_cast<float>(reinterpret_cast<const int8_t*>(row)[dd]);
  } else {
    const uint16_t x = reinterpret_cast<const uint16_t*>(row)[dd];
    return kKv == kF16 ? half_bits(x) : bf16_bits(x);
  }
}

// q_i . k_t over D channels in channel order (one fp32 accumulator). int8 K: each element
// dequantised as (x + off) * sc before its product (docs/semantics.md §2.9), so non-finite scales behave as in
// the reference.
template <DType kKv>
__device__ __forceinline__ float dot_row(const float* q, const unsigned char* krow, int64_t dim,
                                         bool vec, const float* ksc, const float* koff) {
  float acc = 0.0f;
  if constexpr (kKv == kI8) {
    if (vec) {  // 16 channels per 16-byte read
      for (int64_t c = 0; c < dim; c += 16) {
        const int4 v = *reinterpret_cast<const int4*>(krow + c);
        const int8_t* x = reinterpret_cast<const int8_t*>(&v);
#pragma unroll
        for (int i = 0; i < 16; ++i) {
          const float k = (static_cast<float>(x[i]) + koff[c + i]) * ksc[c + i];
          acc = fmaf(q[c + i], k, acc);
        }
      }
      return acc;
    }
    for (int64_t c = 0; c < dim; ++c) {
      acc = fmaf(q[c], (row_elem<kKv>(krow, c) + koff[c]) * ksc[c], acc);
    }
    return acc;
  } else {
    (void)ksc, (void)koff;
    if (vec) {  // 8 channels per 16-byte read: consecutive lanes' rows hit distinct banks
      for (int64_t c = 0; c < dim; c += 8) {
        float k[8];
        widen8<kKv>(*reinterpret_cast<const uint4*>(krow + 2 * c), k);
#pragma unroll
        for (int i = 0; i < 8; ++i) acc = fmaf(q[c + i], k[i], acc);
      }
      return acc;
    }
    for (int64_t c = 0; c < dim; ++c) acc = fmaf(q[c], row_elem<kKv>(krow, c), acc);
    return acc;
  }
}

struct TileRows {
  const unsigned char* k[kIfaCudaStages][kIfaCudaTile];
  const unsigned char* v[kIfaCudaStages][kIfaCudaTile];
  int vec[kIfaCudaStages];  // every row of the tile can be copied in 16-byte pieces
};

// Queues the K/V rows of positions [j0, j0 + n) of (b, n2) into stage `stage`: cp.async 16-byte
// pieces when every row is contiguous and aligned, else element loads (slow path for strided or
// misaligned views). Contains a __syncthreads: call from every thread.
__device__ void issue_tile(const P& p, const D& d, const IfaCudaSeq& seq, int64_t b, int64_t n2,
                           int64_t j0, int n, int stage, int64_t es, int64_t row_bytes,
                           unsigned char* ks, unsigned char* vs, TileRows& rows) {
  const int tid = static_cast<int>(threadIdx.x);
  bool ok = true;
  if (tid < n) {
    const int64_t j = j0 + tid;
    int64_t ko, vo;
    if (p.k.paged) {
      // The ids of this range were checked before any tile was issued.
      const int64_t blk =
          d.block_table[b * p.block_table.s0 + (j / p.block_table.block_size) * p.block_table.s1];
      const int64_t o = j % p.block_table.block_size;
      ko = blk * p.k.s_block + o * seq.k_s_pos + n2 * seq.k_s_head;
      vo = blk * p.v.s_block + o * seq.v_s_pos + n2 * seq.v_s_head;
    } else {
      ko = j * seq.k_s_pos + n2 * seq.k_s_head;
      vo = j * seq.v_s_pos + n2 * seq.v_s_head;
    }
    const auto* kr = static_cast<const unsigned char*>(seq.k_base) + ko * es;
    const auto* vr = static_cast<const unsigned char*>(seq.v_base) + vo * es;
    rows.k[stage][tid] = kr;
    rows.v[stage][tid] = vr;
    ok = seq.k_s_dim == 1 && seq.v_s_dim == 1 && (reinterpret_cast<uintptr_t>(kr) & 15) == 0 &&
         (reinterpret_cast<uintptr_t>(vr) & 15) == 0;
  }
  const int vec = __syncthreads_and(ok ? 1 : 0) && (p.head_dim * es) % 16 == 0;
  if (tid == 0) rows.vec[stage] = vec;
  unsigned char* kd = ks + static_cast<int64_t>(stage) * kIfaCudaTile * row_bytes;
  unsigned char* vd = vs + static_cast<int64_t>(stage) * kIfaCudaTile * row_bytes;
  if (vec) {
    const int pieces = static_cast<int>(p.head_dim * es / 16);
    for (int i = tid; i < n * pieces; i += kIfaCudaThreads) {
      const int r = i / pieces, c = i % pieces;
      cp_async16(kd + r * row_bytes + 16 * c, rows.k[stage][r] + 16 * c);
      cp_async16(vd + r * row_bytes + 16 * c, rows.v[stage][r] + 16 * c);
    }
  } else {
    const int64_t dim = p.head_dim;
    for (int64_t i = tid; i < n * dim; i += kIfaCudaThreads) {
      const int64_t r = i / dim, c = i % dim;
      if (es == 1) {
        kd[r * row_bytes + c] = rows.k[stage][r][c * seq.k_s_dim];
        vd[r * row_bytes + c] = rows.v[stage][r][c * seq.v_s_dim];
      } else {
        reinterpret_cast<uint16_t*>(kd + r * row_bytes)[c] =
            reinterpret_cast<const uint16_t*>(rows.k[stage][r])[c * seq.k_s_dim];
        reinterpret_cast<uint16_t*>(vd + r * row_bytes)[c] =
            reinterpret_cast<const uint16_t*>(rows.v[stage][r])[c * seq.v_s_dim];
      }
    }
  }
}

// kDims: channels per thread in P.V (ceil(D / 128): 1, 2 or 4), a template parameter so the
// accumulators of a D <= 128 problem take 16 registers, not 64; that kernel is also held to 128
// registers (4 CTAs = 16 warps per SM keep more loads in flight; ptxas reports no or tiny spills).
template <DType kKv, int kDims>
__global__ void __launch_bounds__(kIfaCudaThreads, kDims == 1 ? 4 : 1)
    chunk_kernel(P p, D d, Ws w, int heads_per_cta, int64_t row_bytes) {
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ TileRows rows;
  __shared__ int bad;
  const int tid = static_cast<int>(threadIdx.x), lane = tid & 31, warp = tid >> 5;
  const int64_t kvn = p.num_kv_heads, dim = p.head_dim, group = p.group;
  const int64_t cg = static_cast<int64_t>(blockIdx.x) / kvn;
  const int64_t n2 = static_cast<int64_t>(blockIdx.x) % kvn;
  const int64_t h_first = static_cast<int64_t>(blockIdx.y) * heads_per_cta;
  const int nh = static_cast<int>(group - h_first < heads_per_cta ? group - h_first
                                                                  : heads_per_cta);
  const IfaCudaSeq* seqs = w.seqs;
  const int64_t b =
      ifa_cuda_find_batch([seqs](int64_t i) { return seqs[i].chunk_first; }, p.batch, cg);
  const IfaCudaSeq seq = seqs[b];
  // An empty or faulted batch is never read: its merge writes its rows.
  if (w.state[b] != core::kIfaBatchRun) return;
  const IfaCudaRange range =
      ifa_cuda_chunk_range(w.kv_begin[b], seq.kv_len, cg - seq.chunk_first);
  const int64_t begin = range.begin, end = range.end;

  if (p.k.paged) {
    // Block ids of this chunk, before anything is read through them (docs/semantics.md decision 13b). The
    // batch's lowest bad slot over all its chunks is what the report names (the CPU's first).
    if (tid == 0) bad = 0;
    __syncthreads();
    for (int64_t slot = begin / p.block_table.block_size + tid;
         slot <= (end - 1) / p.block_table.block_size; slot += kIfaCudaThreads) {
      const int32_t id = d.block_table[b * p.block_table.s0 + slot * p.block_table.s1];
      if (core::ifa_bad_block_id(p, id)) {
        atomicMin(&w.bad_slot[b], static_cast<unsigned long long>(slot));
        atomicOr(&bad, 1);
      }
    }
    __syncthreads();
    if (bad) return;
  }

  const IfaCudaSmem sm = ifa_cuda_smem(heads_per_cta, dim, row_bytes, kKv == kI8);
  float* q_s = reinterpret_cast<float*>(smem + sm.q);
  unsigned char* k_s = smem + sm.k;
  unsigned char* v_s = smem + sm.v;
  float* p_s = reinterpret_cast<float*>(smem + sm.p);
  float* alpha_s = reinterpret_cast<float*>(smem + sm.alpha);
  float* ksc = reinterpret_cast<float*>(smem + sm.kq);
  float* koff = ksc + dim;

  for (int64_t i = tid; i < nh * dim; i += kIfaCudaThreads) {
    const int64_t h = n2 * group + h_first + i / dim;
    q_s[i] = load_f(d.q, p.q_dtype, p.q.index(b, h, i % dim));
  }
  // This thread's channels (P.V) and, for int8, their value scale and offset in registers.
  float vsc[kDims], voff[kDims];
#pragma unroll
  for (int c = 0; c < kDims; ++c) {
    vsc[c] = 1.0f;
    voff[c] = 0.0f;
  }
  if constexpr (kKv == kI8) {
    for (int64_t c = tid; c < dim; c += kIfaCudaThreads) {
      ksc[c] = load_f(d.antiquant_scale, p.antiquant_scale.dtype, p.antiquant_scale.index(0, n2, c));
      koff[c] = p.antiquant_offset.present ? load_f(d.antiquant_offset, p.antiquant_offset.dtype,
                                                    p.antiquant_offset.index(0, n2, c))
                                           : 0.0f;
    }
#pragma unroll
    for (int c = 0; c < kDims; ++c) {
      const int64_t dd = tid + c * kIfaCudaThreads;
      if (dd < dim) {
        vsc[c] = load_f(d.antiquant_scale, p.antiquant_scale.dtype,
                        p.antiquant_scale.index(1, n2, dd));
        voff[c] = p.antiquant_offset.present
                      ? load_f(d.antiquant_offset, p.antiquant_offset.dtype,
                               p.antiquant_offset.index(1, n2, dd))
                      : 0.0f;
      }
    }
  }

  float acc[kIfaCudaMaxHeads][kDims];
#pragma unroll
  for (int i = 0; i < kIfaCudaMaxHeads; ++i)
#pragma unroll
    for (int c = 0; c < kDims; ++c) acc[i][c] = 0.0f;
  // Softmax state of the warp's heads (warp + 4k), the same in every lane.
  core::SoftmaxState st[kHeadsPerWarp];
  bool any_st[kHeadsPerWarp];
#pragma unroll
  for (int k = 0; k < kHeadsPerWarp; ++k) any_st[k] = false;

  const int64_t es = ifa_cuda_dtype_size(static_cast<int32_t>(kKv));
  const auto* mask = static_cast<const uint8_t*>(d.mask);
  const int64_t tiles = (end - begin + kIfaCudaTile - 1) / kIfaCudaTile;
  const auto tile_n = [&](int64_t t) {
    const int64_t left = end - (begin + t * kIfaCudaTile);
    return static_cast<int>(left < kIfaCudaTile ? left : kIfaCudaTile);
  };
  issue_tile(p, d, seq, b, n2, begin, tile_n(0), 0, es, row_bytes, k_s, v_s, rows);
  cp_async_commit();
  for (int64_t t = 0; t < tiles; ++t) {
    const int stage = static_cast<int>(t & 1);
    if (t + 1 < tiles) {
      issue_tile(p, d, seq, b, n2, begin + (t + 1) * kIfaCudaTile, tile_n(t + 1), stage ^ 1, es,
                 row_bytes, k_s, v_s, rows);
    }
    cp_async_commit();  // possibly empty: keeps "wait for all but the newest group" uniform
    cp_async_wait1();
    __syncthreads();
    const int n = tile_n(t);
    const int64_t j0 = begin + t * kIfaCudaTile;
    const unsigned char* kt = k_s + static_cast<int64_t>(stage) * kIfaCudaTile * row_bytes;
    const unsigned char* vt = v_s + static_cast<int64_t>(stage) * kIfaCudaTile * row_bytes;
    const bool vec = rows.vec[stage] != 0;

    // Scores and the online softmax: warp `warp` owns heads warp + 4k, lane = position.
#pragma unroll
    for (int k = 0; k < kHeadsPerWarp; ++k) {
      const int i = warp + k * kIfaCudaWarps;
      if (i >= nh) break;
      const int64_t h = n2 * group + h_first + i;
      const int64_t j = j0 + lane;
      float s = -INFINITY;  // padding past n: weight exactly 0
      bool unmasked = false;
      if (lane < n) {
        s = dot_row<kKv>(q_s + i * dim, kt + lane * row_bytes, dim, vec, ksc, koff) * p.scale;
        if (p.pse.present) s += load_f(d.pse, p.pse.dtype, p.pse.index(b, h, j));
        if (mask != nullptr && mask[p.mask.index(b, h, j)] != 0) {
          s = kMasked;
        } else {
          unmasked = true;
        }
      }
      any_st[k] = any_st[k] || __any_sync(0xffffffffu, unmasked);
      // The CPU's softmax_fold_tile, one position per lane (m_new is the same in every lane, so
      // the vote is taken by the whole warp or by none of it).
      const core::SoftmaxTile tile = core::softmax_tile_begin(
          st[k], warp_max_nan(s), [s] { return __any_sync(0xffffffffu, s != s) != 0; },
          core::DeviceExp{});
      const float pw = expf(s - tile.pivot);
      core::softmax_tile_end(st[k], tile, warp_sum(pw));
      p_s[i * kIfaCudaTile + lane] = pw;
      if (lane == 0) alpha_s[i] = tile.alpha;
    }
    __syncthreads();

    // P.V: channels tid + 128c of every head, positions in order.
#pragma unroll
    for (int i = 0; i < kIfaCudaMaxHeads; ++i) {
      if (i < nh) {
        const float a = alpha_s[i];
        if (a != 1.0f) {
#pragma unroll
          for (int c = 0; c < kDims; ++c) acc[i][c] *= a;
        }
      }
    }
    for (int r = 0; r < n; ++r) {
      const unsigned char* vrow = vt + r * row_bytes;
      float v[kDims];
#pragma unroll
      for (int c = 0; c < kDims; ++c) {
        const int64_t dd = tid + c * kIfaCudaThreads;
        v[c] = dd < dim ? row_elem<kKv>(vrow, dd) : 0.0f;
        if constexpr (kKv == kI8) v[c] = (v[c] + voff[c]) * vsc[c];
      }
#pragma unroll
      for (int i = 0; i < kIfaCudaMaxHeads; ++i) {
        if (i < nh) {
          const float pw = p_s[i * kIfaCudaTile + r];
#pragma unroll
          for (int c = 0; c < kDims; ++c) acc[i][c] = fmaf(pw, v[c], acc[i][c]);
        }
      }
    }
    __syncthreads();  // the next iteration refills this stage and p_s
  }

  // The chunk's slot: acc[D] then the header of each head.
  const int64_t hf = w.head_floats, d4 = hf - kIfaCudaHeaderFloats;
  float* slot = w.slots + ifa_cuda_slot(cg, n2, h_first, kvn, group, hf);
#pragma unroll
  for (int i = 0; i < kIfaCudaMaxHeads; ++i) {
    if (i < nh) {
#pragma unroll
      for (int c = 0; c < kDims; ++c) {
        const int64_t dd = tid + c * kIfaCudaThreads;
        if (dd < dim) slot[i * hf + dd] = acc[i][c];
      }
    }
  }
  if (lane == 0) {
#pragma unroll
    for (int k = 0; k < kHeadsPerWarp; ++k) {
      const int i = warp + k * kIfaCudaWarps;
      if (i < nh) {
        slot[i * hf + d4 + 0] = st[k].max;
        slot[i * hf + d4 + 1] = st[k].sum;
        slot[i * hf + d4 + 2] = any_st[k] ? 1.0f : 0.0f;
      }
    }
  }
}

// ---- 4. fault report ---------------------------------------------------------------------------

__global__ void report_kernel(P p, D d, Ws w) {
  for (int64_t b = 0; b < p.batch; ++b) {
    core::FaultRecord f;
    if (w.state[b] == core::kIfaBatchFaultMaskRange) {
      f = core::fault_of(core::kFaultOpIfa, core::kFaultPaddingPastMask, b);
      f.value = p.left_padding ? d.kv_padding_size[0] : 0;
      f.limit = p.mask_cols;
    } else if (w.bad_slot[b] != kIfaCudaNoBadSlot) {
      f = core::fault_of(core::kFaultOpIfa, core::kFaultBlockId, b);
      f.slot = static_cast<int64_t>(w.bad_slot[b]);
      f.value = d.block_table[b * p.block_table.s0 + f.slot * p.block_table.s1];
      f.limit = p.block_table.num_blocks;
    } else {
      continue;
    }
    f.len = w.seqs[b].kv_len;
    f.begin = w.kv_begin[b];
    *w.fault = f;
    return;
  }
}

// ---- 5. merge ----------------------------------------------------------------------------------

// Output element (b, h, dd) from the normalised fp32 value o.
__device__ __forceinline__ void write_out(const P& p, const D& d, int64_t b, int64_t h, int64_t dd,
                                          float o) {
  const int64_t at = b * p.out_s0 + h * p.out_s1 + dd * p.out_s2;
  switch (p.out_dtype) {
    case kI8: {
      const float qs = load_f(d.quant_scale2, p.quant_scale2.dtype, p.quant_scale2.index(0, h, dd));
      const float qo = p.quant_offset2.present
                           ? load_f(d.quant_offset2, p.quant_offset2.dtype,
                                    p.quant_offset2.index(0, h, dd))
                           : 0.0f;
      static_cast<int8_t*>(d.out)[at] = to_int8_sat(__fadd_rn(__fmul_rn(o, qs), qo));
      break;
    }
    case kF32:
      static_cast<float*>(d.out)[at] = o;
      break;
    case kF16:
      static_cast<uint16_t*>(d.out)[at] = __half_as_ushort(__float2half_rn(o));
      break;
    default:
      static_cast<uint16_t*>(d.out)[at] = __bfloat16_as_ushort(__float2bfloat16_rn(o));
      break;
  }
}

// The fault result (core::IfaBatchState): NaN (the CPU's quiet-NaN bits), int8 0, LSE NaN.
__device__ void write_fault_row(const P& p, const D& d, int64_t b, int64_t h) {
  for (int64_t dd = threadIdx.x; dd < p.head_dim; dd += blockDim.x) {
    const int64_t at = b * p.out_s0 + h * p.out_s1 + dd * p.out_s2;
    switch (p.out_dtype) {
      case kI8:
        static_cast<int8_t*>(d.out)[at] = 0;
        break;
      case kF32:
        static_cast<float*>(d.out)[at] = NAN;
        break;
      case kF16:
        static_cast<uint16_t*>(d.out)[at] = 0x7E00;
        break;
      default:
        static_cast<uint16_t*>(d.out)[at] = 0x7FC0;
        break;
    }
  }
  if (d.lse != nullptr && threadIdx.x == 0) d.lse[b * p.lse_s0 + h * p.lse_s1] = NAN;
}

__global__ void __launch_bounds__(kIfaCudaMergeThreads) merge_kernel(P p, D d, Ws w) {
  const int64_t b = static_cast<int64_t>(blockIdx.x) / p.num_heads;
  const int64_t h = static_cast<int64_t>(blockIdx.x) % p.num_heads;
  const int64_t n2 = h / p.group, g = h % p.group;
  const int32_t state = w.state[b];
  if (state >= core::kIfaBatchFaultBlockId || w.bad_slot[b] != kIfaCudaNoBadSlot) {
    write_fault_row(p, d, b, h);
    return;
  }
  const IfaCudaSeq seq = w.seqs[b];
  // An empty batch (left padding start < 0) ran no chunk: it merges like kv_len 0.
  const int64_t chunks = state == core::kIfaBatchRun ? ifa_cuda_num_chunks(seq.kv_len) : 0;
  const int64_t hf = w.head_floats, d4 = hf - kIfaCudaHeaderFloats;
  const auto part = [&](int64_t c) {
    return w.slots + ifa_cuda_slot(seq.chunk_first + c, n2, g, p.num_kv_heads, p.group, hf);
  };
  float m_total = -INFINITY;
  bool any = false;
  for (int64_t c = 0; c < chunks; ++c) {
    m_total = core::softmax_max_nan(m_total, part(c)[d4 + 0]);
    any = any || part(c)[d4 + 2] != 0.0f;
  }
  if (chunks == 0 || (p.zero_fully_masked_rows && !any)) {
    for (int64_t dd = threadIdx.x; dd < p.head_dim; dd += blockDim.x) write_out(p, d, b, h, dd, 0.0f);
    if (d.lse != nullptr && threadIdx.x == 0) d.lse[b * p.lse_s0 + h * p.lse_s1] = -INFINITY;
    return;
  }
  // Fixed-order log-sum-exp merge (the CPU's ifa_detail::merge_impl): a part of weight 0 is still
  // applied, so NaN or inf in its accumulator reaches the output as in the reference.
  const auto weight = [&](int64_t c) {
    return core::softmax_merge_weight(part(c)[d4 + 0], m_total, core::DeviceExp{});
  };
  float total = 0.0f;
  for (int64_t c = 0; c < chunks; ++c) total = __fadd_rn(total, __fmul_rn(weight(c), part(c)[d4 + 1]));
  const float sum = core::softmax_final_sum(m_total, total);  // every score -inf: no softmax
  for (int64_t dd = threadIdx.x; dd < p.head_dim; dd += blockDim.x) {
    float acc = 0.0f;
    for (int64_t c = 0; c < chunks; ++c) {
      const float wc = weight(c), x = part(c)[dd];
      acc = c == 0 ? (wc == 1.0f ? x : x * wc) : fmaf(wc, x, acc);
    }
    write_out(p, d, b, h, dd, acc / sum);
  }
  if (d.lse != nullptr && threadIdx.x == 0) {
    d.lse[b * p.lse_s0 + h * p.lse_s1] = core::softmax_lse(m_total, sum, core::DeviceLog{});
  }
}

template <DType kKv, int kDims>
int launch_chunks(const P& p, const D& d, const Ws& w, const IfaCudaGeometry& g, cudaStream_t st) {
  const int smem = static_cast<int>(g.smem_bytes);
  if (cudaError_t e = cudaFuncSetAttribute(chunk_kernel<kKv, kDims>,
                                           cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
      e != cudaSuccess) {
    return static_cast<int>(e);
  }
  const dim3 grid(static_cast<unsigned>(g.chunk_ctas), static_cast<unsigned>(g.head_blocks));
  chunk_kernel<kKv, kDims>
      <<<grid, kIfaCudaThreads, smem, st>>>(p, d, w, g.heads_per_cta, g.row_bytes);
  return static_cast<int>(cudaGetLastError());
}

template <DType kKv>
int launch_chunks(const P& p, const D& d, const Ws& w, const IfaCudaGeometry& g, cudaStream_t st) {
  if (p.head_dim <= kIfaCudaThreads) return launch_chunks<kKv, 1>(p, d, w, g, st);
  if (p.head_dim <= 2 * kIfaCudaThreads) return launch_chunks<kKv, 2>(p, d, w, g, st);
  return launch_chunks<kKv, kIfaCudaMaxDimsPerThread>(p, d, w, g, st);
}

}  // namespace

int ifa_cuda_upload(const IfaCudaSeqUpload& u, const IfaCudaLayout& l, void* base, void* stream) {
  auto* seqs = reinterpret_cast<IfaCudaSeq*>(static_cast<unsigned char*>(base) + l.seqs);
  upload_kernel<<<1, 64, 0, static_cast<cudaStream_t>(stream)>>>(u, seqs);
  static_assert(kIfaCudaSeqsPerUpload <= 64);
  return static_cast<int>(cudaGetLastError());
}

int ifa_cuda_launch(const P& p, const D& d, const IfaCudaLayout& l, const IfaCudaGeometry& g,
                    void* base, void* stream) {
  if (g.chunk_ctas > 0x7fffffff || g.merge_ctas > 0x7fffffff) {
    return static_cast<int>(cudaErrorInvalidConfiguration);
  }
  const auto st = static_cast<cudaStream_t>(stream);
  const Ws w = carve(l, base);
  // Always queued, also for an empty batch: it clears the fault record (core/device_fault.hpp).
  prologue_kernel<<<1, 256, 0, st>>>(p, d, w);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return static_cast<int>(e);
  if (g.chunk_ctas > 0) {
    int e = 0;
    switch (p.k.dtype) {
      case kI8:
        e = launch_chunks<kI8>(p, d, w, g, st);
        break;
      case kBf16:
        e = launch_chunks<kBf16>(p, d, w, g, st);
        break;
      default:
        e = launch_chunks<kF16>(p, d, w, g, st);
        break;
    }
    if (e != 0) return e;
  }
  report_kernel<<<1, 1, 0, st>>>(p, d, w);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return static_cast<int>(e);
  if (g.merge_ctas > 0) {
    merge_kernel<<<static_cast<unsigned>(g.merge_ctas), kIfaCudaMergeThreads, 0, st>>>(p, d, w);
    if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return static_cast<int>(e);
  }
  return 0;
}

}  // namespace kvflash::cuda
