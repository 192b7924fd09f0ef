// LightningIndexer (DeepSeek-V3.2's sparse-attention indexer) — the C++ API.
//
// Semantics are those of aclnnLightningIndexer / torch_npu.npu_lightning_indexer
// (docs/lightning_indexer.md, docs/fia-pfa-indexer.md D9, D10): for every query row t and every
// valid key j of its batch,
//   score[t, j] = sum_h w[t, h] * relu(q[t, h, :] . k[j, :])        (no scale; D = 128, N2 = 1)
// and sparse_indices[t] is the top sparse_count keys by descending score, equal scores by the
// lower key index, NaN above every number, -1 after the last valid key. Its TND + PA_BSND output
// is exactly SparseFlashAttention's TND sparse_indices (sfa.hpp).
//
// A plan is built from metadata (shapes, dtypes, strides, devices, attributes) and holds no data
// pointer; run() binds the tensors of one call (see ifa.hpp for the pattern). The lengths and
// the block table are device data, read by run() in stream order: a bad entry faults the rows it
// concerns (all -1, values NaN) and run() returns kInvalid naming it; nothing outside the tensors
// is ever read.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>

#include "kvflash/status.hpp"
#include "kvflash/tensor.hpp"

namespace kvflash {

/// All inputs of one LightningIndexer call. Views are borrowed for the duration of a call.
/// Strides and offsets of every input are honoured; outputs must be contiguous.
struct LightningIndexerArgs {
  TensorView query;    ///< BSND (B,S1,N1,128) | TND (T,N1,128); fp16 or bf16; N1 in 1..64
  TensorView key;      ///< BSND (B,S2,1,128) | TND (T2,1,128) | PA_BSND (blocks,block_size,1,128)
  TensorView weights;  ///< BSND (B,S1,N1) | TND (T,N1); fp32 or the query dtype
  /// int32 (B): BSND query counts per batch (absent: S1); TND prefix sums (required).
  std::optional<TensorView> actual_seq_lengths_query;
  /// int32 (B): BSND / PA_BSND key counts per batch (absent: S2; required for PA); TND prefix sums.
  std::optional<TensorView> actual_seq_lengths_key;
  std::optional<TensorView> block_table;  ///< int32 (B, M); required iff layout_key is PA_BSND
  std::string layout_query = "BSND";      ///< "BSND" | "TND"
  std::string layout_key = "BSND";        ///< "BSND" | "TND" (== layout_query) | "PA_BSND"
  int64_t sparse_count = 2048;            ///< 1..2048, or a multiple of 1024 up to 8192
  int64_t sparse_mode = 3;                ///< 0: j < S2_b; 3: j < S2_b - S1_b + i + 1
  int64_t pre_tokens = std::numeric_limits<int64_t>::max();   ///< must be INT64_MAX
  int64_t next_tokens = std::numeric_limits<int64_t>::max();  ///< must be INT64_MAX
  bool return_value = false;                                  ///< write sparse_values
  /// int32 BSND (B,S1,1,K) | TND (T,1,K), contiguous.
  TensorView sparse_indices;
  /// The query dtype, the shape of sparse_indices, contiguous: the scores rounded (nearest even),
  /// -inf in -1 slots (NaN in a faulted row). Or fp32 (kvflash extension, not through aclnn or
  /// torch_npu's schema): the fp32 scores unrounded, what a context-parallel rank hands to the
  /// exact top-k merge (docs/lightning_indexer.md). Required with return_value; ignored (not even
  /// looked at) without.
  std::optional<TensorView> sparse_values;
  /// Worker threads for this call; 0 = the library default. Results do not depend on it.
  int num_threads = 0;
};

namespace core {
template <class Plan>
struct PlanAccess;  // library-internal (src/core/plan_access.hpp)
}  // namespace core

/// A validated, planned LightningIndexer call.
class KVFLASH_API LightningIndexerPlan {
 public:
  /// Validates args (the only place that rejects input) and builds a plan from their metadata;
  /// no tensor is read. On failure *plan is reset and the status says why.
  static Status create(const LightningIndexerArgs& args,
                       std::unique_ptr<LightningIndexerPlan>* plan);
  ~LightningIndexerPlan();
  LightningIndexerPlan(const LightningIndexerPlan&) = delete;
  LightningIndexerPlan& operator=(const LightningIndexerPlan&) = delete;

  /// Bytes of scratch memory run() needs, on the plan's device: a function of the plan only (the
  /// same for every run, thread count and instruction set). Any alignment is accepted.
  size_t workspace_size() const;

  /// Computes sparse_indices (and sparse_values) for the tensors of args, which must have the
  /// plan's metadata (see IfaPlan::run); data pointers and num_threads may differ. Never
  /// allocates. Host tensors run synchronously (stream must be null).
  ///
  /// Bad device data is kInvalid with a message naming the first bad entry: a query or key length
  /// out of range or a prefix sum out of order, or a block id outside [0, num_blocks) among the
  /// blocks a batch's rows read. The rows it concerns are all -1 (values NaN); every other row
  /// is computed.
  Status run(const LightningIndexerArgs& args, void* workspace, size_t workspace_size,
             void* stream = nullptr) const;

  /// The status of the device data the last run with `workspace` on `stream` read (see
  /// IfaPlan::status). The indexer has host entries only: run() has already returned that status,
  /// so status() reads nothing and returns kSuccess.
  Status status(const void* workspace, void* stream = nullptr) const;

  /// The plan-relevant metadata of args as bytes, for keying a cache of plans (see
  /// SfaPlan::fingerprint). kRuntime when out of memory.
  static Status fingerprint(const LightningIndexerArgs& args, std::string* bytes);

 private:
  struct Impl;
  template <class>
  friend struct core::PlanAccess;  // library-internal (src/core/plan_access.hpp)
  explicit LightningIndexerPlan(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// One-shot convenience: validate, allocate a workspace, run.
KVFLASH_API Status lightning_indexer(const LightningIndexerArgs& args);

}  // namespace kvflash
