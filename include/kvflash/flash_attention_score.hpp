// FlashAttentionScore (the forward pass of FlashAttention: aclnnFlashAttentionScore /
// aclnnFlashAttentionVarLenScore, torch_npu.npu_fusion_attention) — the C++ API.
//
// attention_out = Softmax(Mask(scale * query·key^T, atten_mask)) · value, per batch and head (GQA:
// N / KV_N query heads share a KV head), with FlashAttentionScore's layouts, masks and sparse
// modes, run as PromptFlashAttention on the prefill kernel (FiaArgs with prompt and fp32_inputs
// set): FlashAttentionScore and PFA compute the same attention over the same masks and bands
// (docs/api.md "FlashAttentionScore" maps every argument). Also written: the softmax max and sum
// of every (row, head), in upstream's [B, N, S1, 8] / [T, N, 8] broadcast form.
//
// In scope: fp16 / bf16 / fp32 inputs; BSH, BSND, BNSD and TND (varlen: actual_seq_qlen /
// actual_seq_kvlen cumulative, trailing zero entries are batches left out, as upstream
// documents); value head dim <= the key's; masks (B|1, 1, S1, S2) and (S1, S2) (bool, uint8 or
// int8, nonzero = masked); sparse modes 0-4 (2-4 with the compressed 2048 x 2048 mask); a call
// without a mask ignores sparse_mode, pre_tokens and next_tokens (all positions attended), as
// upstream documents. Refused by name: dropout (keep_prob < 1, drop_mask), pse (upstream adds it
// before the scale; kvflash's kernel after), the prefix modes 5 / 6 and the varlen outer-split
// modes 7 / 8 (and prefix), the SBH layout, per-head masks (B, N, S1, S2) with N > 1.
//
//   kvflash::FlashAttentionScoreArgs args;       // fill the views and attributes
//   std::unique_ptr<kvflash::FlashAttentionScorePlan> plan;
//   kvflash::FlashAttentionScorePlan::create(args, &plan);
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

/// All inputs of one call, in aclnnFlashAttentionVarLenScoreGetWorkspaceSize's order. Views are
/// borrowed for the duration of a call; inputs may have any strides (d contiguous), outputs are
/// contiguous.
struct FlashAttentionScoreArgs {
  /// BSH (B, S1, N*D) | BSND (B, S1, N, D) | BNSD (B, N, S1, D) | TND (T, N, D); fp16, bf16 or
  /// fp32. key / value: the same layout with KV_N heads and S2 (TND: T2) positions, the query's
  /// dtype; value's D may be smaller than the key's.
  TensorView query, key, value;
  std::optional<TensorView> real_shift;    ///< pse: must be absent (refused)
  std::optional<TensorView> drop_mask;     ///< dropout's mask: must be absent (refused)
  std::optional<TensorView> padding_mask;  ///< reserved upstream: ignored
  std::optional<TensorView> atten_mask;    ///< nonzero = masked; see above
  std::optional<std::vector<int64_t>> prefix;  ///< sparse modes 5 / 6: must be absent
  /// TND only (and required there): cumulative lengths per batch, equally long; trailing entries
  /// that are 0 in both are batches left out.
  std::optional<std::vector<int64_t>> actual_seq_qlen, actual_seq_kvlen;
  double scale = 1.0;
  double keep_prob = 1.0;  ///< must be 1 (dropout is refused)
  int64_t pre_tokens = 2147483647, next_tokens = 2147483647;
  int64_t head_num = 1;  ///< N, the query's heads
  std::string input_layout = "BSH";  ///< BSH, BSND, BNSD or TND (any case); SBH is refused
  int64_t inner_precise = 0;         ///< 0-3, no numerical effect
  int64_t sparse_mode = 0;           ///< 0-4
  /// fp32 [B, N, S1, 8] ([T, N, 8] for TND), contiguous: each row's softmax max / sum, written
  /// to all 8 (FiaArgs::softmax_max: 0 and 0 for a row that sees nothing or a padding row).
  TensorView softmax_max, softmax_sum;
  std::optional<TensorView> softmax_out;  ///< reserved upstream: ignored
  /// The query's layout and dtype with value's D, contiguous.
  TensorView attention_out;
  /// Worker threads for this call; 0 = the library default. Results do not depend on it.
  int num_threads = 0;
};

namespace core {
template <class Plan>
struct PlanAccess;  // library-internal (src/core/plan_access.hpp)
}  // namespace core

/// A validated, planned FlashAttentionScore call (the plan/run pattern of IfaPlan; the plan holds
/// a FiaPlan of the PromptFlashAttention call it runs).
class KVFLASH_API FlashAttentionScorePlan {
 public:
  /// Validates args (FlashAttentionScore's rules, then the prefill kernel's) and builds a plan
  /// from their metadata and host lengths; reads no tensor. On failure *plan is reset and the
  /// status and last_error_message() say why.
  static Status create(const FlashAttentionScoreArgs& args,
                       std::unique_ptr<FlashAttentionScorePlan>* plan);
  ~FlashAttentionScorePlan();
  FlashAttentionScorePlan(const FlashAttentionScorePlan&) = delete;
  FlashAttentionScorePlan& operator=(const FlashAttentionScorePlan&) = delete;

  /// Bytes of workspace run() needs: a function of the plan only.
  size_t workspace_size() const;

  /// Computes attention_out, softmax_max and softmax_sum for args, which must have the plan's
  /// metadata (data pointers and num_threads may differ). Host tensors run synchronously (stream
  /// must be null). After the first run on a thread, never allocates.
  Status run(const FlashAttentionScoreArgs& args, void* workspace, size_t workspace_size,
             void* stream = nullptr) const;

  /// The status of the device data the last run read (see IfaPlan::status): host plans return
  /// every fault from run(), so this reads nothing and returns kSuccess.
  Status status(const void* workspace, void* stream = nullptr) const;

  /// The plan-relevant metadata of args as bytes (see IfaPlan::fingerprint).
  static Status fingerprint(const FlashAttentionScoreArgs& args, std::string* bytes);

 private:
  struct Impl;
  template <class>
  friend struct core::PlanAccess;  // library-internal (src/core/plan_access.hpp)
  explicit FlashAttentionScorePlan(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// One-shot convenience: validate, allocate a workspace, run.
KVFLASH_API Status flash_attention_score(const FlashAttentionScoreArgs& args);

}  // namespace kvflash
