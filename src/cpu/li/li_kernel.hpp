// The LightningIndexer CPU kernel (docs/fia-pfa-indexer.md D9/D10; docs/lightning_indexer.md):
// pure compute over a plain-old-data problem description (LiParams), the bound pointers of one
// call (LiData) and a workspace sized up front. It reads the device data (lengths, block table) at
// run time, faults rows whose data is bad, scores every valid key of a query row for all its
// heads in one pass over the key rows, and selects the row's top sparse_count deterministically.
// No validation of arguments (that is the operator's validator), no allocation, no I/O.
//
// The interface is written for the backend contract of issue 18 (run(params, data, context)):
// nothing here depends on a user-level argument struct.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/backend.hpp"
#include "kvflash/status.hpp"
#include "kvflash/tensor.hpp"
#include "ops/li/li_problem.hpp"

namespace kvflash::cpu {

inline constexpr const char* kLiOpName = "lightning_indexer";
inline constexpr int64_t kLiHeadDim = 128;
inline constexpr int64_t kLiMaxHeads = 64;
/// At most this many workers run one call: each needs its own scratch lane, and the workspace is
/// a function of the problem only, never of the thread count.
inline constexpr int kLiMaxLanes = 64;

// The problem and the bound pointers are the operator's (ops/li/li_problem.hpp).
using core::LiData;
using core::LiKeyLayout;
using core::LiParams;

/// A query row the kernel scores: its batch, where its batch's keys start (TND), and its number
/// of valid keys n >= 1 (keys 0..n-1 of the batch's logical sequence); and what one scorer call
/// does with it: the keys [j0, j1) (the whole row, or one thread's share when a row's keys are
/// split across threads), staging the query row and weights into the scratch first or finding
/// them staged there.
struct LiRowRef {
  int64_t row = 0, batch = 0, i = 0, kv_first = 0, n = 0;
  int64_t j0 = 0, j1 = 0;
  bool stage = true;
};

/// One participant's scratch (64-byte aligned pieces of the workspace).
struct LiScratch {
  float* q;        ///< the staged query: 128 x 64 fp32 (or 64 x 64 bf16 pairs)
  float* w;        ///< the staged weights: 64 fp32
  float* kt;       ///< key rows widened to fp32: kLiKeyChunk x 128 (the tiles: their scores)
  uint16_t* kb;    ///< key rows gathered contiguously (strided key views): the same
  uint32_t* keys;  ///< the row's scores as ordered keys: kv_cap
  uint32_t* hist;  ///< radix-select histogram: kLiRadixBins
  uint64_t* sel;   ///< the selection being sorted: sparse_count + 1
  uint64_t* tmp;   ///< the radix sort's other buffer: sparse_count
  int32_t* cand;   ///< the radix select's candidates: li_topk_candidates() + 1
};
inline constexpr int64_t kLiKeyBlock = 4;
/// Query rows of one batch scored together, sharing each key block's read (li_kernel-inl.h): two
/// staged queries (2 x 16 KiB as bf16 pairs) and a key block stay in a 48 KiB L1D.
inline constexpr int kLiRowGroup = 2;
/// Keys a row group fetches per step (li_kernel-inl.h), each row scoring them in turn.
inline constexpr int64_t kLiKeyChunk = 32;
inline constexpr int64_t kLiRadixBins = 2048;

/// Writes the order keys (li_order_key) of the scores of keys rows[r].j0..rows[r].j1-1 of each
/// row r < count into s[r].keys[j0, j1), and the histogram of their first radix digits
/// (key >> kLiRadixShift0) into s[r].hist (the selection's first pass, for those keys); stages
/// the query row and weights into s[r].q, s[r].w first when rows[r].stage (else reads them there).
/// The rows (1..kLiRowGroup) are of one batch and share j0: every key block is read once for all
/// of them (s[0]'s key staging). A key's order key is the same bits whichever range, group, call
/// or thread scores it. The seam of li_kernel-inl.h: a matrix-engine scorer has this signature and
/// duty too.
using LiScoreRowsFn = void (*)(const LiParams& p, const LiData& d, const LiRowRef* rows,
                               const LiScratch* s, int count);

/// One instruction set's scorers, compiled in its own translation unit (li_kernel_<isa>.cpp,
/// tables declared in li_kernel_isa.hpp) and named by its entry of the backend list
/// (src/backends/lists.cpp), so nothing inside a run chooses an instruction set. The run picks
/// by the problem's dtype only.
struct LiKernels {
  LiScoreRowsFn score_fp16;  ///< fp16 query and key
  LiScoreRowsFn score_bf16;  ///< bf16 query and key
};

/// Bytes of workspace li_run needs for p (any alignment accepted): a function of p only.
size_t li_workspace_size(const LiParams& p);

/// Computes sparse_indices (and sparse_values) of p for d's tensors with kernels k (whose
/// instruction set the CPU must support) on ctx.num_threads workers (0 = default), in
/// ctx.workspace (li_workspace_size(p) bytes). Output bits depend on nothing but the inputs and
/// the kernels' ISA level (never on the thread count). Bad device data (D10) is kInvalid naming
/// the first bad entry: the rows it concerns are all -1 with NaN values, every other row is
/// computed.
Status li_run(const LiParams& p, const LiData& d, const core::RunContext& ctx, const LiKernels& k);

/// Element offset of query row `row`'s (h = 0, d = 0) and of its weight (h = 0).
inline int64_t li_query_offset(const LiParams& p, int64_t row) {
  return p.q_tnd ? row * p.q_ss : (row / p.s1) * p.q_sb + (row % p.s1) * p.q_ss;
}
inline int64_t li_weight_offset(const LiParams& p, int64_t row) {
  return p.q_tnd ? row * p.w_ss : (row / p.s1) * p.w_sb + (row % p.s1) * p.w_ss;
}

/// Address of key j (d = 0) of batch b, whose keys start at kv_first (TND). Paged: the block id
/// was checked by li_run's prologue.
inline const uint16_t* li_key_row(const LiParams& p, const LiData& d, int64_t b, int64_t kv_first,
                                  int64_t j) {
  int64_t off;
  switch (p.key_layout) {
    case LiKeyLayout::kPaged: {
      const int64_t blk = d.block_table[b * p.bt_s0 + (j / p.block_size) * p.bt_s1];
      off = blk * p.k_s0 + (j % p.block_size) * p.k_s1;
      break;
    }
    case LiKeyLayout::kTnd:
      off = (kv_first + j) * p.k_s1;
      break;
    default:
      off = b * p.k_s0 + j * p.k_s1;
      break;
  }
  return static_cast<const uint16_t*>(d.key) + off;
}

/// Walks a batch's key rows 0, 1, 2, ... in order: the next row's address without a division per
/// key (paged: one block-table read per block).
class LiKeyCursor {
 public:
  /// Starts at row j0 (a valid key: its block id was checked).
  LiKeyCursor(const LiParams& p, const LiData& d, int64_t b, int64_t kv_first, int64_t j0 = 0)
      : p_(p), d_(d), b_(b), kv_first_(kv_first), j_(j0) {
    if (p_.key_layout != LiKeyLayout::kPaged || j0 == 0) return;
    slot_ = j0 / p_.block_size;
    pos_ = j0 % p_.block_size;
    if (pos_ == 0) return;
    const int64_t blk = d_.block_table[b_ * p_.bt_s0 + slot_++ * p_.bt_s1];
    block_ = static_cast<const uint16_t*>(d_.key) + blk * p_.k_s0;
  }
  const uint16_t* next() {
    if (p_.key_layout != LiKeyLayout::kPaged) return li_key_row(p_, d_, b_, kv_first_, j_++);
    if (pos_ == 0 || pos_ == p_.block_size) {
      const int64_t blk = d_.block_table[b_ * p_.bt_s0 + slot_++ * p_.bt_s1];
      block_ = static_cast<const uint16_t*>(d_.key) + blk * p_.k_s0;
      pos_ = 0;
    }
    return block_ + (pos_++) * p_.k_s1;
  }

 private:
  const LiParams& p_;
  const LiData& d_;
  int64_t b_, kv_first_, j_ = 0, slot_ = 0, pos_ = 0;
  const uint16_t* block_ = nullptr;
};

/// The selection order as unsigned keys: larger key = ranks first. NaN (any payload or sign) is
/// the largest key, then +inf ... -inf by value; -0 maps to +0's key (they are equal scores).
inline uint32_t li_order_key(float s) {
  uint32_t u = __builtin_bit_cast(uint32_t, s);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0xffffffffu;
  if (u == 0x80000000u) u = 0;
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
/// The score of an order key (NaN for the NaN key; +0 for both zeros).
inline float li_order_value(uint32_t key) {
  if (key == 0xffffffffu) return __builtin_nanf("");
  const uint32_t u = (key & 0x80000000u) ? (key & 0x7fffffffu) : ~key;
  return __builtin_bit_cast(float, u);
}

/// The first radix digit of an order key is key >> kLiRadixShift0 (kLiRadixBins values): the
/// scorers histogram it as they write the keys (the selection's first pass, fused).
inline constexpr int kLiRadixShift0 = 21;

/// li_select_topk's scratch: hist kLiRadixBins, sel k + 1 entries (its branch-free passes write
/// one past what they keep), tmp k, cand cand_cap + 1.
struct LiTopkScratch {
  uint32_t* hist = nullptr;
  uint64_t* sel = nullptr;
  uint64_t* tmp = nullptr;
  int32_t* cand = nullptr;
  int64_t cand_cap = 0;
};
/// The candidate buffer's capacity for sparse_count k and at most kv_cap keys.
int64_t li_topk_candidates(int64_t k, int64_t kv_cap);

/// The deterministic top-k of one row (ISA-independent; li_topk.cpp): the min(n, k) largest of
/// keys[0, n) as (key, lower index first on equal keys), in descending order, into idx[0, c);
/// returns c, and leaves sel[s] = (order key << 32) | (0xffffffff - idx[s]) for s < c. A radix
/// select on the 32-bit keys (11 + 11 + 10 bits) finds the k-th largest key T: the first digit's
/// histogram (given in hist when hist_ready: the scorer's), then one branch-free pass takes the
/// keys of higher first digits and lists the positions in T's first-digit bin as candidates, and
/// the other two digits and the final pick (above T, then the lowest-indexed equal to T) run over
/// the candidates only (over all keys when the bin exceeds cand_cap: mass ties). Only the c
/// selected are sorted (a stable radix sort on the key): no sort of all n keys.
int64_t li_select_topk(const uint32_t* keys, int64_t n, int64_t k, const LiTopkScratch& s,
                       bool hist_ready, int32_t* idx);

/// One shard's selection for one query row (li_merge_topk's input): entries (scores[s],
/// indices[s]) for s < size, in the selection order (descending li_order_key of the score, equal
/// keys by the lower index), indices global (positions in the row's whole key sequence); the first
/// index -1 ends the list (what follows is ignored).
struct LiTopkList {
  const float* scores = nullptr;
  const int32_t* indices = nullptr;
  int64_t size = 0;
};

/// The exact merge of disjoint shards' selections of one row (context-parallel indexer: rank r
/// scores the keys it holds and selects its top k of them by global index): the top k of the
/// union in the selection order, into out_idx[0, k) and out_scores[0, k) (-1 / -inf after the
/// last), returning how many are valid. Each key's score is the same bits on every rank (it
/// depends on nothing but the query row and the key row), and the order is a total order on
/// (key, global index), so the global top k is inside the union of the shards' top k and this
/// equals one indexer over the whole key sequence: same indices, same score bits, NaN first and
/// ties to the lower index included. Each output slot takes the largest of the lists' heads: no
/// allocation, no dependence on the order of the lists. At most 256 lists. Returns -1 (outputs
/// unspecified) when a list is out of the selection order or two lists hold the same entry.
int64_t li_merge_topk(const LiTopkList* lists, int num_lists, int64_t k, int32_t* out_idx,
                      float* out_scores);

}  // namespace kvflash::cpu
