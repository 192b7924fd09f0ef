// attenMask and pseShift (docs/semantics.md §2.2, §2.3, §2.6): shapes, dtypes, bounds, and their
// (b, h, j) views with stride 0 on broadcast dims.
#include <string>

#include "core/view_check.hpp"
#include "ops/ifa/ifa_error.hpp"
#include "ops/ifa/ifa_validate_parts.hpp"

namespace kvflash::ifa {
namespace {

using core::str;

Status validate_mask(const TensorView& m, const IfaShape& s, core::IfaProblem* p) {
  if (m.numel() == 0)
    return Status::kSuccess;  // numel 0 means absent ([IFA-UT] case_maskshape_size)
  if (m.dtype != DType::kBool && m.dtype != DType::kInt8 && m.dtype != DType::kUInt8) {
    return invalid(std::string("atten_mask dtype must be bool, int8 or uint8, got ") +
                   dtype_name(m.dtype));
  }
  if (m.rank < 2 || m.rank > 4) {
    return invalid("atten_mask must be 2-D (B, S), 3-D (B, 1, S) or 4-D (B|1, N|1, 1, S), got " +
                   m.describe());
  }
  if (m.shape[0] != s.batch && m.shape[0] != 1) {
    return invalid("atten_mask dim 0 (" + str(m.shape[0]) + ") must be the batch (" + str(s.batch) +
                   ") or 1, got " + m.describe());
  }
  int64_t head_stride = 0;
  if (m.rank == 3 && m.shape[1] != 1) {
    return invalid("atten_mask dim 1 (" + str(m.shape[1]) +
                   ") of a 3-D mask (B, 1, S) must be 1 (the query sequence length), got " +
                   m.describe());
  }
  if (m.rank == 4) {
    if (m.shape[1] != 1 && m.shape[1] != s.num_heads) {
      return invalid("atten_mask dim 1 (" + str(m.shape[1]) + ") must be 1 or num_heads (" +
                     str(s.num_heads) + "), got " + m.describe());
    }
    if (m.shape[2] != 1) {
      return invalid("atten_mask dim 2 (" + str(m.shape[2]) +
                     ") must be 1 (the query sequence length), got " + m.describe());
    }
    head_stride = m.shape[1] == 1 ? 0 : m.strides[1];
  }
  const int64_t cols = m.shape[m.rank - 1];
  if (cols < s.mask_cols) {
    return invalid("atten_mask last dim (" + str(cols) + ") must be >= " + str(s.mask_cols) +
                   (s.kv_mode == KvMode::kPaged ? " (block_table dim 1 * block_size)"
                                                : " (the end of the longest attended KV range)") +
                   ", got " + m.describe());
  }
  p->mask.present = true;
  p->mask_cols = cols;
  p->mask.dtype = m.dtype;
  p->mask.s0 = m.shape[0] == 1 ? 0 : m.strides[0];
  p->mask.s1 = head_stride;
  p->mask.s2 = m.strides[m.rank - 1];
  return Status::kSuccess;
}

Status validate_pse(const TensorView& t, const IfaShape& s, core::IfaProblem* p) {
  if (t.dtype != s.q_dtype) {
    return invalid(std::string("pse_shift dtype (") + dtype_name(t.dtype) +
                   ") must equal the query dtype (" + dtype_name(s.q_dtype) + ")");
  }
  if (t.rank != 4) {
    return invalid("pse_shift must be 4-D (B|1, N, 1, S), got " + t.describe());
  }
  if (t.shape[0] != s.batch && t.shape[0] != 1) {
    return invalid("pse_shift dim 0 (" + str(t.shape[0]) + ") must be the batch (" + str(s.batch) +
                   ") or 1, got " + t.describe());
  }
  if (t.shape[1] != s.num_heads) {
    return invalid("pse_shift dim 1 (" + str(t.shape[1]) + ") must equal num_heads (" +
                   str(s.num_heads) + "), got " + t.describe());
  }
  if (t.shape[2] != 1) {
    return invalid("pse_shift dim 2 (" + str(t.shape[2]) +
                   ") must be 1 (the query sequence length), got " + t.describe());
  }
  if (t.shape[3] < s.pse_cols) {
    return invalid("pse_shift dim 3 (" + str(t.shape[3]) + ") must be >= " + str(s.pse_cols) +
                   (s.kv_mode == KvMode::kPaged ? " (block_table dim 1 * block_size)"
                                                : " (the key sequence length)") +
                   ", got " + t.describe());
  }
  p->pse.present = true;
  p->pse.dtype = t.dtype;
  p->pse.s0 = t.shape[0] == 1 ? 0 : t.strides[0];
  p->pse.s1 = t.strides[1];
  p->pse.s2 = t.strides[3];
  return Status::kSuccess;
}

}  // namespace

Status validate_mask_pse(const IfaArgs& a, const IfaShape& s, core::IfaProblem* p) {
  if (a.atten_mask.has_value()) KVFLASH_RETURN_IF_ERROR(validate_mask(*a.atten_mask, s, p));
  if (a.pse_shift.has_value()) KVFLASH_RETURN_IF_ERROR(validate_pse(*a.pse_shift, s, p));
  return Status::kSuccess;
}

}  // namespace kvflash::ifa
