// The normalised IFA problem: what validation produces and every IFA kernel consumes.
//
// Validation (src/ifa/ifa_validate.cpp) turns user arguments of any layout, list or paged mode into
// this one shape-free description: logical indices (batch b, query head h, kv head n2, kv position
// j, channel d) mapped to addresses through element strides. Kernels never look at layouts, never
// check anything the validator checked, and never allocate.
#pragma once

#include <cstdint>
#include <vector>

#include "kvflash/tensor.hpp"

namespace kvflash::core {

/// Element (i, j, k) of a typed buffer lives at data + (i*s0 + j*s1 + k*s2) elements. A stride of
/// 0 broadcasts that index. data == nullptr means "absent".
struct View3 {
  const void* data = nullptr;
  DType dtype = DType::kFloat32;
  int64_t s0 = 0, s1 = 0, s2 = 0;
  bool present() const { return data != nullptr; }
  int64_t index(int64_t i, int64_t j, int64_t k) const { return i * s0 + j * s1 + k * s2; }
};

/// Where K or V element (b, n2, j, d) lives.
struct KvCacheView {
  DType dtype = DType::kFloat16;  ///< fp16, bf16 or int8
  bool paged = false;

  /// Non-paged: one entry per batch (list mode: each list tensor; batch-contiguous: the same
  /// tensor advanced by b * batch stride). Element at base + j*s_pos + n2*s_head + d*s_dim.
  struct Seq {
    const void* base = nullptr;
    int64_t s_pos = 0, s_head = 0, s_dim = 1;
  };
  std::vector<Seq> seqs;

  /// Paged: position j of batch b is in block blk = block_table[b*bt_s0 + (j / block_size)*bt_s1]
  /// at offset o = j % block_size; element at cache + blk*s_block + o*s_pos + n2*s_head + d*s_dim.
  const void* cache = nullptr;
  int64_t s_block = 0, s_pos = 0, s_head = 0, s_dim = 1;
};

/// The block table of a paged cache (shared by K and V).
struct BlockTableView {
  const int32_t* data = nullptr;  ///< nullptr when not paged
  int64_t s0 = 0, s1 = 0;         ///< element strides for (b, block slot)
  int64_t blocks_per_seq = 0;     ///< dim 1
  int64_t block_size = 0;
  int64_t num_blocks = 0;  ///< blocks in the cache: valid ids are [0, num_blocks)
};

enum class AntiquantMode { kNone, kPerTensor, kPerChannel };

struct IfaProblem {
  int64_t batch = 0;                  ///< B
  int64_t num_heads = 0;              ///< N
  int64_t num_kv_heads = 0;           ///< KV_N
  int64_t group = 0;                  ///< G = N / KV_N; query head h uses kv head h / G
  int64_t head_dim = 0;               ///< D
  DType q_dtype = DType::kFloat16;    ///< fp16 | bf16
  DType out_dtype = DType::kFloat16;  ///< q_dtype | int8
  float scale = 1.0f;                 ///< (float)scale_value

  View3 q;              ///< (b, h, d), q_dtype
  void* out = nullptr;  ///< (b, h, d) at out + b*out_s0 + h*out_s1 + d*out_s2 elements of out_dtype
  int64_t out_s0 = 0, out_s1 = 0, out_s2 = 1;

  KvCacheView k, v;
  BlockTableView block_table;

  /// The positions attended by batch b are [kv_begin[b], kv_begin[b] + kv_len[b]) (absolute
  /// positions: in the key tensor, or logical positions of a paged sequence). kv_len[b] == 0 means
  /// the row block is empty: output zeros (int8 output: sat(round(offset2))), LSE -inf. Left
  /// padding with start < 0 is normalised to kv_len == 0 by the validator.
  std::vector<int64_t> kv_begin, kv_len;
  int64_t max_kv_len = 0;  ///< max_b kv_len[b]

  View3 mask;  ///< (b, h, j) bytes (bool/int8/uint8): nonzero = masked -> score replaced by -1e12f
  View3 pse;   ///< (b, h, j) q_dtype, added to the scaled score

  AntiquantMode antiquant = AntiquantMode::kNone;
  View3 antiquant_scale;   ///< (kv: 0 = key, 1 = value, n2, d), q_dtype; per-tensor: s1 = s2 = 0
  View3 antiquant_offset;  ///< same indexing; absent means 0

  View3 quant_scale2;   ///< (0, h, d), fp32 or bf16; per-tensor: s1 = s2 = 0. Present iff int8 out.
  View3 quant_offset2;  ///< same indexing; absent means 0

  float* lse = nullptr;  ///< optional (b, h) at lse + b*lse_s0 + h*lse_s1
  int64_t lse_s0 = 0, lse_s1 = 0;
  bool zero_fully_masked_rows = false;

  int num_threads = 0;  ///< 0 = library default
};

/// The masked-score replacement value (spec §2.5 step 5): a replacement, not an addition.
inline constexpr float kMaskedScore = -1.0e12f;

}  // namespace kvflash::core
