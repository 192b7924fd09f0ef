// FusedInferAttentionScore and PromptFlashAttention (prefill and unified attention, query length
// >= 1) — the C++ API.
//
// Semantics are those of aclnnFusedInferAttentionScoreV4 with the scope and decisions of
// docs/fia-pfa-indexer.md (Part A, D1-D8) and kvflash's own choices in docs/fia-semantics.md:
// every layout and output-layout variant, GQA, masks and sparse modes 0-4, pse_shift, query / KV
// left padding, a shared prefix, paged KV (BnBsH, BnNBsD), KV tensor lists, int8 KV antiquant,
// int8 output post-quant, the softmax LSE, a learnable sink, MLA rope. What D1 refuses (NZ
// caches, full int8 quantisation, antiquant modes 2-6, ...) is kInvalid with a message naming the
// feature.
//
// PromptFlashAttention is the subset of FiaArgs that aclnnPromptFlashAttentionV3 has, with
// `prompt = true` (PFA never takes FIA's Q_S = 1 decode branch, D4):
//
//   PFA V3 argument          FiaArgs member
//   query, key, value        query, key = {key}, value = {value}
//   pseShift, attenMask      pse_shift, atten_mask
//   actualSeqLengths(Kv)     actual_seq_lengths, actual_seq_lengths_kv
//   deqScale1, quantScale1,  dequant_scale1, quant_scale1, dequant_scale2 (must be absent, D1)
//   deqScale2
//   quantScale2, quantOffset2  quant_scale2, quant_offset2
//   numHeads, scaleValue, preTokens, nextTokens, inputLayout, numKeyValueHeads, sparseMode,
//   innerPrecise             num_heads, scale, pre_tokens, next_tokens, input_layout,
//                            num_key_value_heads, sparse_mode, inner_precise
//   attentionOut             attention_out
//
// PFA's torch defaults differ from FIA's (next_tokens 0, inner_precise 1): callers set them. The
// other members stay at their defaults for PFA; a PFA call that sets them gets FIA's meaning (a
// kvflash extension).
//
// A plan is built from metadata (shapes, dtypes, strides, devices, attributes and the host arrays
// actual_seq_lengths, actual_seq_lengths_kv and actual_shared_prefix_len) and holds no data
// pointers; run() binds the tensors of one call (see ifa.hpp for the pattern):
//
//   kvflash::FiaArgs args;                       // fill the views and attributes
//   std::unique_ptr<kvflash::FiaPlan> plan;
//   if (kvflash::FiaPlan::create(args, &plan) != kvflash::Status::kSuccess) {
//     ... kvflash::last_error_message() ...
//   }
//   std::vector<std::byte> ws(plan->workspace_size());
//   plan->run(args, ws.data(), ws.size());
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kvflash/status.hpp"
#include "kvflash/tensor.hpp"

namespace kvflash {

/// The schemas' pre_tokens / next_tokens default (INT32_MAX: unbounded).
inline constexpr int64_t kFiaTokensMax = 2147483647;

/// All inputs of one FIA (or PFA) call, in the order of aclnnFusedInferAttentionScoreV5's
/// parameters, named as torch's npu_fused_infer_attention_score. Views are borrowed for the
/// duration of a call. Strides and offsets of every input are honoured (d contiguous);
/// outputs must be contiguous.
struct FiaArgs {
  /// BSH (B,S1,N*D) | BSND (B,S1,N,D) | BNSD (B,N,S1,D) | TND (T,N,D) | NTD (N,T,D); fp16 or bf16.
  TensorView query;
  /// One tensor in the query's layout (KV heads and KV length), or a paged cache with
  /// block_table (rank 3 BnBsH (blocks, block_size, KV_N*D), rank 4 BnNBsD (blocks, KV_N,
  /// block_size, D)), or B tensors of batch 1 (tensor list, non-TND layouts). Query dtype or
  /// int8 (antiquant).
  std::vector<TensorView> key;
  std::vector<TensorView> value;        ///< as key; its D may differ (MLA)
  std::optional<TensorView> pse_shift;  ///< (B|1, N, S1|1, S2), fp16/bf16, added after scaling
  std::optional<TensorView>
      atten_mask;  ///< bool/int8/uint8, nonzero = masked (docs/fia-semantics.md)
  /// Host lengths (D6): per batch (length 1 broadcasts, >= B uses the first B); TND/NTD:
  /// cumulative, except actual_seq_lengths_kv with a block table (per batch).
  std::optional<std::vector<int64_t>> actual_seq_lengths, actual_seq_lengths_kv;
  std::optional<TensorView> dequant_scale1, quant_scale1, dequant_scale2;  ///< must be absent (D1)
  std::optional<TensorView> quant_scale2;   ///< required iff attention_out is int8
  std::optional<TensorView> quant_offset2;  ///< optional, quant_scale2's shape and dtype
  /// Combined antiquant parameters, leading dim 2 = (key, value): per-channel or per-tensor
  /// (antiquant_mode 0), per-token (2, B, S2) (antiquant_mode 1).
  std::optional<TensorView> antiquant_scale, antiquant_offset;
  std::optional<TensorView> block_table;  ///< int32 (B, max_blocks_per_seq): paged KV
  /// int64 (1,): query / KV left padding (device data, read by run()).
  std::optional<TensorView> query_padding_size, kv_padding_size;
  /// Split antiquant parameters (win over the combined ones when given): per-channel / per-tensor
  /// (mode 0) or per-token (1, B, S2) | (B, S2) (mode 1).
  std::optional<TensorView> key_antiquant_scale, key_antiquant_offset;
  std::optional<TensorView> value_antiquant_scale, value_antiquant_offset;
  /// Shared prefix: batch 1, key's layout; its length actual_shared_prefix_len (host, length 1).
  std::optional<TensorView> key_shared_prefix, value_shared_prefix;
  std::optional<std::vector<int64_t>> actual_shared_prefix_len;
  /// MLA: rope dims (64), query's / key's layout and dtype. Both or neither.
  std::optional<TensorView> query_rope, key_rope;
  std::optional<TensorView> key_rope_antiquant_scale;  ///< must be absent (D1)
  std::optional<TensorView> dequant_scale_query;       ///< must be absent (D1)
  std::optional<TensorView> learnable_sink;            ///< (N,) fp16/bf16/fp32 (D8)
  /// aclnnFusedInferAttentionScoreV5's qStartIdx / kvStartIdx: where a split sequence's chunk
  /// starts, for a position encoding generated in the operator, which FIA does not have (only
  /// pse_type 0). Must be absent or empty (docs/api.md, "FusedInferAttentionScore and
  /// PromptFlashAttention").
  std::optional<std::vector<int64_t>> q_start_idx, kv_start_idx;

  int64_t num_heads = 1;
  double scale = 1.0;  ///< applied as (float)scale after Q·K
  int64_t pre_tokens = kFiaTokensMax, next_tokens = kFiaTokensMax;
  /// A query layout ("BSH", "BSND", "BNSD", "TND", "NTD") or "<in>_<out>" (BNSD_BSND, BSH_NBSD,
  /// BSND_NBSD, BNSD_NBSD, TND_NTD, NTD_TND).
  std::string input_layout = "BSH";
  int64_t num_key_value_heads = 0;  ///< 0 means num_heads
  int64_t sparse_mode = 0;          ///< 0-4 (D3)
  int64_t inner_precise = 0;        ///< 0-3 (Q_S = 1: 0/1); no numerical effect (D2)
  int64_t block_size = 0;           ///< paged KV block size (used only with block_table)
  int64_t antiquant_mode = 0, key_antiquant_mode = 0, value_antiquant_mode = 0;  ///< 0 or 1
  bool softmax_lse_flag = false;  ///< write softmax_lse
  int64_t query_quant_mode = 0;   ///< must be 0 (D1: no int8 query)
  /// V5's pseType: must be 0, the only value the V5 document gives inference (pse_shift is an
  /// input, added after scaling).
  int64_t pse_type = 0;
  /// Output layout's shape, contiguous: query dtype, int8 (post-quant), or fp32 (kvflash
  /// extension: the unrounded result; not available through aclnn).
  TensorView attention_out;
  /// fp32 contiguous [T, N, 1] (TND / NTD inputs) or [B, N, S1, 1] (D7); required iff
  /// softmax_lse_flag (ignored, and may be absent, otherwise).
  std::optional<TensorView> softmax_lse;

  // ---- kvflash extensions ----
  /// PromptFlashAttention: never the decode branch (D4 is FIA's rule).
  bool prompt = false;
  /// fp32 query, key and value (and ropes): FlashAttentionScore's (kvflash/flash_attention_score.hpp)
  /// third input dtype, which FIA and PFA upstream refuse. The kernel widens every input to fp32
  /// anyway, so an fp32 input is read as it is; attention_out is then fp32 too.
  bool fp32_inputs = false;
  /// The softmax max and sum of each (row, head) over its visible positions (FlashAttentionScore's
  /// softmaxMax / softmaxSum): fp32, contiguous, softmax_lse's shape with a last dim of 8 ([T, N, 8]
  /// or [B, N, S1, 8]), each value written to all 8 (upstream's broadcast form). max is the row's
  /// largest scaled score, sum the sum of exp(score - max) (the learnable sink's term included), so
  /// softmax_lse = max + log(sum). A row with nothing visible (and a padding row) gets 0 and 0: its
  /// max + log(sum) is -inf, an empty part for merge_attention_states. Both or neither; such a
  /// call never takes IFA's kernels.
  std::optional<TensorView> softmax_max, softmax_sum;
  /// Worker threads for this call (host tensors); 0 = the library default. Results do not
  /// depend on it; a run may change it.
  int num_threads = 0;
};

namespace core {
template <class Plan>
struct PlanAccess;  // library-internal (src/core/plan_access.hpp)
}  // namespace core

/// A validated, planned FIA / PFA call.
class KVFLASH_API FiaPlan {
 public:
  /// Validates args (the only place that rejects input) and builds a plan from their metadata;
  /// no tensor is read (device data, the block table and padding sizes, is read by run(), in
  /// stream order). On failure *plan is reset and the status and last_error_message() say why.
  static Status create(const FiaArgs& args, std::unique_ptr<FiaPlan>* plan);
  ~FiaPlan();
  FiaPlan(const FiaPlan&) = delete;
  FiaPlan& operator=(const FiaPlan&) = delete;

  /// Bytes of scratch memory run() needs (may be 0), on the plan's device: a function of the
  /// plan only (the same for every run, thread count and instruction set). Any alignment.
  size_t workspace_size() const;

  /// Computes attention_out (and softmax_lse) for the tensors of args, which must have the
  /// plan's metadata (see IfaPlan::run); data pointers and num_threads may differ. Never
  /// allocates. Host tensors run synchronously (stream must be null). Bad device data (a block id
  /// outside [0, num_blocks) that a length references, a padding size that moves a batch out of
  /// its tensor) is kInvalid: that batch's outputs are NaN (int8: 0), its LSE NaN.
  Status run(const FiaArgs& args, void* workspace, size_t workspace_size,
             void* stream = nullptr) const;

  /// The status of the device data the last run with `workspace` on `stream` read (see
  /// IfaPlan::status). FIA has host entries only: run() has already returned that status, so
  /// status() reads nothing and returns kSuccess.
  Status status(const void* workspace, void* stream = nullptr) const;

  /// The plan-relevant metadata of args as bytes (see IfaPlan::fingerprint): equal bytes are
  /// run by one plan. kRuntime when out of memory.
  static Status fingerprint(const FiaArgs& args, std::string* bytes);

 private:
  struct Impl;
  template <class>
  friend struct core::PlanAccess;  // library-internal (src/core/plan_access.hpp)
  explicit FiaPlan(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// One-shot convenience: validate, allocate a workspace, run.
KVFLASH_API Status fused_infer_attention_score(const FiaArgs& args);

/// One-shot PromptFlashAttention: fused_infer_attention_score with args.prompt forced true.
KVFLASH_API Status prompt_flash_attention(const FiaArgs& args);

}  // namespace kvflash
