// merge_attention_states: the exact log-sum-exp merge of K partial attention results of the same
// query rows — the last step of a context-parallel (sharded-KV) decode, where each rank attends
// its shard of the cache and the partial outputs are combined with their log-sum-exps.
//
// Partial k of row r is (o_k, lse_k): the row's attention output over the positions of part k and
// the natural log of the sum of exp(score) over them (IncreFlashAttention's softmax_lse), or
// (o_k, max_k, sum_k) with lse_k = max_k + log(sum_k) (SparseFlashAttention's softmax_max /
// softmax_sum). A part with nothing to attend is empty: lse_k == -inf, or sum_k == 0. For each row,
// over the non-empty parts in the fixed order k = 0, 1, ..., K-1:
//
//   M   = max(lse_k)                      (max/sum form: max(max_k))   ... and the sink, if given
//   w_k = exp(lse_k - M)                  (max/sum form: sum_k * exp(max_k - M))
//   L   = sum_k w_k                       ... + exp(sink - M) with a sink
//   out = (sum_k w_k * o_k) / L,  lse = M + log(L),  (out_max, out_sum) = (M, L)
//
// A row with no non-empty part and no sink outputs zeros, lse -inf and out_max = out_sum = 0 (the
// IFA empty-row and SFA empty-selection conventions). The sink (SFA's attention sink logit) joins
// M and L but brings no value vector: with a sink the merged result is that of the op with the
// sink over the union of the parts, so parts computed without it merge into the sinked result.
//
// Numerics (docs/conventions.md "merge_attention_states"): fp32 throughout, kvflash's own exp and
// plain IEEE additions and multiplications in the fixed part order, so the output bits depend on
// nothing but the inputs (not the thread count, the instruction set, or which process merges).
// Non-finite values follow IEEE arithmetic, as the attention operators do: a NaN lse / max / sum
// makes the row NaN, a NaN element of a non-empty part's output reaches that column even when the
// part's weight is 0, +inf lse gives NaN; empty parts are never read.
//
//   kvflash::MergeArgs args;   // partial_out [K, rows..., D], partial_lse [K, rows...], out ...
//   std::unique_ptr<kvflash::MergePlan> plan;
//   kvflash::MergePlan::create(args, &plan);
//   plan->run(args, nullptr, 0);     // workspace_size() is 0 on the CPU
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kvflash/status.hpp"
#include "kvflash/tensor.hpp"

namespace kvflash {

/// The arguments of one merge. "rows..." is any number of dims (0 to kMaxRank - 2), the same for
/// every tensor; inputs may have any non-negative strides (stride 0 broadcasts), outputs are
/// contiguous and must not overlap the inputs.
struct MergeArgs {
  /// [K, rows..., D], fp32, fp16 or bf16: the normalised partial outputs, K >= 1, D >= 1. Required
  /// unless the list form (below) is given.
  std::optional<TensorView> partial_out;
  /// [K, rows...] fp32: each part's natural-log sum of exp(score); -inf marks an empty part.
  /// Give either partial_lse or both partial_max and partial_sum.
  std::optional<TensorView> partial_lse;
  /// [K, rows...] fp32 each: each part's softmax max and its sum of exp(score - max) (SFA's
  /// softmax_max / softmax_sum); sum 0 marks an empty part.
  std::optional<TensorView> partial_max, partial_sum;
  /// [rows...] fp32: a sink logit per row (SFA's per-head sink, broadcast with stride 0), counted
  /// once in the merged max and sum.
  std::optional<TensorView> sink;
  /// The list form (aclnnAttentionUpdate's and torch_npu.npu_attention_update's): the K parts as
  /// K separate tensors instead of partial_out and partial_lse, partial_out_list[k] [rows..., D]
  /// and partial_lse_list[k] [rows...] fp32, both lists K long, every entry with entry 0's dtype,
  /// dims and strides (each may be anywhere in memory). Give either the two lists (partial_out
  /// then left empty, and no partial_lse / max / sum) or partial_out.
  std::vector<TensorView> partial_out_list, partial_lse_list;
  /// [rows..., D], fp32, fp16 or bf16 (rounded to nearest even), contiguous.
  TensorView out;
  /// [rows...] fp32, contiguous: the merged natural-log sum-exp (-inf for rows with nothing).
  std::optional<TensorView> out_lse;
  /// [rows...] fp32, contiguous, both or neither: the merged max M and sum L (out_lse = M +
  /// log(L)); 0 and 0 for rows with nothing.
  std::optional<TensorView> out_max, out_sum;
  /// Worker threads for this call; 0 = the library default. Results do not depend on it.
  int num_threads = 0;
};

namespace core {
template <class Plan>
struct PlanAccess;  // library-internal (src/core/plan_access.hpp)
}  // namespace core

/// A validated, planned merge (the plan/run pattern of IfaPlan).
class KVFLASH_API MergePlan {
 public:
  /// Validates args' metadata (the only place that rejects merge input) and builds a plan; reads
  /// no tensor. On failure *plan is reset and the status and last_error_message() say why.
  static Status create(const MergeArgs& args, std::unique_ptr<MergePlan>* plan);
  ~MergePlan();
  MergePlan(const MergePlan&) = delete;
  MergePlan& operator=(const MergePlan&) = delete;

  /// Bytes of scratch memory run() needs on the plan's device: 0 on the CPU.
  size_t workspace_size() const;

  /// Merges the tensors of args, which must have the plan's metadata (dtypes, devices, dims,
  /// strides, offsets, which optional tensors are present); data pointers and num_threads may
  /// differ. Never allocates. Host tensors run synchronously (stream must be null).
  Status run(const MergeArgs& args, void* workspace, size_t workspace_size,
             void* stream = nullptr) const;

  /// The status of the device data a run read: every merge runs on host tensors and returns its
  /// own status, so this reads nothing and returns kSuccess (the member IfaPlan and SfaPlan have
  /// for their device runs, kept alike).
  Status status(const void* workspace, void* stream = nullptr) const;

  /// The plan-relevant metadata of args as bytes, for keying a cache of plans: every tensor's
  /// dtype, dims, strides, offset and device (or its absence), each list's length and
  /// (the merge has no attributes); no data pointer, not num_threads. Arguments with equal bytes
  /// are run by one plan: a plan created from the one accepts the other's metadata. The bytes are
  /// stable within one build of kvflash (not a storage format). kRuntime when out of memory.
  static Status fingerprint(const MergeArgs& args, std::string* bytes);

 private:
  struct Impl;
  template <class>
  friend struct core::PlanAccess;  // library-internal (src/core/plan_access.hpp)
  explicit MergePlan(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// One-shot convenience: validate, allocate a workspace if one is needed, run.
KVFLASH_API Status merge_attention_states(const MergeArgs& args);

}  // namespace kvflash
