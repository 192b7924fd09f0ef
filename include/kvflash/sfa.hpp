// SparseFlashAttention (DeepSeek-V3.2 sparse MLA, absorbed form) — the C++ API.
//
// Semantics are those of aclnnSparseFlashAttention / V2 (docs/semantics.md §3,
// docs/conventions.md): each query row attends only the KV tokens its sparse_indices select (token
// or block indices relative to its own sequence), with an optional causal limit (sparse_mode 3) and
// optional attention sinks.
//
// A plan is built from metadata (shapes, dtypes, strides, devices, attributes) and holds no data
// pointers; run() binds the tensors of one call, so one plan serves every step with the same
// shapes (see ifa.hpp for the pattern). Device data (the actual lengths, sparse_indices, the
// block table, sinks) is read by run(), in stream order: indices are filtered by the selection
// rules, and every block-table entry a selected position uses is checked before that position is
// read, so no content of the device tensors can make kvflash read outside them.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>

#include "kvflash/status.hpp"
#include "kvflash/tensor.hpp"

namespace kvflash {

/// All inputs of one SFA call. Views are borrowed for the duration of a call.
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
  bool return_softmax_lse = false;                            ///< write softmax_max / softmax_sum
  /// Query shape, contiguous; query dtype, or fp32 (kvflash extension: the unrounded result, a
  /// partial to merge with merge_attention_states; not available through aclnn).
  TensorView attention_out;
  /// fp32 BSND (B,1,S1,N1) | TND (1,T1,N1), contiguous: the row max m (scaled, sink included) and
  /// the sum of exp(s - m) (sink term included). Written only when return_softmax_lse.
  std::optional<TensorView> softmax_max, softmax_sum;
  /// Worker threads for this call; 0 = the library default. Results do not depend on it.
  int num_threads = 0;
};

namespace core {
template <class Plan>
struct PlanAccess;  // library-internal (src/core/plan_access.hpp)
}  // namespace core

/// A validated, planned SFA call.
class KVFLASH_API SfaPlan {
 public:
  /// Validates args (the only place that rejects input) and builds a plan from their metadata;
  /// no tensor is read. On failure *plan is reset and the status says why.
  static Status create(const SfaArgs& args, std::unique_ptr<SfaPlan>* plan);
  ~SfaPlan();
  SfaPlan(const SfaPlan&) = delete;
  SfaPlan& operator=(const SfaPlan&) = delete;

  /// Bytes of scratch memory run() needs, on the plan's device: a function of the plan only (the
  /// same for every run, thread count and instruction set). Any alignment is accepted.
  size_t workspace_size() const;

  /// Computes attention_out (and the softmax outputs) for the tensors of args, which must have
  /// the plan's metadata (see IfaPlan::run); data pointers and num_threads may differ. Never
  /// allocates. Host tensors run synchronously (stream must be null).
  ///
  /// Bad device data is kInvalid with a message: actual lengths out of range (every output NaN),
  /// or a selected position whose block-table entry is outside [0, num_blocks) (that query row's
  /// outputs and softmax max/sum NaN; every other row is computed).
  Status run(const SfaArgs& args, void* workspace, size_t workspace_size,
             void* stream = nullptr) const;

  /// The status of the device data the last run queued with `workspace` on `stream` read. A run
  /// on device tensors (CUDA) returns once its work is queued, so bad device data (bad lengths, a
  /// bad block id) cannot be its status: the kernels leave a fault record in the workspace instead.
  /// status() waits for the stream, copies the record back (in stream order) and returns what run()
  /// returns on host tensors for the same data: kSuccess, or kInvalid with the same message. Call
  /// it before the workspace is used again; kNullPtr for a null workspace, kRuntime when the copy
  /// fails. On host tensors run() has already returned that status: status() reads nothing and
  /// returns kSuccess.
  Status status(const void* workspace, void* stream = nullptr) const;

  /// The plan-relevant metadata of args as bytes, for keying a cache of plans: every tensor's
  /// dtype, dims, strides, offset and device (or its absence), each list's length and
  /// the attributes; no data pointer, not num_threads. Arguments with equal bytes are
  /// run by one plan: a plan created from the one accepts the other's metadata. The bytes are
  /// stable within one build of kvflash (not a storage format). kRuntime when out of memory.
  static Status fingerprint(const SfaArgs& args, std::string* bytes);

 private:
  struct Impl;
  template <class>
  friend struct core::PlanAccess;  // library-internal (src/core/plan_access.hpp)
  explicit SfaPlan(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// One-shot convenience: validate, allocate a workspace, run.
KVFLASH_API Status sparse_flash_attention(const SfaArgs& args);

}  // namespace kvflash
