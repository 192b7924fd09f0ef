// SparseFlashAttention (DeepSeek-V3.2 sparse MLA, absorbed form) — the C++ API.
//
// Semantics are those of aclnnSparseFlashAttention / V2 (spec §3, docs/conventions.md): each query
// row attends only the KV tokens its sparse_indices select (token or block indices relative to its
// own sequence), with an optional causal limit (sparse_mode 3) and optional attention sinks.
//
//   kvflash::SfaArgs args;            // fill the views and attributes
//   std::unique_ptr<kvflash::SfaPlan> plan;
//   if (kvflash::SfaPlan::create(args, &plan) != kvflash::Status::kSuccess) { ...
//   last_error_message() } std::vector<std::byte> ws(plan->workspace_size()); plan->run(ws.data(),
//   ws.size());  // may be called many times
//
// Data read at plan creation (phase 1): the actual sequence lengths (they fix the problem's row
// structure, as upstream tiling reads them). Data read at run time (phase 2): query, key, value,
// ropes, sinks, sparse_indices and block_table. Indices are filtered by the selection rules, and
// every block-table entry a selected position uses is checked before anything is computed, so no
// content of the device tensors can make kvflash read outside them.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>

#include "kvflash/status.hpp"
#include "kvflash/tensor.hpp"

namespace kvflash {

/// All inputs of one SFA call. Views are borrowed: they must stay valid until the last run.
/// Strides and offsets of every input are honoured; outputs must be contiguous.
struct SfaArgs {
  TensorView query;  ///< BSND (B,S1,N1,512) | TND (T1,N1,512); fp16 or bf16
  TensorView key;    ///< BSND (B,S2,1,512) | TND (T2,1,512) | PA_BSND (blocks,block_size,1,512)
  std::optional<TensorView> value;        ///< same shape and dtype as key; absent means key
  TensorView sparse_indices;              ///< int32 BSND (B,S1,1,K) | TND (T1,1,K)
  std::optional<TensorView> block_table;  ///< int32 (B, M); required iff layout_kv == "PA_BSND"
  /// int32 (B): BSND query counts per batch (absent: S1); TND: prefix sums (required).
  std::optional<TensorView> actual_seq_lengths_query;
  /// int32 (B): BSND/PA_BSND KV counts per batch (absent: S2; required for PA); TND: prefix sums.
  std::optional<TensorView> actual_seq_lengths_kv;
  TensorView query_rope;              ///< (B,S1,N1,64) | (T1,N1,64), query dtype
  TensorView key_rope;                ///< key shape with D = 64, query dtype
  std::optional<TensorView> sinks;    ///< fp32 (N1): per-head attention sink logit (V2)
  double scale_value = 1.0;           ///< applied as (float)scale_value after Q·K
  int64_t sparse_block_size = 1;      ///< power of two in [1, 128]; divides block_size with PA
  std::string layout_query = "BSND";  ///< "BSND" | "TND"
  std::string layout_kv = "BSND";     ///< "BSND" | "TND" (== layout_query) | "PA_BSND"
  int64_t sparse_mode = 3;            ///< 0 = all selected tokens, 3 = bottom-right causal
  int64_t pre_tokens = std::numeric_limits<int64_t>::max();   ///< must be INT64_MAX
  int64_t next_tokens = std::numeric_limits<int64_t>::max();  ///< must be INT64_MAX
  int64_t attention_mode = 2;                                 ///< must be 2 (MLA absorb)
  bool return_softmax_lse = false;  ///< write softmax_max / softmax_sum (not with PA_BSND)
  TensorView attention_out;         ///< query shape and dtype, contiguous
  /// fp32 BSND (B,1,S1,N1) | TND (1,T1,N1), contiguous: the row max m (scaled, sink included) and
  /// the sum of exp(s - m) (sink term included). Written only when return_softmax_lse.
  std::optional<TensorView> softmax_max, softmax_sum;
  /// Worker threads for this call; 0 = the library default. Results do not depend on it.
  int num_threads = 0;
};

/// A validated, planned SFA call. Creation checks every argument and sizes the workspace; run()
/// reads the tensors and computes. run() never allocates.
class KVFLASH_API SfaPlan {
 public:
  struct Impl;
  /// Validates args and builds a plan. On failure *plan is reset and the status says why.
  static Status create(const SfaArgs& args, std::unique_ptr<SfaPlan>* plan);
  ~SfaPlan();
  /// Bytes of scratch memory run() needs. Any alignment is accepted.
  size_t workspace_size() const;
  /// The checks that need the device data, without computing: kInvalid if workspace_size is too
  /// small or a block-table entry used by a selected position is outside [0, block_num). The aclnn
  /// phase 2 calls this synchronously before it enqueues run().
  Status check_run(size_t workspace_size) const;
  /// check_run(), then computes attention_out (and the softmax outputs). Nothing is written when a
  /// check fails.
  Status run(void* workspace, size_t workspace_size) const;
  const Impl& impl() const { return *impl_; }

 private:
  explicit SfaPlan(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// One-shot convenience: validate, allocate a workspace, run.
KVFLASH_API Status sparse_flash_attention(const SfaArgs& args);

}  // namespace kvflash
