// IncreFlashAttention (decode attention, query length 1) — the C++ API.
//
// Semantics are those of aclnnIncreFlashAttentionV4 (docs/conventions.md, spec §2) plus two
// extensions: an optional softmax LSE output and an option that zeroes fully masked rows.
//
//   kvflash::IfaArgs args;            // fill the views and attributes
//   std::unique_ptr<kvflash::IfaPlan> plan;
//   if (kvflash::IfaPlan::create(args, &plan) != kvflash::Status::kSuccess) { ...
//   last_error_message() } std::vector<std::byte> ws(plan->workspace_size()); plan->run(ws.data(),
//   ws.size());  // may be called many times; reads tensors at run time
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kvflash/status.hpp"
#include "kvflash/tensor.hpp"

namespace kvflash {

/// All inputs of one IFA call. Views are borrowed: they must stay valid until the last run.
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
  TensorView attention_out;          ///< same shape as query; query dtype or int8; contiguous

  // ---- kvflash extensions ----
  /// fp32 (B, N) contiguous: natural-log softmax LSE of each (batch, head) over the scaled (and
  /// pse-shifted, mask-replaced) scores. Empty rows (length 0, left-padding start < 0) get -inf.
  std::optional<TensorView> softmax_lse;
  /// Fully masked rows output zeros (and LSE -inf) instead of the mean of V (FIA row-invalid fix).
  bool zero_fully_masked_rows = false;
  /// Worker threads for this call; 0 = the library default (set_num_threads / hardware).
  int num_threads = 0;
};

/// A validated, planned IFA call. Creation checks every argument (the only place that rejects
/// input) and sizes the workspace; run() reads the tensors and computes. run() never allocates.
class KVFLASH_API IfaPlan {
 public:
  struct Impl;
  /// Validates args and builds a plan. On failure *plan is reset and the status says why.
  static Status create(const IfaArgs& args, std::unique_ptr<IfaPlan>* plan);
  ~IfaPlan();
  /// Bytes of scratch memory run() needs (may be 0). Any alignment is accepted.
  size_t workspace_size() const;
  /// The checks that need the device data, without computing: kInvalid if workspace_size is too
  /// small or a block-table id that the lengths reference is outside [0, num_blocks). The aclnn
  /// phase 2 calls this synchronously before it enqueues run().
  Status check_run(size_t workspace_size) const;
  /// check_run(), then computes into attention_out (and softmax_lse). Nothing is written when a
  /// check fails.
  Status run(void* workspace, size_t workspace_size) const;
  const Impl& impl() const { return *impl_; }

 private:
  explicit IfaPlan(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// One-shot convenience: validate, allocate a workspace, run.
KVFLASH_API Status incre_flash_attention(const IfaArgs& args);

}  // namespace kvflash
