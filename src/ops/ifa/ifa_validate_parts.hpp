// The stages of validate_ifa (ifa_validate.cpp), split by topic so each file stays small. They run
// in order over one IfaShape (what the earlier stages derived) and fill the IfaProblem.
#pragma once

#include <cstdint>
#include <vector>

#include "ops/ifa/ifa_problem.hpp"
#include "kvflash/ifa.hpp"
#include "kvflash/status.hpp"

namespace kvflash::ifa {

enum class Layout { kBsh, kBsnd, kBnsd };
enum class KvMode { kContiguous, kList, kPaged };

/// What the stages derive from the arguments and hand on to the next ones.
struct IfaShape {
  Layout layout = Layout::kBsh;
  KvMode kv_mode = KvMode::kContiguous;
  int64_t batch = 0, num_heads = 0, num_kv_heads = 0, head_dim = 0;
  DType q_dtype = DType::kFloat16, kv_dtype = DType::kFloat16, out_dtype = DType::kFloat16;
  std::vector<int64_t> seq_s;  ///< per-batch key S (not paged)
  int64_t pse_cols = 0;        ///< S_max: key S, max S_b (list) or paged capacity
  int64_t mask_cols = 0;       ///< the last mask column any batch may read, plus 1 (or capacity)
};

/// Paged block size, cache/table shapes, KV strides per mode; fills p->k, p->v, p->block_table
/// (except lengths) and s->seq_s / s->kv_mode.
Status validate_kv(const IfaArgs& a, IfaShape* s, core::IfaProblem* p);
/// actualSeqLengths, paged capacity, whether KV left padding applies: fills kv_len /
/// left_padding / kv_seq_len and s->pse_cols / s->mask_cols.
Status validate_lengths(const IfaArgs& a, IfaShape* s, core::IfaProblem* p);
/// attenMask and pseShift.
Status validate_mask_pse(const IfaArgs& a, const IfaShape& s, core::IfaProblem* p);
/// antiquant (int8 KV), post-quant (int8 out), the unsupported int8-query scales, softmax_lse.
Status validate_quant_and_lse(const IfaArgs& a, const IfaShape& s, core::IfaProblem* p);

}  // namespace kvflash::ifa
