// SFA on CUDA: the correctness path (SIMT fp32), the same arithmetic contract as the CPU kernel
// (src/cpu/sfa/sfa_kernel-inl.h): fp32 scores, an online softmax in fp32 with
// core/online_softmax.hpp's non-finite rules, fp32 P.V accumulation, every index rule of
// docs/semantics.md §3.4.
//
// One CTA = one query row r and a block of up to kHeads heads. The row's selection is expanded
// (by one thread, in gather order) into tiles of kTile = 32 positions; each tile's latent+rope rows
// (and value rows unless V aliases K) are gathered once into shared memory as 16-bit values and
// used by every head of the block:
//   scores: warp w owns heads 2w, 2w+1; lane t computes (Q[h] . K[t]) over d = 0..575 in order;
//   softmax: per head inside its warp (xor-butterfly max and sum: a + b == b + a, so every lane
//            holds the same bits);
//   P.V:    thread i owns output dims i and i + 256 of every head, accumulating over t in order.
// Each result therefore has one fixed order of accumulation: the output bits do not depend on
// scheduling (determinism), only on the tile size.
//
// NOT tensor cores: this is the fallback for what the mma.sync path (sfa_mma.cu) does not take
// (sfa_mma_geometry.hpp's sfa_choose_path: rows that are not contiguous and 16-byte aligned,
// devices below sm_80, a tile that does not fit the shared memory) and the kernel that path is
// checked against on a GPU. sfa_launch (bottom) queues the prologue, one of the two and the fault
// report.
// STATUS: compiled, never run.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/sfa/sfa_device.cuh"
#include "cuda/sfa/sfa_launch.hpp"

namespace kvflash::cuda {
namespace {

using SfaProblem = SfaLaunchProblem;
using SfaData = core::SfaData;

constexpr int kTile = 32;      // positions per gathered tile: one per lane
constexpr int kHeads = 16;     // heads per CTA: two per warp
constexpr int kThreads = 256;  // 8 warps
constexpr int kKStride = kQk + 2;  // 16-bit elements; 289 words per row: lanes hit distinct banks
constexpr int kDimsPerThread = kNope / kThreads;

static_assert(kThreads / 32 * 2 == kHeads && kNope % kThreads == 0);

// ---- prologue: docs/semantics.md §3.3 on the device (core::sfa_resolve_lengths, the CPU's own
// function; the limits and the row map are ops/sfa/sfa_problem.hpp's too) ---------------------

__global__ void resolve_kernel(SfaProblem p, SfaData d, Ws w) {
  *w.fault = 0;
  core::FaultRecord fault;  // stays "no fault" unless a length is bad
  const bool ok = core::sfa_resolve_lengths(p, d, w.batches, &fault);
  *w.record = fault;
  // Uncovered rows also when the lengths are bad: the MMA path reads the map before the fault word.
  for (int64_t r = 0; r < p.num_rows; ++r) {
    w.rows[r] = Row{};
    w.row_fault[r] = 0;
  }
  if (!ok) {
    *w.fault = kFaultLengths;
    return;
  }
  core::sfa_map_rows(p, w.batches, w.rows);
}

// ---- fault report: after the attention kernel, the first flagged row's record, found as the CPU
// finds it (core::sfa_row_fault_record) -----------------------------------------------------------

__global__ void report_kernel(SfaProblem p, SfaData d, Ws w) {
  if ((*w.fault & kFaultBlockId) == 0 || (*w.fault & kFaultLengths) != 0) return;
  core::FaultRecord fault;
  if (core::sfa_row_fault_record(p, d, w.row_fault, &fault)) *w.record = fault;
}

// ---- the attention kernel ----------------------------------------------------------------------

struct Smem {
  float q[kHeads][kQk];
  uint16_t kt[kTile][kKStride];
  uint16_t vt[kTile][kNope];
  float pw[kHeads][kTile];  // weights of the current tile
  float alpha[kHeads];      // rescale of the accumulators before the tile's P.V
  float fin_m[kHeads], fin_l[kHeads];
  int64_t k_off[kTile], r_off[kTile], v_off[kTile];
  // The selection cursor (thread 0) and what it tells the CTA.
  int64_t cur_k, cur_j, cur_end;
  int n;
  int ended;
  int any_selected;
  int faulted;
};

__global__ void __launch_bounds__(kThreads) sfa_kernel(SfaProblem p, SfaData d, Ws w) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  Smem& s = *reinterpret_cast<Smem*>(smem_raw);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int64_t r = blockIdx.x;
  const int64_t h0 = static_cast<int64_t>(blockIdx.y) * kHeads;
  const int nh = static_cast<int>(p.num_heads - h0 < kHeads ? p.num_heads - h0 : kHeads);
  const bool bf16 = p.bf16;
  const float nan = __int_as_float(0x7fc00000);

  if (*w.fault & kFaultLengths) {  // bad lengths: every output NaN (as the CPU's write_all_nan)
    write_row_value(p, d, r, h0, nh, nan, nan);
    return;
  }
  const RowLimits lim = row_limits(p, d, r);
  if (lim.invalid) {
    write_row_value(p, d, r, h0, nh, 0.0f, 0.0f);
    return;
  }
  const int64_t b = lim.b;
  const Batch bt = lim.bt;
  const int64_t thr = lim.thr;
  const int64_t valid_count = lim.valid_count;
  const int32_t* idx = d.indices;

  // Block ids of every selected range, checked before any row is read: a bad one makes the row NaN
  // (the CPU stops at the same entry; what it accumulated before is discarded either way).
  if (tid == 0) {
    s.faulted = 0;
    if (p.paged) {
      for (int64_t k = 0; k < valid_count; ++k) {
        int64_t bg, en;
        if (!selected_range(idx[p.indices.index(r, 0, k)], p.sparse_block_size, thr, &bg, &en))
          break;
        if (bg < en && range_faults(p, d, b, bg, en)) {
          s.faulted = 1;
          break;
        }
      }
    }
    s.cur_k = 0;
    s.cur_j = s.cur_end = 0;
    s.ended = 0;
    s.any_selected = 0;
  }
  __syncthreads();
  if (s.faulted) {
    if (tid == 0) {
      w.row_fault[r] = 1;
      atomicOr(w.fault, kFaultBlockId);
    }
    write_row_value(p, d, r, h0, nh, nan, nan);
    return;
  }

  for (int i = tid; i < kHeads * kQk; i += kThreads) {
    const int h = i / kQk, dd = i % kQk;
    float x = 0.0f;
    if (h < nh) {
      x = dd < kNope
              ? to_f32(static_cast<const uint16_t*>(d.q)[p.q.index(r, h0 + h, dd)], bf16)
              : to_f32(
                    static_cast<const uint16_t*>(d.q_rope)[p.q_rope.index(r, h0 + h, dd - kNope)],
                    bf16);
    }
    s.q[h][dd] = x;
  }
  float acc[kHeads][kDimsPerThread];
#pragma unroll
  for (int h = 0; h < kHeads; ++h)
#pragma unroll
    for (int c = 0; c < kDimsPerThread; ++c) acc[h][c] = 0.0f;
  // Softmax state of the warp's two heads (the same in every lane).
  core::SoftmaxState st[2];

  const uint16_t* kp = static_cast<const uint16_t*>(d.k);
  const uint16_t* krp = static_cast<const uint16_t*>(d.k_rope);
  const uint16_t* vp = static_cast<const uint16_t*>(d.v);
  for (;;) {
    // Thread 0 expands the selection into the next tile (docs/semantics.md §3.4 step 2, gather
    // order).
    if (tid == 0) {
      int n = 0;
      while (n < kTile) {
        if (s.cur_j < s.cur_end) {
          const int64_t j = s.cur_j++;
          s.k_off[n] = kv_offset(p, d, p.k, bt, b, j);
          s.r_off[n] = kv_offset(p, d, p.k_rope, bt, b, j);
          s.v_off[n] = kv_offset(p, d, p.v, bt, b, j);
          ++n;
          continue;
        }
        if (s.ended || s.cur_k >= valid_count) break;
        int64_t bg, en;
        if (!selected_range(idx[p.indices.index(r, 0, s.cur_k)], p.sparse_block_size, thr, &bg,
                            &en)) {
          s.ended = 1;
          break;
        }
        ++s.cur_k;
        s.cur_j = bg;
        s.cur_end = en;
        if (bg < en) s.any_selected = 1;
      }
      s.n = n;
    }
    __syncthreads();
    const int n = s.n;
    if (n == 0) break;
    // Gather.
    for (int i = tid; i < n * kQk; i += kThreads) {
      const int t = i / kQk, dd = i % kQk;
      s.kt[t][dd] = dd < kNope ? kp[s.k_off[t] + dd * p.k.s_dim]
                               : krp[s.r_off[t] + (dd - kNope) * p.k_rope.s_dim];
    }
    if (!d.v_is_k) {
      for (int i = tid; i < n * kNope; i += kThreads) {
        const int t = i / kNope, dd = i % kNope;
        s.vt[t][dd] = vp[s.v_off[t] + dd * p.v.s_dim];
      }
    }
    __syncthreads();
    // Scores and the online softmax of the warp's heads.
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      const int h = warp * 2 + hh;
      float sc = -INFINITY;  // padding past n: weight exactly 0
      if (lane < n) {
        float dot = 0.0f;
        for (int dd = 0; dd < kQk; ++dd) dot = fmaf(s.q[h][dd], to_f32(s.kt[lane][dd], bf16), dot);
        sc = dot * p.scale;
      }
      float mx = sc;
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) {
        mx = core::softmax_max_nan(mx, __shfl_xor_sync(0xffffffffu, mx, o));
      }
      // The CPU's softmax_fold_tile, one position per lane. The butterfly's max keeps a NaN score
      // (the CPU finds one through its weight); the vote is the warp's, +inf max or not alike.
      const core::SoftmaxTile tile = core::softmax_tile_begin(
          st[hh], mx, [sc] { return __any_sync(0xffffffffu, sc != sc) != 0; }, core::DeviceExp{});
      const float pw = expf(sc - tile.pivot);
      float sum = pw;
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
      core::softmax_tile_end(st[hh], tile, sum);
      s.pw[h][lane] = pw;
      if (lane == 0) s.alpha[h] = tile.alpha;
    }
    __syncthreads();
    // P.V in gather order.
    const uint16_t* vrow = d.v_is_k ? &s.kt[0][0] : &s.vt[0][0];
    const int vstride = d.v_is_k ? kKStride : kNope;
#pragma unroll
    for (int h = 0; h < kHeads; ++h) {
      const float a = s.alpha[h];
      if (a != 1.0f) {
#pragma unroll
        for (int c = 0; c < kDimsPerThread; ++c) acc[h][c] *= a;
      }
    }
    for (int t = 0; t < n; ++t) {
      float v[kDimsPerThread];
#pragma unroll
      for (int c = 0; c < kDimsPerThread; ++c) {
        v[c] = to_f32(vrow[t * vstride + tid + c * kThreads], bf16);
      }
#pragma unroll
      for (int h = 0; h < kHeads; ++h) {
        const float pw = s.pw[h][t];
#pragma unroll
        for (int c = 0; c < kDimsPerThread; ++c) acc[h][c] = fmaf(pw, v[c], acc[h][c]);
      }
    }
    __syncthreads();  // the next tile overwrites kt, vt and pw
  }

  // Finish (sinks, empty selection, the final sum) per head, then divide and store.
  if (lane == 0) {
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      s.fin_m[warp * 2 + hh] = st[hh].max;
      s.fin_l[warp * 2 + hh] = st[hh].sum;
    }
  }
  __syncthreads();
  const bool any_selected = s.any_selected != 0;
  __syncthreads();
  if (tid < nh) {
    float m = s.fin_m[tid], l = s.fin_l[tid];
    const float* sink = d.sinks != nullptr ? d.sinks + (h0 + tid) * p.sinks_s0 : nullptr;
    s.alpha[tid] = finish_softmax(sink, d.sinks != nullptr || any_selected, m, l);
    s.fin_m[tid] = m;
    s.fin_l[tid] = l;
    if (d.softmax_max != nullptr) {
      d.softmax_max[p.softmax_max.index(r, h0 + tid, 0)] = m;
      d.softmax_sum[p.softmax_sum.index(r, h0 + tid, 0)] = l;
    }
  }
  __syncthreads();
  const bool divide = d.sinks != nullptr || any_selected;
#pragma unroll
  for (int h = 0; h < kHeads; ++h) {
    if (h >= nh) break;
    const float a = s.alpha[h], l = s.fin_l[h];
#pragma unroll
    for (int c = 0; c < kDimsPerThread; ++c) {
      float x = acc[h][c];
      if (!divide) {
        x = 0.0f;
      } else {
        if (a != 1.0f) x *= a;
        x = x / l;
      }
      store_out(p, d.out, p.out.index(r, h0 + h, tid + c * kThreads), x);
    }
  }
}

}  // namespace

size_t sfa_launch_workspace_size(int64_t batch, int64_t num_rows, int64_t list_cap) {
  return ws_at(batch, num_rows, list_cap).bytes;
}

int sfa_launch(const SfaProblem& p, const SfaData& bound, void* workspace, void* stream,
               SfaLaunchPath path) {
  void* base = core::align_base(workspace, kSfaCudaWorkspaceAlign);
  const Ws w = carve(p, base);
  // The kernels read the row limits through the CPU's rules, over the prologue's tables.
  SfaData d = bound;
  d.batches = w.batches;
  d.rows = w.rows;
  auto st = static_cast<cudaStream_t>(stream);
  resolve_kernel<<<1, 1, 0, st>>>(p, d, w);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return static_cast<int>(e);
  if (p.num_rows > 0 && p.num_heads > 0) {
    if (path.mma) {
      if (const int e = sfa_mma_launch(p, d, base, path.m_tiles, st); e != 0) return e;
    } else {
      const int smem = static_cast<int>(sizeof(Smem));
      if (cudaError_t e =
              cudaFuncSetAttribute(sfa_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
          e != cudaSuccess) {
        return static_cast<int>(e);
      }
      const dim3 grid(static_cast<unsigned>(p.num_rows),
                      static_cast<unsigned>((p.num_heads + kHeads - 1) / kHeads));
      sfa_kernel<<<grid, kThreads, smem, st>>>(p, d, w);
      if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return static_cast<int>(e);
    }
  }
  report_kernel<<<1, 1, 0, st>>>(p, d, w);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace kvflash::cuda
