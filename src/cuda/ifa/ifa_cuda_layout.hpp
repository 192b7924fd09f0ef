// The IFA CUDA backend's plain data besides the plan's core::IfaParams and the run's core::IfaData
// (which the kernels take by value): the per-run per-batch table (the device's form of the
// problem's per-batch host arrays), the workspace layout (the fault record first) and the launch
// geometry. Plain C++ with no CUDA header: the host side (ifa_cuda_plan.cpp, unit-tested on the
// CPU) computes everything here, the kernels (ifa_kernel.cu) only read it. Functions both sides
// call are KVFLASH_HD.
//
// Work decomposition (the CPU's, cpu/ifa/ifa_workspace.hpp): sequence b is cut into chunks of
// kIfaCudaChunkLen positions counted from its first attended position, so split points depend on
// kv_len[b] only, never on the batch around it. One chunk CTA = (global chunk cg, kv head n2,
// head block hb): it streams the chunk's K/V rows of n2 once for up to kIfaCudaMaxHeads query heads
// of that kv head (all G of them when G <= kIfaCudaMaxHeads) and leaves (max, sum, any_unmasked,
// acc[D]) per head in its own slot. One merge CTA = (b, h): combines the chunks of b in chunk
// order. Every sum has one fixed order, so the output bits depend only on the plan.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/device_fault.hpp"
#include "core/hd.hpp"
#include "core/workspace_arena.hpp"

namespace kvflash::cuda {

inline constexpr int64_t kIfaCudaChunkLen = 512;  ///< == core::kIfaChunkLen (static_assert'ed)
inline constexpr int kIfaCudaTile = 32;           ///< positions per online-softmax step: one/lane
inline constexpr int kIfaCudaThreads = 128;       ///< chunk CTA: 4 warps
inline constexpr int kIfaCudaWarps = kIfaCudaThreads / 32;
inline constexpr int kIfaCudaMaxHeads = 16;       ///< query heads per chunk CTA (D <= 256)
inline constexpr int kIfaCudaMaxHeadsWide = 8;    ///< ... for D > 256 (shared memory)
inline constexpr int kIfaCudaMaxDimsPerThread = 4;  ///< D <= 512 = 4 * kIfaCudaThreads
inline constexpr int kIfaCudaStages = 2;          ///< K/V tiles in flight (cp.async)
inline constexpr int kIfaCudaMergeThreads = 128;
inline constexpr int kIfaCudaHeaderFloats = 4;    ///< slot header: max, sum, any_unmasked, pad
/// Sequences per upload launch: their table entries travel as kernel parameters (< 4 KB).
inline constexpr int kIfaCudaSeqsPerUpload = 40;
/// The largest dynamic shared memory any supported part gives one CTA (sm_80: 163 KB).
inline constexpr size_t kIfaCudaMaxSmem = 166912;
/// Alignment of the workspace base and of each region (IfaCudaLayout): the fault record's, so
/// core::fault_record_at finds it.
inline constexpr size_t kIfaCudaWorkspaceAlign = core::kFaultRecordAlign;
/// bad_slot value of a batch whose block ids were all valid.
inline constexpr unsigned long long kIfaCudaNoBadSlot = ~0ull;

/// One sequence of a run: where its K/V rows are and how its chunks are numbered. Element (j, n2,
/// d) of K at k_base + (j*k_s_pos + n2*k_s_head + d*k_s_dim) elements (paged: j is the offset in
/// the block, k_base the cache, and the block's k_s_block is added).
struct IfaCudaSeq {
  const void* k_base = nullptr;
  const void* v_base = nullptr;
  int64_t k_s_pos = 0, k_s_head = 0, k_s_dim = 1;
  int64_t v_s_pos = 0, v_s_head = 0, v_s_dim = 1;
  int64_t kv_len = 0;
  int64_t chunk_first = 0;  ///< global index of the sequence's first chunk
};

/// Upload launch payload: entries [first, first + count) of the table.
struct IfaCudaSeqUpload {
  int64_t first = 0;
  int32_t count = 0;
  IfaCudaSeq seqs[kIfaCudaSeqsPerUpload];
};
static_assert(sizeof(IfaCudaSeqUpload) < 4000, "kernel parameters stay below 4 KB");

/// Byte offsets from the kIfaCudaWorkspaceAlign-aligned workspace base.
struct IfaCudaLayout {
  size_t fault = 0;      ///< core::FaultRecord: always 0 (core::take_fault_record)
  size_t seqs = 0;       ///< IfaCudaSeq [batch]
  size_t kv_begin = 0;   ///< int64 [batch]: first attended position (left padding)
  size_t state = 0;      ///< int32 [batch]: core::IfaBatchState
  size_t bad_slot = 0;   ///< unsigned long long [batch]: lowest bad block-table slot
  size_t slots = 0;      ///< float [total_chunks * num_kv_heads * group * head_floats]
  int64_t head_floats = 0;  ///< round_up(D, 4) + kIfaCudaHeaderFloats
  size_t bytes = 0;      ///< what the caller provides (alignment slack included)
};

/// Launch configuration: a function of the plan only (graph-capturable runs).
struct IfaCudaGeometry {
  int heads_per_cta = 0;  ///< query heads of one kv head per chunk CTA
  int head_blocks = 0;    ///< ceil(group / heads_per_cta)
  int64_t chunk_ctas = 0; ///< total_chunks * num_kv_heads (grid x; grid y = head_blocks)
  int64_t merge_ctas = 0; ///< batch * num_heads
  int uploads = 0;        ///< ceil(batch / kIfaCudaSeqsPerUpload)
  int64_t row_bytes = 0;  ///< one K or V row in shared memory (16-byte multiple, padded)
  size_t smem_bytes = 0;  ///< dynamic shared memory of a chunk CTA
};

KVFLASH_HD inline int64_t ifa_cuda_num_chunks(int64_t kv_len) {
  return kv_len <= 0 ? 0 : (kv_len + kIfaCudaChunkLen - 1) / kIfaCudaChunkLen;
}

/// Element size of a kvflash::DType value the kernels read (fp32 0, fp16 1, int8 2, bf16 27).
KVFLASH_HD inline int64_t ifa_cuda_dtype_size(int32_t dtype) {
  return dtype == 2 ? 1 : (dtype == 0 ? 4 : 2);
}

/// Positions [begin, end) of chunk c of a sequence whose attended range is [first, first + len):
/// the CPU's split (ifa_chunk_task).
struct IfaCudaRange {
  int64_t begin = 0, end = 0;
};
KVFLASH_HD inline IfaCudaRange ifa_cuda_chunk_range(int64_t first, int64_t len, int64_t c) {
  IfaCudaRange r;
  r.begin = first + c * kIfaCudaChunkLen;
  const int64_t end_all = first + len;
  r.end = r.begin + kIfaCudaChunkLen < end_all ? r.begin + kIfaCudaChunkLen : end_all;
  return r;
}

/// Float offset, in the slots array, of query head g (of kv head n2's group) in global chunk cg:
/// where the chunk kernel leaves its part and the merge reads it.
KVFLASH_HD inline int64_t ifa_cuda_slot(int64_t cg, int64_t n2, int64_t g, int64_t num_kv_heads,
                                        int64_t group, int64_t head_floats) {
  return ((cg * num_kv_heads + n2) * group + g) * head_floats;
}

/// The sequence that holds global chunk cg: the last b whose chunk_first(b) <= cg (sequences with
/// no chunks share their successor's chunk_first and come before it, so they are never chosen
/// for a chunk they do not have). first(b) returns chunk_first of b; batch >= 1.
template <typename First>
KVFLASH_HD int64_t ifa_cuda_find_batch(First first, int64_t batch, int64_t cg) {
  int64_t lo = 0, hi = batch - 1;  // invariant: first(lo) <= cg
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo + 1) / 2;
    if (first(mid) <= cg) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

/// Shared-memory offsets of a chunk CTA (bytes), from its geometry.
struct IfaCudaSmem {
  size_t q = 0;      ///< float [heads_per_cta][D]
  size_t k = 0;      ///< [stages][tile][row_bytes]
  size_t v = 0;      ///< [stages][tile][row_bytes]
  size_t p = 0;      ///< float [heads_per_cta][tile]: the tile's weights
  size_t alpha = 0;  ///< float [heads_per_cta]
  size_t kq = 0;     ///< float [2][D]: int8 K antiquant scale, offset (int8 only)
  size_t bytes = 0;
};
KVFLASH_HD inline IfaCudaSmem ifa_cuda_smem(int heads_per_cta, int64_t head_dim,
                                            int64_t row_bytes, bool int8_kv) {
  IfaCudaSmem s;
  core::WorkspaceArena arena(16);  // 16-byte pieces (cp.async, uint4 loads)
  s.q = arena.take_array<float>(static_cast<size_t>(heads_per_cta * head_dim));
  s.k = arena.take(static_cast<size_t>(kIfaCudaStages * kIfaCudaTile * row_bytes));
  s.v = arena.take(static_cast<size_t>(kIfaCudaStages * kIfaCudaTile * row_bytes));
  s.p = arena.take_array<float>(static_cast<size_t>(heads_per_cta * kIfaCudaTile));
  s.alpha = arena.take_array<float>(static_cast<size_t>(heads_per_cta));
  s.kq = arena.take_array<float>(int8_kv ? 2 * static_cast<size_t>(head_dim) : 0);
  s.bytes = arena.extent();  // shared memory: its base is aligned, no slack
  return s;
}

}  // namespace kvflash::cuda
