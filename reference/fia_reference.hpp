// The PromptFlashAttention / FusedInferAttentionScore oracle (docs/semantics.md §0.2 item 1; contract
// docs/fia-pfa-indexer.md, decisions D1-D8; kvflash's own choices in docs/fia-semantics.md).
// A plain double-precision implementation that reads the user-level arguments directly (layouts,
// tensor lists, paged caches, strides and offsets, host length lists) and shares no code with any
// kernel. Slow and obvious on purpose: every element is read through its view, every score is a
// double, the softmax is an exact two-pass one over the visible positions of the row.
//
// FiaCall mirrors the arguments of aclnnFusedInferAttentionScoreV4 (docs/fia-pfa-indexer.md §2.1) one to one, in
// the names of torch's npu_fused_infer_attention_score; PFA (aclnnPromptFlashAttentionV3) is the
// subset with `prompt = true` (no decode branch, D4 is FIA's rule). The library's argument struct
// is not written yet (the operator recipe of issue 18 will give it); until then the tests build
// FiaCall. It assumes valid arguments (shapes, dtypes, in-range block ids) and checks nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kvflash/tensor.hpp"

namespace kvflash::reference {

inline constexpr int64_t kFiaTokensMax = 2147483647;  // the schemas' pre/next_tokens default

struct FiaCall {
  TensorView query;  ///< BSH (B,S1,N*D) | BSND (B,S1,N,D) | BNSD (B,N,S1,D) | TND (T,N,D) | NTD (N,T,D)
  /// 1 tensor (in the query layout, or a paged cache: rank 3 BnBsH, rank 4 BnNBsD) or B tensors of
  /// batch 1 (tensor list, non-TND layouts).
  std::vector<TensorView> key, value;
  std::optional<TensorView> pse_shift;   ///< (B|1, N, S1|1, S2p), added after scaling
  std::optional<TensorView> atten_mask;  ///< nonzero = masked; shapes in docs/fia-semantics.md
  std::optional<std::vector<int64_t>> actual_seq_lengths, actual_seq_lengths_kv;  ///< D6
  std::optional<TensorView> quant_scale2, quant_offset2;  ///< int8 output post-quant (docs/fia-pfa-indexer.md §2.10)
  /// Combined antiquant parameters: leading dim 2 = (key, value); antiquant_mode 0 per-channel or
  /// per-tensor, 1 per-token (2, B, S2).
  std::optional<TensorView> antiquant_scale, antiquant_offset;
  /// Split antiquant parameters (they win over the combined ones, "以KV分离量化参数为准").
  std::optional<TensorView> key_antiquant_scale, key_antiquant_offset;
  std::optional<TensorView> value_antiquant_scale, value_antiquant_offset;
  std::optional<TensorView> block_table;  ///< int32 (B, max_blocks): paged KV
  std::optional<TensorView> query_padding_size, kv_padding_size;  ///< int64 (1,): left padding
  std::optional<TensorView> key_shared_prefix, value_shared_prefix;  ///< batch 1, key's layout
  std::optional<std::vector<int64_t>> actual_shared_prefix_len;     ///< length 1
  std::optional<TensorView> query_rope, key_rope;  ///< MLA: rope dims, same layouts as query/key
  std::optional<TensorView> learnable_sink;        ///< (N,)

  int64_t num_heads = 1;
  double scale_value = 1.0;
  int64_t pre_tokens = kFiaTokensMax, next_tokens = kFiaTokensMax;
  std::string input_layout = "BSH";  ///< a query layout, or "<in>_<out>" (D1)
  int64_t num_key_value_heads = 0;   ///< 0 = num_heads
  int64_t sparse_mode = 0;
  int64_t inner_precise = 0;  ///< validated only (D2)
  int64_t block_size = 0;
  int64_t antiquant_mode = 0, key_antiquant_mode = 0, value_antiquant_mode = 0;
  bool softmax_lse_flag = false;
  bool prompt = false;  ///< PromptFlashAttention: never the decode branch

  TensorView attention_out;
  std::optional<TensorView> softmax_lse;  ///< fp32, [T,N,1] (TND/NTD inputs) or [B,N,S1,1]
};

/// How a (query row, head) result was produced.
enum class FiaRowKind : uint8_t {
  kNormal,   ///< at least one visible position
  kEmpty,    ///< nothing visible (D5): output 0, LSE +inf
  kPadding,  ///< a query row outside the batch's actual length (D5): output 0, LSE +inf
};

/// The result. Rows are the query layout's token rows: r = b * S1 + s for B/S layouts (s the
/// physical position in the S dim), r = t for TND/NTD. Element (r, h, d) is at index(r, h, d).
struct FiaReference {
  int64_t rows = 0, batch = 0, num_heads = 0, value_dim = 0;
  DType out_dtype = DType::kFloat16;
  bool decode_branch = false;  ///< D4: Q_S = 1 ran IFA's semantics

  std::vector<double> attention;  ///< normalised output o (0 for empty/padding rows)
  std::vector<double> expected;   ///< o, or o * scale2 + offset2 for int8 output (unrounded)
  std::vector<double> rounded;    ///< expected rounded to out_dtype (RNE; int8 half-even, sat)
  std::vector<double> lse;        ///< natural-log LSE per (r, h); +inf for empty/padding rows
  /// Per (r, h): the largest visible score m and sum l of exp(s - m) (the sink's term included),
  /// lse = m + log(l); 0 and 0 for empty/padding rows (FiaArgs::softmax_max / softmax_sum).
  std::vector<double> softmax_max, softmax_sum;
  std::vector<double> v_absmax;   ///< max |V| over the finite values of the visible positions
  std::vector<FiaRowKind> row_kind;
  std::vector<int64_t> row_batch;  ///< per r: its batch (or -1 for TND rows past the last length)
  std::vector<int64_t> row_index;  ///< per r: the row's index i within its batch's valid rows

  int64_t index(int64_t r, int64_t h, int64_t d) const { return (r * num_heads + h) * value_dim + d; }
  int64_t row(int64_t r, int64_t h) const { return r * num_heads + h; }
};

/// The reference result of one call.
FiaReference fia_reference(const FiaCall& call);

/// The layouts of call.input_layout: {query layout, output layout} ("BSH", "BSND", "BNSD",
/// "TND", "NTD", "NBSD"), e.g. "BNSD_BSND" -> {"BNSD", "BSND"}, "TND" -> {"TND", "TND"}.
struct FiaLayouts {
  std::string in, out;
};
FiaLayouts fia_layouts(const std::string& input_layout);

/// Element offset in attention_out of (r, h, d) (rows as in FiaReference), and in softmax_lse of
/// (r, h). S1 and B come from the query.
int64_t fia_out_element(const FiaCall& call, int64_t r, int64_t h, int64_t d);
int64_t fia_lse_element(const FiaCall& call, int64_t r, int64_t h);

}  // namespace kvflash::reference
