// Device pieces shared by the SFA kernels (sfa_kernel.cu: the SIMT fallback and the prologue;
// sfa_mma.cu: the tensor-core path): the workspace carve-up, the index and block-id rules of spec
// §3.4 and the end of a head's softmax (the rules themselves are core/online_softmax.hpp's).
// Included only by .cu files; everything is internal linkage.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "core/online_softmax.hpp"
#include "cuda/sfa/sfa_launch.hpp"

namespace kvflash::cuda {
namespace {

// What the prologue derives per batch and per query row (core::SfaBatch, core::SfaRow).
struct Batch {
  int64_t lq = 0, lkv = 0, kv_row0 = 0;
};
struct Row {
  int32_t batch = -1;  // -1: row not covered by any batch
  int64_t i = 0;
};

constexpr int kNope = 512;
constexpr int kQk = 576;

// The call's fault word (workspace): bit 0 bad lengths, bit 1 a bad block id (sfa_launch.hpp).
constexpr uint32_t kFaultLengths = kSfaFaultLengths;
constexpr uint32_t kFaultBlockId = kSfaFaultBlockId;

struct Ws {
  Batch* batches;
  Row* rows;
  uint8_t* row_fault;
  uint32_t* fault;
  int32_t* counts;  // MMA path: positions in each row's list
  int32_t* list;    // MMA path: row r's positions at list[r * list_cap ...], gather order
};

constexpr size_t align_up(size_t n) { return (n + 255) / 256 * 256; }

// Byte offsets of the prologue's tables in the (256-byte aligned) workspace: batches, rows, the
// per-row fault flags, the fault word. sfa_launch_workspace_size and sfa_fault_status (host) use
// the same order.
struct WsAt {
  size_t batches, rows, row_fault, fault, counts, list, end;
};
inline WsAt ws_at(int64_t batch, int64_t num_rows, int64_t list_cap) {
  WsAt a;
  a.batches = 0;
  a.rows = align_up(sizeof(Batch) * static_cast<size_t>(batch));
  a.row_fault = a.rows + align_up(sizeof(Row) * static_cast<size_t>(num_rows));
  a.fault = a.row_fault + align_up(static_cast<size_t>(num_rows));
  a.counts = a.fault + align_up(sizeof(uint32_t));
  const size_t list_rows = list_cap > 0 ? static_cast<size_t>(num_rows) : 0;
  a.list = a.counts + align_up(sizeof(int32_t) * list_rows);
  a.end = a.list + align_up(sizeof(int32_t) * list_rows * static_cast<size_t>(list_cap));
  return a;
}

inline Ws carve(const SfaDevProblem& p, void* base) {
  auto* b = static_cast<unsigned char*>(base);
  const WsAt a = ws_at(p.batch, p.num_rows, p.list_cap);
  Ws w;
  w.batches = reinterpret_cast<Batch*>(b + a.batches);
  w.rows = reinterpret_cast<Row*>(b + a.rows);
  w.row_fault = b + a.row_fault;
  w.fault = reinterpret_cast<uint32_t*>(b + a.fault);
  w.counts = reinterpret_cast<int32_t*>(b + a.counts);
  w.list = reinterpret_cast<int32_t*>(b + a.list);
  return w;
}

__device__ __forceinline__ int64_t row_index(const SfaRowStrides& v, int64_t r, int64_t h,
                                             int64_t d) {
  return (r / v.rows_inner) * v.s_outer + (r % v.rows_inner) * v.s_inner + h * v.s_head +
         d * v.s_dim;
}

__device__ __forceinline__ float to_f32(uint16_t x, bool bf16) {
  return bf16 ? __bfloat162float(__ushort_as_bfloat16(x)) : __half2float(__ushort_as_half(x));
}

__device__ __forceinline__ uint16_t from_f32(float x, bool bf16) {
  return bf16 ? __bfloat16_as_ushort(__float2bfloat16_rn(x)) : __half_as_ushort(__float2half_rn(x));
}

// attention_out element i = x in the output dtype (fp16 / bf16 as the inputs, or fp32). A NaN is
// stored as the canonical quiet NaN, as the CPU's conversions do.
__device__ __forceinline__ void store_out(const SfaDevProblem& p, void* out, int64_t i, float x) {
  if (p.out_f32) {
    static_cast<float*>(out)[i] = x;
    return;
  }
  static_cast<uint16_t*>(out)[i] =
      x != x ? (p.bf16 ? uint16_t{0x7FC0} : uint16_t{0x7E00}) : from_f32(x, p.bf16);
}

// The end of one (row, head)'s online softmax, as the CPU's run_task: a sink (sink not null)
// joins the max and the denominator with no value vector; a row whose scores are all -inf gets a
// NaN sum; an empty selection without a sink gives zeros (max = sum = 0). divide: a sink or any
// selected position. Returns the factor the accumulated P.V is rescaled by.
__device__ __forceinline__ float finish_softmax(const float* sink, bool divide, float& m,
                                                float& sum) {
  core::SoftmaxState st{m, sum};
  float a = 1.0f;
  if (sink != nullptr) a = core::softmax_fold_sink(st, *sink, core::DeviceExp{});
  if (divide) {
    m = st.max;
    sum = core::softmax_final_sum(st.max, st.sum);
    return a;
  }
  m = 0.0f;
  sum = 0.0f;
  return 0.0f;
}

// Element offset of KV view v's row for batch b's logical token j (block id already checked).
__device__ __forceinline__ int64_t kv_offset(const SfaDevProblem& p, const SfaDevData& d,
                                             const SfaKvStrides& v, const Batch& bt, int64_t b,
                                             int64_t j) {
  if (p.paged) {
    const int64_t blk = d.block_table[b * p.bt_s0 + (j / p.block_size) * p.bt_s1];
    return blk * v.s_block + (j % p.block_size) * v.s_pos;
  }
  return b * v.s_batch + (bt.kv_row0 + j) * v.s_pos;
}

// Whether the selected range [begin, end) of batch b uses a block id outside [0, num_blocks).
__device__ __forceinline__ bool range_faults(const SfaDevProblem& p, const SfaDevData& d,
                                             int64_t b, int64_t begin, int64_t end) {
  for (int64_t slot = begin / p.block_size; slot <= (end - 1) / p.block_size; ++slot) {
    const int32_t id = d.block_table[b * p.bt_s0 + slot * p.bt_s1];
    if (id < 0 || id >= p.num_blocks) return true;
  }
  return false;
}

// Entry x of a row expanded under thr (core::sfa_selected_range): false when the list ends (-1).
__device__ __forceinline__ bool selected_range(int32_t x, int64_t sbs, int64_t thr, int64_t* begin,
                                               int64_t* end) {
  *begin = *end = 0;
  if (x == -1) return false;
  if (x < -1) return true;
  const int64_t bgn = static_cast<int64_t>(x) * sbs;
  if (bgn >= thr) return true;
  *begin = bgn;
  *end = bgn + sbs < thr ? bgn + sbs : thr;
  return true;
}

// Writes value to heads [h0, h0 + nh) of row r and max_sum to the softmax outputs (every thread
// of the CTA takes part).
__device__ inline void write_row_value(const SfaDevProblem& p, const SfaDevData& d, int64_t r,
                                       int64_t h0, int nh, float value, float max_sum) {
  const int n = static_cast<int>(blockDim.x);
  for (int i = static_cast<int>(threadIdx.x); i < nh * kNope; i += n) {
    store_out(p, d.out, row_index(p.out, r, h0 + i / kNope, i % kNope), value);
  }
  if (d.softmax_max != nullptr) {
    for (int h = static_cast<int>(threadIdx.x); h < nh; h += n) {
      d.softmax_max[row_index(p.softmax_max, r, h0 + h, 0)] = max_sum;
      d.softmax_sum[row_index(p.softmax_sum, r, h0 + h, 0)] = max_sum;
    }
  }
}

// Row limits (core::sfa_row_limits) from the prologue's tables.
struct RowLimits {
  bool invalid = true;  // uncovered, or causally empty in mode 3: zeros, max = sum = 0
  int64_t b = 0, thr = 0, valid_count = 0;
  Batch bt;
};

__device__ __forceinline__ RowLimits row_limits(const SfaDevProblem& p, const Ws& w, int64_t r) {
  RowLimits l;
  const Row row = w.rows[r];
  if (row.batch < 0) return l;
  l.b = row.batch;
  l.bt = w.batches[l.b];
  l.thr = p.sparse_mode == 3 ? l.bt.lkv - l.bt.lq + row.i + 1 : l.bt.lkv;
  if (p.sparse_mode == 3 && l.thr <= 0) return l;
  l.invalid = false;
  if (l.thr > 0) {
    const int64_t blocks = (l.thr + p.sparse_block_size - 1) / p.sparse_block_size;
    l.valid_count = blocks < p.sparse_size ? blocks : p.sparse_size;
  }
  return l;
}

// Whether row r (PA_BSND) selects a range with a bad block id, checked by the whole CTA before any
// row is read: the first -1 bounds the entries looked at (found with an atomicMin), then every
// thread checks a stride of the entries before it. `scratch` is two ints of shared memory. The
// answer (a bool) does not depend on the order, so it is deterministic.
__device__ inline bool row_has_bad_block(const SfaDevProblem& p, const SfaDevData& d, int64_t r,
                                         const RowLimits& l, int* scratch) {
  if (!p.paged) return false;
  const int tid = static_cast<int>(threadIdx.x), n = static_cast<int>(blockDim.x);
  if (tid == 0) {
    scratch[0] = static_cast<int>(l.valid_count);  // entries before the first -1
    scratch[1] = 0;
  }
  __syncthreads();
  for (int64_t k = tid; k < l.valid_count; k += n) {
    if (d.indices[row_index(p.indices, r, 0, k)] == -1) atomicMin(&scratch[0], static_cast<int>(k));
  }
  __syncthreads();
  const int64_t end = scratch[0];
  for (int64_t k = tid; k < end; k += n) {
    int64_t bg, en;
    selected_range(d.indices[row_index(p.indices, r, 0, k)], p.sparse_block_size, l.thr, &bg, &en);
    if (bg < en && range_faults(p, d, l.b, bg, en)) atomicOr(&scratch[1], 1);
  }
  __syncthreads();
  const bool bad = scratch[1] != 0;
  __syncthreads();  // scratch may be reused after this
  return bad;
}

}  // namespace

// The MMA path's launch (sfa_mma.cu), queued after the prologue: ws_base is the 256-byte aligned
// workspace. 0 or a cudaError_t.
int sfa_mma_launch(const SfaDevProblem& p, const SfaDevData& d, void* ws_base, int m_tiles,
                   cudaStream_t st);

}  // namespace kvflash::cuda
