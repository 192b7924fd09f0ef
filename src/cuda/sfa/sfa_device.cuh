// Device pieces shared by the SFA kernels (sfa_kernel.cu: the SIMT fallback and the prologue;
// sfa_mma.cu: the tensor-core path): the workspace carve-up, the index and block-id rules of spec
// §3.4 and the end of a head's softmax (the rules themselves are core/online_softmax.hpp's).
// Included only by .cu files; everything is internal linkage.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "core/device_fault.hpp"
#include "core/online_softmax.hpp"
#include "core/workspace_arena.hpp"
#include "cuda/sfa/sfa_launch.hpp"

namespace kvflash::cuda {
namespace {

// What the prologue derives per batch and per query row: the CPU's tables.
using Batch = core::SfaBatch;
using Row = core::SfaRow;

constexpr int kNope = 512;
constexpr int kQk = 576;

// The call's fault word (workspace), the kernels' own state: bit 0 bad lengths (every output NaN),
// bit 1 a bad block id (its row NaN, its row flag set). What the run reports is the fault record.
constexpr uint32_t kFaultLengths = 1u;
constexpr uint32_t kFaultBlockId = 2u;

struct Ws {
  core::FaultRecord* record;
  Batch* batches;
  Row* rows;
  uint8_t* row_fault;
  uint32_t* fault;
  int32_t* counts;  // MMA path: positions in each row's list
  int32_t* list;    // MMA path: row r's positions at list[r * list_cap ...], gather order
};

// Byte offsets of the prologue's tables in the (kSfaCudaWorkspaceAlign-aligned) workspace: the
// fault record (first: core::take_fault_record), batches, rows, the per-row fault flags, the
// fault word, the MMA path's lists. sfa_launch_workspace_size uses the same layout; bytes includes
// the base's alignment slack.
struct WsAt {
  size_t record, batches, rows, row_fault, fault, counts, list, bytes;
};
inline WsAt ws_at(int64_t batch, int64_t num_rows, int64_t list_cap) {
  WsAt a;
  core::WorkspaceArena arena(kSfaCudaWorkspaceAlign);
  const size_t list_rows = list_cap > 0 ? static_cast<size_t>(num_rows) : 0;
  a.record = core::take_fault_record(arena);
  a.batches = arena.take_array<Batch>(static_cast<size_t>(batch));
  a.rows = arena.take_array<Row>(static_cast<size_t>(num_rows));
  a.row_fault = arena.take_array<uint8_t>(static_cast<size_t>(num_rows));
  a.fault = arena.take_array<uint32_t>(1);
  a.counts = arena.take_array<int32_t>(list_rows);
  a.list = arena.take_array<int32_t>(list_rows * static_cast<size_t>(list_cap));
  a.bytes = arena.bytes();
  return a;
}

inline Ws carve(const SfaLaunchProblem& p, void* base) {
  auto* b = static_cast<unsigned char*>(base);
  const WsAt a = ws_at(p.batch, p.num_rows, p.list_cap);
  Ws w;
  w.record = reinterpret_cast<core::FaultRecord*>(b + a.record);
  w.batches = reinterpret_cast<Batch*>(b + a.batches);
  w.rows = reinterpret_cast<Row*>(b + a.rows);
  w.row_fault = b + a.row_fault;
  w.fault = reinterpret_cast<uint32_t*>(b + a.fault);
  w.counts = reinterpret_cast<int32_t*>(b + a.counts);
  w.list = reinterpret_cast<int32_t*>(b + a.list);
  return w;
}

__device__ __forceinline__ float to_f32(uint16_t x, bool bf16) {
  return bf16 ? __bfloat162float(__ushort_as_bfloat16(x)) : __half2float(__ushort_as_half(x));
}

__device__ __forceinline__ uint16_t from_f32(float x, bool bf16) {
  return bf16 ? __bfloat16_as_ushort(__float2bfloat16_rn(x)) : __half_as_ushort(__float2half_rn(x));
}

// attention_out element i = x in the output dtype (fp16 / bf16 as the inputs, or fp32). A NaN is
// stored as the canonical quiet NaN, as the CPU's conversions do.
__device__ __forceinline__ void store_out(const SfaLaunchProblem& p, void* out, int64_t i,
                                          float x) {
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
__device__ __forceinline__ int64_t kv_offset(const SfaLaunchProblem& p, const core::SfaData& d,
                                             const core::SfaKvView& v, const Batch& bt, int64_t b,
                                             int64_t j) {
  if (p.paged) {
    const int64_t blk = d.block_table[b * p.bt_s0 + (j / p.block_size) * p.bt_s1];
    return blk * v.s_block + (j % p.block_size) * v.s_pos;
  }
  return b * v.s_batch + (bt.kv_row0 + j) * v.s_pos;
}

// The CPU's selection rules (ops/sfa/sfa_problem.hpp), shared with the device.
__device__ __forceinline__ bool range_faults(const SfaLaunchProblem& p, const core::SfaData& d,
                                             int64_t b, int64_t begin, int64_t end) {
  return core::sfa_bad_slot(p, d, b, begin, end) >= 0;
}
__device__ __forceinline__ bool selected_range(int32_t x, int64_t sbs, int64_t thr, int64_t* begin,
                                               int64_t* end) {
  return core::sfa_selected_range(x, sbs, thr, begin, end);
}

// Writes value to heads [h0, h0 + nh) of row r and max_sum to the softmax outputs (every thread
// of the CTA takes part).
__device__ inline void write_row_value(const SfaLaunchProblem& p, const core::SfaData& d, int64_t r,
                                       int64_t h0, int nh, float value, float max_sum) {
  const int n = static_cast<int>(blockDim.x);
  for (int i = static_cast<int>(threadIdx.x); i < nh * kNope; i += n) {
    store_out(p, d.out, p.out.index(r, h0 + i / kNope, i % kNope), value);
  }
  if (d.softmax_max != nullptr) {
    for (int h = static_cast<int>(threadIdx.x); h < nh; h += n) {
      d.softmax_max[p.softmax_max.index(r, h0 + h, 0)] = max_sum;
      d.softmax_sum[p.softmax_sum.index(r, h0 + h, 0)] = max_sum;
    }
  }
}

// Row limits (core::sfa_row_limits, over the prologue's tables: d.batches / d.rows point into
// the workspace), with the row's batch.
struct RowLimits {
  bool invalid = true;  // uncovered, or causally empty in mode 3: zeros, max = sum = 0
  int64_t b = 0, thr = 0, valid_count = 0;
  Batch bt;
};

__device__ __forceinline__ RowLimits row_limits(const SfaLaunchProblem& p, const core::SfaData& d,
                                                int64_t r) {
  const core::SfaRowLimits c = core::sfa_row_limits(p, d, r);
  RowLimits l;
  l.invalid = c.invalid;
  l.thr = c.thr;
  l.valid_count = c.valid_count;
  if (d.rows[r].batch >= 0) {
    l.b = d.rows[r].batch;
    l.bt = d.batches[l.b];
  }
  return l;
}

// Whether row r (PA_BSND) selects a range with a bad block id, checked by the whole CTA before any
// row is read: the first -1 bounds the entries looked at (found with an atomicMin), then every
// thread checks a stride of the entries before it. `scratch` is two ints of shared memory. The
// answer (a bool) does not depend on the order, so it is deterministic.
__device__ inline bool row_has_bad_block(const SfaLaunchProblem& p, const core::SfaData& d,
                                         int64_t r, const RowLimits& l, int* scratch) {
  if (!p.paged) return false;
  const int tid = static_cast<int>(threadIdx.x), n = static_cast<int>(blockDim.x);
  if (tid == 0) {
    scratch[0] = static_cast<int>(l.valid_count);  // entries before the first -1
    scratch[1] = 0;
  }
  __syncthreads();
  for (int64_t k = tid; k < l.valid_count; k += n) {
    if (d.indices[p.indices.index(r, 0, k)] == -1) atomicMin(&scratch[0], static_cast<int>(k));
  }
  __syncthreads();
  const int64_t end = scratch[0];
  for (int64_t k = tid; k < end; k += n) {
    int64_t bg, en;
    selected_range(d.indices[p.indices.index(r, 0, k)], p.sparse_block_size, l.thr, &bg, &en);
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
int sfa_mma_launch(const SfaLaunchProblem& p, const core::SfaData& d, void* ws_base, int m_tiles,
                   cudaStream_t st);

}  // namespace kvflash::cuda
