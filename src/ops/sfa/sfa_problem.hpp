// The normalised SFA problem (what a plan holds) and the data bound to it for one run.
//
// Validation (src/ops/sfa/sfa_validate.cpp) turns the user's layouts (BSND/TND query, BSND/TND/PA_BSND
// KV) into one description built from metadata only: no data pointers, no value read from a
// tensor. Query rows are numbered r in [0, num_rows): BSND r = b*S1 + i, TND r = t. Every per-row
// tensor (query, query_rope, indices, output, softmax outputs) is addressed through SfaRowView
// (r / rows_inner, r % rows_inner), every KV tensor through SfaKvView. SfaData carries the pointers
// of one run and what a backend derives from device data in stream order: the per-batch lengths
// (actual_seq_lengths_query/kv are device tensors) and the row map. Kernels never look at layouts
// and never re-check what the validator checked.
#pragma once

#include <cstdint>

#include "core/device_fault.hpp"
#include "core/hd.hpp"
#include "core/length_tensor.hpp"
#include "kvflash/tensor.hpp"

namespace kvflash::core {

/// Element (r, h, d) of a per-query-row tensor lives at
///   base + (r / rows_inner) * s_outer + (r % rows_inner) * s_inner + h * s_head + d * s_dim.
/// BSND: (outer, inner) = (b, i); TND: outer is always 0 and inner = t.
struct SfaRowView {
  bool present = false;
  DType dtype = DType::kFloat16;
  int64_t rows_inner = 1;
  int64_t s_outer = 0, s_inner = 0, s_head = 0, s_dim = 1;
  KVFLASH_HD int64_t index(int64_t r, int64_t h, int64_t d) const {
    return (r / rows_inner) * s_outer + (r % rows_inner) * s_inner + h * s_head + d * s_dim;
  }
};

/// KV element (b, j, d) of batch b's logical token j:
///   non-paged: base + b * s_batch + (kv_row0[b] + j) * s_pos + d * s_dim
///   paged:     base + blk * s_block + (j % block_size) * s_pos + d * s_dim,
///              blk = block_table[b * bt_s0 + (j / block_size) * bt_s1]
struct SfaKvView {
  int64_t s_batch = 0, s_block = 0, s_pos = 0, s_dim = 1;
};

/// Per-batch lengths, derived at run time from the actual-length tensors.
struct SfaBatch {
  int64_t lq = 0;       ///< query rows of this batch
  int64_t lkv = 0;      ///< KV tokens of this batch
  int64_t kv_row0 = 0;  ///< TND KV: first row of this batch in key (askv[b-1]); else 0
};

/// What one query row is, derived at run time.
struct SfaRow {
  int32_t batch = -1;  ///< -1: row not covered by any batch (output zeros, max = sum = 0)
  int64_t i = 0;       ///< row index inside its batch
};

struct SfaProblem {
  Device device{};          ///< where every tensor of the call lives
  int64_t batch = 0;        ///< B
  int64_t num_heads = 0;    ///< N1 (N2 = 1, so every head uses the single KV head)
  int64_t sparse_size = 0;  ///< K
  int64_t sparse_block_size = 1;
  int64_t num_rows = 0;           ///< B*S1 (BSND) or T1 (TND)
  int64_t sparse_mode = 3;        ///< 0 or 3
  DType dtype = DType::kFloat16;      ///< query, key, value and ropes
  DType out_dtype = DType::kFloat16;  ///< attention_out: dtype, or fp32 (extension)
  float scale = 1.0f;

  static constexpr int64_t kNopeDim = 512;
  static constexpr int64_t kRopeDim = 64;

  SfaRowView q, q_rope;                 ///< (r, h, d)
  SfaRowView indices;                   ///< (r, 0, k), int32
  SfaRowView out;                       ///< (r, h, d)
  SfaRowView softmax_max, softmax_sum;  ///< (r, h, 0) fp32; absent when not requested

  SfaKvView k, k_rope, v;
  bool paged = false;
  int64_t bt_s0 = 0, bt_s1 = 0;
  int64_t block_size = 0;  ///< paged only
  int64_t num_blocks = 0;  ///< paged only: valid ids are [0, num_blocks)

  bool has_sinks = false;  ///< (h) at sinks[h * sinks_s0]
  int64_t sinks_s0 = 1;

  /// The lengths (docs/semantics.md §3.3), read at run time. Absent tensors mean S1 / S2 per batch.
  bool query_tnd = false, kv_tnd = false;
  bool has_lengths_query = false, has_lengths_kv = false;
  bool lengths_query_64 = false, lengths_kv_64 = false;  ///< int64 entries, else int32
  int64_t lengths_query_s0 = 0, lengths_kv_s0 = 0;       ///< element strides of the tensors
  int64_t s1 = 0;                                   ///< BSND query rows per batch (0 for TND)
  int64_t kv_rows = 0;                              ///< BSND: S2; TND: T2 (rows of key)
  int64_t kv_capacity = 0;                          ///< PA_BSND: block_table columns * block_size
};

/// The pointers of one run (each at element 0 of its view; absent views are null) and the
/// lengths a backend derives from device data before its kernels read them.
struct SfaData {
  const void* q = nullptr;
  const void* q_rope = nullptr;
  const int32_t* indices = nullptr;
  void* out = nullptr;
  float* softmax_max = nullptr;
  float* softmax_sum = nullptr;
  const void* k = nullptr;
  const void* k_rope = nullptr;
  const void* v = nullptr;
  bool v_is_k = false;  ///< value aliases key element for element: gather once
  const int32_t* block_table = nullptr;
  const float* sinks = nullptr;
  const void* lengths_query = nullptr;  ///< int32 or int64 entries (SfaProblem::lengths_query_64)
  const void* lengths_kv = nullptr;
  const SfaBatch* batches = nullptr;  ///< derived: B entries
  const SfaRow* rows = nullptr;       ///< derived: num_rows entries
};

// The selection rules below are written once for the host backends and the CUDA kernels
// (KVFLASH_HD). They are `static` (internal linkage) because the per-ISA kernel units compile them
// with their own ISA flags: a shared inline copy could otherwise be picked by the linker for the
// baseline code and fault on a CPU without that ISA.

/// The largest value an entry of actual_seq_lengths_query / _kv may hold (a count, or the last
/// prefix sum): S1 or T1, and S2, T2 or the paged capacity.
KVFLASH_HD static inline int64_t sfa_query_length_limit(const SfaProblem& p) {
  return p.query_tnd ? p.num_rows : p.s1;
}
KVFLASH_HD static inline int64_t sfa_kv_length_limit(const SfaProblem& p) {
  return p.paged ? p.kv_capacity : p.kv_rows;
}

/// The row map from valid per-batch lengths: every row uncovered, then batch b's lq rows (BSND at
/// b * S1, TND after the rows of the batches before it).
KVFLASH_HD static inline void sfa_map_rows(const SfaProblem& p, const SfaBatch* batches,
                                           SfaRow* rows) {
  for (int64_t r = 0; r < p.num_rows; ++r) rows[r] = SfaRow{};
  int64_t first = 0;
  for (int64_t b = 0; b < p.batch; ++b) {
    if (!p.query_tnd) first = b * p.s1;
    for (int64_t i = 0; i < batches[b].lq; ++i) {
      rows[first + i] = SfaRow{static_cast<int32_t>(b), i};
    }
    if (p.query_tnd) first += batches[b].lq;
  }
}

/// The selection rules of docs/semantics.md §3.4 steps 1-2 for one row: thr is the visible prefix,
/// valid_count the number of index entries examined. Entries are expanded with sfa_selected_range.
struct SfaRowLimits {
  /// Uncovered rows and sparse_mode 3 rows with thr <= 0: zeros, max = sum = 0 even with sinks.
  /// (A mode-0 row of an empty KV sequence is valid with an empty selection: step 6.)
  bool invalid = true;
  int64_t thr = 0;
  int64_t valid_count = 0;  ///< min(K, ceil(thr / sbs)), 0 when thr <= 0
};

KVFLASH_HD static inline SfaRowLimits sfa_row_limits(const SfaProblem& p, const SfaData& d,
                                                     int64_t r) {
  SfaRowLimits lim;
  const SfaRow& row = d.rows[r];
  if (row.batch < 0) return lim;
  const SfaBatch& bt = d.batches[row.batch];
  lim.thr = p.sparse_mode == 3 ? bt.lkv - bt.lq + row.i + 1 : bt.lkv;
  lim.invalid = p.sparse_mode == 3 && lim.thr <= 0;
  if (lim.thr <= 0) return lim;
  const int64_t blocks = (lim.thr + p.sparse_block_size - 1) / p.sparse_block_size;
  lim.valid_count = blocks < p.sparse_size ? blocks : p.sparse_size;
  return lim;
}

/// Expands index entry x under limit thr: returns false when the list ends (x == -1); otherwise
/// [*begin, *end) is the selected token range, empty when x is skipped (x < -1 or out of range).
KVFLASH_HD static inline bool sfa_selected_range(int32_t x, int64_t sbs, int64_t thr,
                                                 int64_t* begin, int64_t* end) {
  *begin = *end = 0;
  if (x == -1) return false;
  if (x < -1) return true;
  const int64_t b = static_cast<int64_t>(x) * sbs;
  if (b >= thr) return true;
  *begin = b;
  *end = b + sbs < thr ? b + sbs : thr;
  return true;
}

/// The first block slot of [begin, end) (a selected range of batch b, non-empty) whose block id
/// is outside [0, num_blocks), or -1. Static for the reason above.
KVFLASH_HD static inline int64_t sfa_bad_slot(const SfaProblem& p, const SfaData& d, int64_t b,
                                              int64_t begin, int64_t end) {
  for (int64_t slot = begin / p.block_size; slot <= (end - 1) / p.block_size; ++slot) {
    const int32_t id = d.block_table[b * p.bt_s0 + slot * p.bt_s1];
    if (id < 0 || id >= p.num_blocks) return slot;
  }
  return -1;
}

/// The per-batch lengths from the actual-length tensors bound in d, which it reads
/// (docs/semantics.md §3.3), in the order the CPU backend reads them: actual_seq_lengths_query
/// for every batch, then actual_seq_lengths_kv. A count must lie in [0, limit]; prefix sums (TND)
/// must not decrease and the last may not exceed the limit. At the first entry that breaks a
/// rule, *fault describes it (kFaultQueryLength / kFaultKvLength) and the result is false; the
/// batches are then incomplete. Absent tensors mean S1 / S2 per batch.
KVFLASH_HD static inline bool sfa_resolve_lengths(const SfaProblem& p, const SfaData& d,
                                                  SfaBatch* batches, FaultRecord* fault) {
  for (int64_t b = 0; b < p.batch; ++b) batches[b] = SfaBatch{p.s1, p.kv_rows, 0};
  for (int t = 0; t < 2; ++t) {
    const bool query = t == 0;
    if (!(query ? p.has_lengths_query : p.has_lengths_kv)) continue;
    const void* data = query ? d.lengths_query : d.lengths_kv;
    const bool wide = query ? p.lengths_query_64 : p.lengths_kv_64;
    const int64_t s0 = query ? p.lengths_query_s0 : p.lengths_kv_s0;
    const bool prefix = query ? p.query_tnd : p.kv_tnd;
    const int64_t limit = query ? sfa_query_length_limit(p) : sfa_kv_length_limit(p);
    int64_t prev = 0;  // prefix sums: where batch b's rows begin
    for (int64_t b = 0; b < p.batch; ++b) {
      const int64_t x = length_at(data, wide, s0, b);
      if (x < prev || x > limit) {  // prev is 0 for counts
        *fault = fault_of(kFaultOpSfa, query ? kFaultQueryLength : kFaultKvLength, b);
        fault->value = x;
        fault->limit = limit;
        fault->begin = prev;
        return false;
      }
      if (query) {
        batches[b].lq = x - prev;
      } else {
        batches[b].lkv = x - prev;
        batches[b].kv_row0 = prev;
      }
      if (prefix) prev = x;
    }
  }
  return true;
}

/// The record of a run whose per-row fault flags (1 = the row selected a range with a bad block
/// id) are row_fault: the first flagged row, the first of its selected ranges (index order) that
/// holds a bad id, and that range's first bad block-table slot, as kFaultBlockId. False (and
/// *fault untouched) when no flagged row has one. d's tables (rows, batches, indices,
/// block_table) must be readable where this runs.
KVFLASH_HD static inline bool sfa_row_fault_record(const SfaProblem& p, const SfaData& d,
                                                   const uint8_t* row_fault, FaultRecord* fault) {
  for (int64_t r = 0; r < p.num_rows; ++r) {
    if (row_fault[r] == 0) continue;
    const SfaRowLimits lim = sfa_row_limits(p, d, r);
    const int64_t b = d.rows[r].batch;
    for (int64_t k = 0; k < lim.valid_count; ++k) {
      int64_t begin, end;
      if (!sfa_selected_range(d.indices[p.indices.index(r, 0, k)], p.sparse_block_size, lim.thr,
                              &begin, &end)) {
        break;
      }
      if (begin == end) continue;
      const int64_t slot = sfa_bad_slot(p, d, b, begin, end);
      if (slot < 0) continue;
      *fault = fault_of(kFaultOpSfa, kFaultBlockId, b);
      fault->row = r;
      fault->slot = slot;
      fault->value = d.block_table[b * p.bt_s0 + slot * p.bt_s1];
      fault->limit = p.num_blocks;
      return true;
    }
  }
  return false;
}

}  // namespace kvflash::core
