// The argument rules the lightning indexer and SparseFlashAttention share (DeepSeek sparse
// attention's two operators take the same layouts, lengths, paged cache and attributes), written
// once; each validator (src/ops/li/li_validate.cpp, src/ops/sfa/sfa_validate.cpp) calls them in its
// own documented order. Messages name the operator `op` and the argument.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>

#include "kvflash/status.hpp"
#include "kvflash/tensor.hpp"

namespace kvflash::sparse {

/// kInvalid "<name> shape must be [dims], got <v>" unless v has exactly those dims.
Status expect_shape(const char* op, const TensorView& v, const char* name,
                    std::initializer_list<int64_t> dims);
/// kInvalid "<name> dtype must be <want>, got <dtype>" unless v has dtype want.
Status expect_dtype(const char* op, const TensorView& v, const char* name, DType want);
/// A 1-D int32 or int64 length tensor (core::is_length_dtype) with exactly `batch` entries (its
/// values are device data, read by the run).
Status expect_lengths(const char* op, const TensorView& v, const char* name, int64_t batch);

/// layout_query: BSND or TND; the key's (`key_arg`: layout_key, layout_kv): BSND, TND or
/// PA_BSND, the query's unless paged.
struct Layouts {
  bool q_tnd = false, k_tnd = false, paged = false;
};
Status layouts(const char* op, const std::string& layout_query, const std::string& layout_key,
               const char* key_arg, Layouts* out);

/// The query's batch and rows: TND (T, N, D), its T (`t_name`) > 0 and B the entries of the 1-D
/// actual_seq_lengths_query; BSND (B, S1, N, D), B and S1 > 0 (rows B * S1, bounded by the
/// query's view check).
struct QueryRows {
  int64_t batch = 0, s1 = 0, rows = 0;
};
Status query_rows(const char* op, const TensorView& query,
                  const std::optional<TensorView>& actual_seq_lengths_query, bool q_tnd,
                  const char* t_name, QueryRows* out);

/// A paged key (PA_BSND, (block_num, block_size, N2, D)): block_table and the key lengths
/// (`lengths_arg`) given, block_table (B, M > 0), block_num > 0, block_size a multiple of 16 in
/// [16, 1024]. `key_arg` names the key's layout argument.
Status paged_key(const char* op, const TensorView& key, const std::optional<TensorView>& block_table,
                 bool lengths_given, const char* key_arg, const char* lengths_arg, int64_t batch);

/// The attributes both take: sparse_mode 0 or 3, pre_tokens and next_tokens at their only value,
/// INT64_MAX.
Status attributes(const char* op, int64_t sparse_mode, int64_t pre_tokens, int64_t next_tokens);

}  // namespace kvflash::sparse
