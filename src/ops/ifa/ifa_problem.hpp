// The normalised IFA problem (what a plan holds) and the data bound to it for one run.
//
// Validation (src/ops/ifa/ifa_validate.cpp) turns user arguments of any layout, list or paged mode
// into IfaProblem: one shape-free description in which logical indices (batch b, query head h, kv
// head n2, kv position j, channel d) map to element offsets through strides. It is built from
// shapes, dtypes, strides, attributes and host-side integers only: it holds no data pointers and no
// value read from a tensor, so one problem serves every run with the same shapes (FlashInfer's
// plan/run split). IfaData carries the pointers of one run, and the values a backend derives from
// device data in stream order (left padding, block-table checks). Kernels never look at layouts,
// never check anything the validator checked, and never allocate.
#pragma once

#include <cstdint>
#include <vector>

#include "core/hd.hpp"
#include "kvflash/tensor.hpp"

namespace kvflash::core {

/// Element (i, j, k) of a typed buffer lives at (its base) + (i*s0 + j*s1 + k*s2) elements. A
/// stride of 0 broadcasts that index. The base is bound at run time (IfaData).
struct View3 {
  bool present = false;
  DType dtype = DType::kFloat32;
  int64_t s0 = 0, s1 = 0, s2 = 0;
  KVFLASH_HD int64_t index(int64_t i, int64_t j, int64_t k) const {
    return i * s0 + j * s1 + k * s2;
  }
};

/// Where K or V element (b, n2, j, d) lives, relative to the bound base of batch b (non-paged)
/// or of the cache (paged).
struct KvCacheView {
  DType dtype = DType::kFloat16;  ///< fp16, bf16 or int8
  bool paged = false;
  bool list = false;  ///< non-paged tensor-list mode: one tensor per batch

  /// Non-paged: element at base(b) + j*s_pos + n2*s_head + d*s_dim, where base(b) is the list
  /// tensor b (list mode) or the single tensor advanced by b * s_batch elements; one entry per
  /// batch in IfaProblem (k_seqs, v_seqs).
  struct Seq {
    int64_t s_batch = 0, s_pos = 0, s_head = 0, s_dim = 1;
  };

  /// Paged: position j of batch b is in block blk = block_table[b*bt_s0 + (j / block_size)*bt_s1]
  /// at offset o = j % block_size; element at cache + blk*s_block + o*s_pos + n2*s_head + d*s_dim.
  int64_t s_block = 0, s_pos = 0, s_head = 0, s_dim = 1;
};

/// The block table of a paged cache (shared by K and V).
struct BlockTableView {
  int64_t s0 = 0, s1 = 0;      ///< element strides for (b, block slot)
  int64_t blocks_per_seq = 0;  ///< dim 1
  int64_t block_size = 0;
  int64_t num_blocks = 0;  ///< blocks in the cache: valid ids are [0, num_blocks)
};

enum class AntiquantMode { kNone, kPerTensor, kPerChannel };

/// The plan's scalars, views, strides and paging geometry: plain data, so the CPU kernels (by
/// reference) and the CUDA kernels (by value) read the same struct.
struct IfaParams {
  Device device{};                    ///< where every tensor of the call lives
  int64_t batch = 0;                  ///< B
  int64_t num_heads = 0;              ///< N
  int64_t num_kv_heads = 0;           ///< KV_N
  int64_t group = 0;                  ///< G = N / KV_N; query head h uses kv head h / G
  int64_t head_dim = 0;               ///< D
  DType q_dtype = DType::kFloat16;    ///< fp16 | bf16
  DType out_dtype = DType::kFloat16;  ///< q_dtype | int8 | fp32 (extension)
  float scale = 1.0f;                 ///< (float)scale_value

  View3 q;  ///< (b, h, d), q_dtype
  /// Output (b, h, d) at out + b*out_s0 + h*out_s1 + d*out_s2 elements of out_dtype.
  int64_t out_s0 = 0, out_s1 = 0, out_s2 = 1;

  KvCacheView k, v;
  BlockTableView block_table;  ///< meaningful when k.paged

  /// KV left padding (V4): active only with actual_seq_lengths and a batch-contiguous KV. Its
  /// value (element 0 of the device tensor kv_padding_size) is read at run time, in stream order:
  /// see ifa_kv_range.
  bool left_padding = false;
  int64_t kv_seq_len = 0;  ///< the key S, which left padding counts back from

  View3 mask;  ///< (b, h, j) bytes (bool/int8/uint8): nonzero = masked -> score replaced by -1e12f
  int64_t mask_cols = 0;  ///< the mask's last dim: a run never reads a column at or beyond it
  View3 pse;              ///< (b, h, j) q_dtype, added to the scaled score

  AntiquantMode antiquant = AntiquantMode::kNone;
  View3 antiquant_scale;   ///< (kv: 0 = key, 1 = value, n2, d), q_dtype; per-tensor: s1 = s2 = 0
  View3 antiquant_offset;  ///< same indexing; absent means 0

  View3 quant_scale2;   ///< (0, h, d), fp32 or bf16; per-tensor: s1 = s2 = 0. Present iff int8 out.
  View3 quant_offset2;  ///< same indexing; absent means 0

  bool has_lse = false;  ///< optional (b, h) LSE at lse + b*lse_s0 + h*lse_s1
  int64_t lse_s0 = 0, lse_s1 = 0;
  bool zero_fully_masked_rows = false;

  // What FIA's decode branch adds (src/ops/fia/fia_validate_decode.cpp); IFA's validator leaves
  // the defaults, which are IFA's behaviour.
  /// The LSE of a row with nothing to attend (kv_len 0, or fully masked with
  /// zero_fully_masked_rows): IFA's -inf, FIA's +inf (its D5).
  float empty_lse = -__builtin_inff();
  /// Learnable sink (N,) of sink_dtype (fp16, bf16, fp32): sum += exp(sink_h - max), the max
  /// taken without it; it adds no value.
  bool has_sink = false;
  DType sink_dtype = DType::kBFloat16;
  /// Key and value antiquant parameters in two tensors: antiquant_scale / antiquant_offset then
  /// hold the key's (n2, d) at (0, n2, d), these the value's.
  bool split_antiquant = false;
  View3 antiquant_scale_v, antiquant_offset_v;
  /// With split_antiquant, per-token parameters of the key / value (FIA's antiquant mode 1): the
  /// views then index (b, j, 0), j the position in the batch's K / V (what left padding moves).
  bool token_k = false, token_v = false;
};

/// IfaParams and the per-batch host arrays, which only host code reads (a CUDA run sends the
/// device what it needs of them as a table: cuda/ifa/ifa_cuda_layout.hpp's IfaCudaSeq).
struct IfaProblem : IfaParams {
  /// kv_len[b]: the positions batch b attends (host actual_seq_lengths, or the key S). 0 means
  /// the row block is empty: output zeros (int8 output: sat(round(offset2))), LSE -inf. Split-KV
  /// chunking and the workspace follow these lengths only.
  std::vector<int64_t> kv_len;
  std::vector<KvCacheView::Seq> k_seqs, v_seqs;  ///< non-paged: K and V of every batch
  /// Per batch, the first attended position when it is not 0 (FIA's sliding window: a batch
  /// attends [kv_start[b], kv_start[b] + kv_len[b])); empty: 0 for every batch.
  std::vector<int64_t> kv_start;
};

/// What a run does with batch b, decided at run time from device data (IfaData::batch_state).
enum IfaBatchState : uint8_t {
  kIfaBatchRun = 0,    ///< attend [kv_begin, kv_begin + kv_len)
  kIfaBatchEmpty = 1,  ///< left padding start < 0: zeros (int8: quant(0)), LSE -inf
  /// Bad device data (a referenced block id outside [0, num_blocks), or left padding that moves
  /// the range past the mask): nothing is read; output NaN (int8: 0), LSE NaN; the run fails.
  kIfaBatchFaultBlockId = 2,
  kIfaBatchFaultMaskRange = 3,
};

/// The state of a batch of len positions attending range r, from what every backend's prologue
/// reads before any block id (left padding): empty, a range moved past the mask's last dim (bad
/// device data), else run. Each backend then checks the block ids of a running batch
/// (ifa_bad_block_id).
KVFLASH_HD inline IfaBatchState ifa_range_state(const IfaParams& p, bool empty, int64_t begin,
                                                int64_t len) {
  if (empty) return kIfaBatchEmpty;
  // Left padding moves the range right by a run-time amount: never read a mask column beyond the
  // mask (validation could only bound the unpadded ranges).
  if (len > 0 && p.mask.present && begin + len > p.mask_cols) return kIfaBatchFaultMaskRange;
  return kIfaBatchRun;
}

/// Whether a block-table entry is not a block of the cache.
KVFLASH_HD inline bool ifa_bad_block_id(const IfaParams& p, int64_t id) {
  return id < 0 || id >= p.block_table.num_blocks;
}

/// The pointers of one run. Each points at element 0 of its view (the tensor's data plus its
/// offset); absent views are null. The generic plan run binds them once (ifa::bind_data) for every
/// backend; a backend fills the derived fields in its own copy, from device data in stream order,
/// before its kernels read them.
struct IfaData {
  const void* q = nullptr;
  void* out = nullptr;
  float* lse = nullptr;
  const void* k_cache = nullptr;  ///< element 0 of key[0] (paged: the cache)
  const void* v_cache = nullptr;  ///< element 0 of value[0]
  /// Non-paged list mode: the B tensors of key / value, whose element 0 is each batch's base.
  const TensorView* k_list = nullptr;
  const TensorView* v_list = nullptr;
  const int32_t* block_table = nullptr;
  const void* mask = nullptr;
  const void* pse = nullptr;
  const void* antiquant_scale = nullptr;
  const void* antiquant_offset = nullptr;
  const void* quant_scale2 = nullptr;
  const void* quant_offset2 = nullptr;
  const void* sink = nullptr;                ///< has_sink
  const void* antiquant_scale_v = nullptr;   ///< split_antiquant: the value's
  const void* antiquant_offset_v = nullptr;  ///< split_antiquant: the value's (optional)
  const int64_t* kv_padding_size = nullptr;  ///< element 0 read at run time (left padding)
  const void* const* k_seq = nullptr;        ///< derived, non-paged: base(b) of K for every batch
  const void* const* v_seq = nullptr;
  const int64_t* kv_begin = nullptr;     ///< derived: first attended position of each batch
  const uint8_t* batch_state = nullptr;  ///< derived: IfaBatchState of each batch
};

/// The attended range of batch b for a left-padding value read at run time (ignored unless
/// p.left_padding): [begin, begin + kv_len[b]) with begin = S - max(pad, 0) - kv_len[b]; a negative
/// begin makes the batch empty (docs/semantics.md §2.7). Backend-neutral arithmetic: every
/// backend's prologue calls it.
struct IfaKvRange {
  int64_t begin = 0;
  bool empty = false;
};
/// The same for a sequence of kv_len positions, from the problem's scalars: what a device
/// prologue calls, since it has no IfaProblem.
KVFLASH_HD inline IfaKvRange ifa_kv_range_of(bool left_padding, int64_t kv_seq_len, int64_t kv_len,
                                             int64_t pad_value) {
  IfaKvRange r;
  if (!left_padding) return r;
  const int64_t pad = pad_value > 0 ? pad_value : 0;
  const int64_t room = kv_seq_len - kv_len;  // >= 0: validated
  if (pad > room) {
    r.empty = true;
  } else {
    r.begin = room - pad;
  }
  return r;
}
inline IfaKvRange ifa_kv_range(const IfaProblem& p, int64_t b, int64_t pad_value) {
  return ifa_kv_range_of(p.left_padding, p.kv_seq_len, p.kv_len[b], pad_value);
}

/// The masked-score replacement value (docs/semantics.md §2.5 step 5): a replacement, not an
/// addition.
inline constexpr float kMaskedScore = -1.0e12f;

}  // namespace kvflash::core
