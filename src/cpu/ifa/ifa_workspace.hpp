// The IFA kernel's work decomposition and workspace layout, shared by every ISA.
//
// Work: each sequence b is cut into chunks of kIfaChunkLen positions (the last one shorter). For
// every (b, n2, c) the online softmax of the G query heads of kv head n2 over chunk c leaves
// (max, sum, acc[D]) per head in its own slot; a merge task (b, n2) then combines the chunks of
// (b, n2) in chunk order and writes the output. A chunk task covers one chunk for a few adjacent
// kv heads (IfaSchedule). Split points depend only on kv_len[b], so the output bits depend
// neither on the thread count nor on the rest of the batch.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kvflash/status.hpp"
#include "ops/ifa/ifa_limits.hpp"
#include "ops/ifa/ifa_problem.hpp"

namespace kvflash::cpu {

/// Positions per split-KV chunk (core::kIfaChunkLen, every backend's): long enough that the merge
/// and slot traffic are noise next to the K/V bytes of a chunk, short enough that one long
/// sequence feeds many threads.
using core::kIfaChunkLen;
/// Positions scored before one online-softmax update (a multiple of every ISA's lane count).
inline constexpr int64_t kIfaTile = 32;
/// The head dim is padded with zeros to a multiple of the widest vector, so inner loops have no
/// tails.
inline constexpr int64_t kIfaDimAlign = 16;
/// A schedule keeps at least this many tasks per worker where it can (the last chunk of each
/// sequence is short, so one task per worker would leave workers idle).
inline constexpr int64_t kIfaMinTasksPerWorker = 2;
/// Limits guaranteed by the decode description (ops/ifa/ifa_limits.hpp: D <= 512, G <= 64); they
/// size stack buffers.
using core::kIfaMaxGroup;
using core::kIfaMaxHeadDim;
/// Alignment of the workspace base the kernel uses (the caller's pointer may have any alignment).
inline constexpr size_t kIfaWorkspaceAlign = 64;

/// Float offsets inside one head's part of a chunk slot: acc[dp], the head's query in fp32 [dp],
/// then the softmax state.
struct IfaHeadSlot {
  static constexpr int64_t kHeader = 16;  // max, sum, any_unmasked; padded to keep 64-byte rows
  static constexpr int64_t kMax = 0, kSum = 1, kAnyUnmasked = 2;
  /// int8 K only, private to a chunk task: (q * scale)·offset, added to every score.
  static constexpr int64_t kKeyBias = 3;
  /// Per-token int8 K / V (IfaParams::token_k / token_v), private to a chunk task: sum_i q_i,
  /// and sum_t p_t * scale_t * offset_t, which finish() adds to every channel of acc.
  static constexpr int64_t kQuerySum = 4, kValueConst = 5;
};

struct IfaLayout {
  int64_t dp = 0;           ///< head_dim rounded up to kIfaDimAlign
  int64_t head_floats = 0;  ///< floats per head in a slot: acc[dp], q[dp], header
  int64_t slot_floats = 0;  ///< group * head_floats
  int64_t num_slots = 0;    ///< sum over b of chunks(b) * num_kv_heads
  // Byte offsets from the aligned workspace base.
  size_t chunk_first = 0;  ///< int64 [batch + 1]: first chunk task of each sequence
  size_t kv_begin = 0;     ///< int64 [batch]: IfaData::kv_begin, derived at run time
  size_t seq_base = 0;     ///< const void* [2][batch]: K and V bases (non-paged)
  size_t batch_state = 0;  ///< uint8 [batch]: IfaData::batch_state, derived at run time
  size_t antiquant = 0;    ///< float [2: scale, offset][2: key, value][num_kv_heads][head_dim]
  size_t quant2 = 0;       ///< float [2: scale, offset][num_heads][head_dim]
  size_t slots = 0;        ///< float [num_slots][slot_floats]
  size_t bytes = 0;        ///< total the caller must provide, alignment slack included
};

/// Number of chunks of a sequence of kv_len positions.
int64_t ifa_num_chunks(int64_t kv_len);

IfaLayout ifa_layout(const core::IfaProblem& p);

/// Whether the merge tasks (b, *) run inside the chunk tasks of sequence b rather than as merge
/// tasks: sequences of exactly one chunk, whose merge needs nothing but its own task's slot.
/// Decodes with only such sequences (up to kIfaChunkLen tokens) then need one pass over the
/// worker pool per call instead of two (a wake-up of every worker, microseconds). Not inline:
/// the per-ISA kernels call it, and their copy of an inline function could be the one kept for
/// plain x86-64 callers.
bool ifa_merged_by_chunk(const core::IfaProblem& p, int64_t b);

/// ws moved up to kIfaWorkspaceAlign (the layout reserves the slack).
std::byte* ifa_align(void* ws);
/// Fills the chunk index (chunk_first) from the plan's lengths.
void ifa_fill_chunk_index(const core::IfaProblem& p, const IfaLayout& layout, std::byte* base);

/// The start of every run, on the calling thread: aligns ws, copies the run's bound data into *d
/// and derives the rest into the workspace: the batch bases (non-paged), the device data read in
/// stream order (left padding into kv_begin; referenced block ids and the mask range into
/// batch_state), the chunk index and the fp32 scale tables (antiquant scale/offset and
/// quant_scale2/offset2 expanded to per-channel). Returns the aligned base.
std::byte* ifa_prepare(const core::IfaProblem& p, const core::IfaData& data,
                       const IfaLayout& layout, void* ws, core::IfaData* d);

/// After a run: kInvalid naming the first batch whose device data was bad (its rows hold the
/// fault result), else kSuccess.
Status ifa_report_faults(const core::IfaProblem& p, const core::IfaData& d);

/// How chunk tasks group kv heads. A task runs chunk c of sequence b for kv heads
/// [n2_begin, n2_end); grouping heads keeps a task's reads in one contiguous region when the
/// heads of a position are adjacent in memory (BSH/BSND), at the cost of fewer, larger tasks.
/// Each head's arithmetic is the same in any grouping, so the grouping may follow the thread
/// count without changing a bit of the output (only chunk split points could, and those don't).
struct IfaSchedule {
  int64_t kv_heads_per_task = 1;  ///< at most kIfaMaxGroup / group query heads per task
  int64_t kv_blocks = 0;          ///< ceil(num_kv_heads / kv_heads_per_task)
  int64_t num_tasks = 0;          ///< total chunks * kv_blocks
  /// Score bf16 K with AVX512-BF16 dot products (set by the dispatcher from the active ISA; the
  /// same for every task, so it never depends on threads).
  bool bf16_dot = false;
  /// Prefetch across the K and V streams (set by the dispatcher from the CPU vendor, Intel):
  /// while a tile's K rows are scored its V rows are prefetched, and while its V rows are
  /// accumulated the next tile's K rows, so both streams have misses in flight; otherwise each
  /// pass prefetches its own stream one tile ahead. Prefetches only: the bits are the same.
  bool prefetch_across = false;
};
IfaSchedule ifa_schedule(const core::IfaProblem& p, const IfaLayout& layout, int num_threads);

/// Where chunk task `task` works.
struct IfaChunkTask {
  int64_t b = 0, chunk = 0, num_chunks = 0;
  int64_t n2_begin = 0, n2_end = 0;  ///< kv heads [n2_begin, n2_end)
  int64_t begin = 0, end = 0;        ///< absolute positions [begin, end)
  bool bf16_dot = false;             ///< IfaSchedule::bf16_dot
  bool prefetch_across = false;      ///< IfaSchedule::prefetch_across
};
IfaChunkTask ifa_chunk_task(const core::IfaProblem& p, const core::IfaData& d,
                            const IfaLayout& layout, const IfaSchedule& schedule,
                            const std::byte* base, int64_t task);

/// The slot of chunk c of (b, n2): chunk_first[b] counts the slots of earlier sequences.
inline float* ifa_slot(const IfaLayout& layout, std::byte* base, const int64_t* chunk_first,
                       int64_t b, int64_t n2, int64_t c, int64_t num_chunks) {
  const int64_t task = chunk_first[b] + n2 * num_chunks + c;
  return reinterpret_cast<float*>(base + layout.slots) + task * layout.slot_floats;
}

}  // namespace kvflash::cpu
