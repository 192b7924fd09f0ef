// IncreFlashAttention (decode attention, query length 1) — the C++ API.
//
// Semantics are those of aclnnIncreFlashAttentionV4 (docs/conventions.md, docs/semantics.md §2)
// plus two extensions: an optional softmax LSE output and an option that zeroes fully masked rows.
//
// A plan is built from metadata (shapes, dtypes, strides, devices, attributes and the host array
// actual_seq_lengths) and holds no data pointers; run() binds the tensors of one call. One plan
// serves every decode step with the same shapes:
//
//   kvflash::IfaArgs args;                       // fill the views and attributes
//   std::unique_ptr<kvflash::IfaPlan> plan;
//   if (kvflash::IfaPlan::create(args, &plan) != kvflash::Status::kSuccess) {
//     ... kvflash::last_error_message() ...
//   }
//   std::vector<std::byte> ws(plan->workspace_size());
//   for (each step) {
//     args.query.data = ...; args.attention_out.data = ...;   // same shapes, new data
//     plan->run(args, ws.data(), ws.size());
//   }
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kvflash/status.hpp"
#include "kvflash/tensor.hpp"

namespace kvflash {

/// All inputs of one IFA call. Views are borrowed for the duration of a call.
struct IfaArgs {
  TensorView query;  ///< BSH (B,1,H) | BSND (B,1,N,D) | BNSD (B,N,1,D); fp16 or bf16
  std::vector<TensorView>
      key;  ///< 1 tensor (batch-contiguous or paged cache) or B tensors (list mode)
  std::vector<TensorView> value;         ///< same shapes and dtype as key
  std::optional<TensorView> pse_shift;   ///< (B|1, N, 1, S_pse), query dtype
  std::optional<TensorView> atten_mask;  ///< bool/int8/uint8, nonzero = masked; see conventions
  std::optional<std::vector<int64_t>> actual_seq_lengths;  ///< host array: length 1 or >= B
  std::optional<TensorView> dequant_scale1, quant_scale1, dequant_scale2;  ///< must be absent
  std::optional<TensorView> quant_scale2;      ///< required iff attention_out is int8
  std::optional<TensorView> quant_offset2;     ///< optional, same shape/dtype as quant_scale2
  std::optional<TensorView> antiquant_scale;   ///< required iff key/value are int8
  std::optional<TensorView> antiquant_offset;  ///< optional
  std::optional<TensorView> block_table;       ///< int32 (B, max_blocks_per_seq): enables paged KV
  std::optional<TensorView> kv_padding_size;   ///< int64 (1): KV left padding (V4)
  int64_t num_heads = 1;
  double scale_value = 1.0;
  std::string input_layout = "BSH";  ///< "BSH" | "BSND" | "BNSD"
  int64_t num_key_value_heads = 0;   ///< 0 means num_heads
  int64_t block_size = 0;            ///< paged KV block size (used only with block_table)
  int64_t inner_precise = 1;         ///< 0 or 1; no numerical effect in kvflash
  /// Same shape as query, contiguous; query dtype, int8 (post-quantised), or fp32 (kvflash
  /// extension: the fp32 result unrounded, e.g. a partial result to merge with
  /// merge_attention_states; not available through aclnn).
  TensorView attention_out;

  // ---- kvflash extensions ----
  /// fp32 (B, N) contiguous: natural-log softmax LSE of each (batch, head) over the scaled (and
  /// pse-shifted, mask-replaced) scores. Empty rows (length 0, left-padding start < 0) get -inf.
  std::optional<TensorView> softmax_lse;
  /// Fully masked rows output zeros (and LSE -inf) instead of the mean of V (FIA row-invalid fix).
  bool zero_fully_masked_rows = false;
  /// Paged KV whose sequences may share blocks (prefix caching: vLLM's and ATB PagedAttention's
  /// block tables): drops IFA's rule that the cache holds at least sum_b ceil(len_b / block_size)
  /// blocks. Each sequence still needs that many block_table entries, each in range.
  bool blocks_may_repeat = false;
  /// Worker threads for this call (host tensors); 0 = the library default (set_num_threads, or
  /// the parallel backend's threads). Results do not depend on it; a run may change it.
  int num_threads = 0;
};

namespace core {
template <class Plan>
struct PlanAccess;  // library-internal (src/core/plan_access.hpp)
}  // namespace core

/// A validated, planned IFA call.
class KVFLASH_API IfaPlan {
 public:
  /// Validates args (the only place that rejects input) and builds a plan from their metadata.
  /// Tensors must have data where they hold elements, but no tensor is read: device data (the
  /// block table, kv_padding_size, scales) is read by run(), in stream order. On failure *plan is
  /// reset and the status and last_error_message() say why.
  static Status create(const IfaArgs& args, std::unique_ptr<IfaPlan>* plan);
  ~IfaPlan();
  IfaPlan(const IfaPlan&) = delete;
  IfaPlan& operator=(const IfaPlan&) = delete;

  /// Bytes of scratch memory run() needs (may be 0), on the plan's device. A function of the plan
  /// only: the same for every run, thread count and instruction set. Any alignment is accepted.
  size_t workspace_size() const;

  /// Computes attention_out (and softmax_lse) for the tensors of args, which must describe the
  /// plan's problem: the same shapes, dtypes, strides, offsets, devices, attributes and
  /// actual_seq_lengths as at create(); data pointers (and num_threads) may differ. Never
  /// allocates.
  ///
  /// Host tensors run synchronously (stream must be null). Returns kInvalid when args do not match
  /// the plan or the workspace is too small (nothing written), kNullPtr for missing data, and
  /// kInvalid when device data is bad: a block-table id outside [0, num_blocks) that a length
  /// references, or left padding that moves a batch past the attention mask. Such a batch's
  /// outputs are NaN (int8 output: 0) and its LSE NaN; every other batch is computed normally.
  Status run(const IfaArgs& args, void* workspace, size_t workspace_size,
             void* stream = nullptr) const;

  /// The status of the device data the last run queued with `workspace` on `stream` read. A run
  /// on device tensors (CUDA) returns once its work is queued, so bad device data (a bad block id,
  /// left padding past the mask) cannot be its status: the kernels leave a fault record in the
  /// workspace instead. status() waits for the stream, copies the record back (in stream order) and
  /// returns what run() returns on host tensors for the same data: kSuccess, or kInvalid with the
  /// same message. Call it before the workspace is used again; kNullPtr for a null workspace,
  /// kRuntime when the copy fails. On host tensors run() has already returned that status: status()
  /// reads nothing and returns kSuccess.
  Status status(const void* workspace, void* stream = nullptr) const;

  /// The plan-relevant metadata of args as bytes, for keying a cache of plans: every tensor's
  /// dtype, dims, strides, offset and device (or its absence), each list's length and
  /// the attributes and actual_seq_lengths; no data pointer, not num_threads. Arguments with equal
  /// bytes are run by one plan: a plan created from the one accepts the other's metadata. The bytes
  /// are stable within one build of kvflash (not a storage format). kRuntime when out of memory.
  static Status fingerprint(const IfaArgs& args, std::string* bytes);

 private:
  struct Impl;
  template <class>
  friend struct core::PlanAccess;  // library-internal (src/core/plan_access.hpp)
  explicit IfaPlan(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// One-shot convenience: validate, allocate a workspace, run.
KVFLASH_API Status incre_flash_attention(const IfaArgs& args);

}  // namespace kvflash
