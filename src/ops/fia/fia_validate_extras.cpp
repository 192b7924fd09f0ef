// FIA / PFA validation, the optional parts: masks and sparse modes (D3 / D4), pse_shift, int8 KV
// antiquant, int8 output post-quant and the learnable sink (D8). Called in this order by
// fia::validate (fia_validate.cpp) once query, key / value, lengths and outputs are known good.
#include <algorithm>
#include <cstdint>
#include <string>

#include "core/strings.hpp"
#include "core/view_check.hpp"
#include "ops/fia/fia_validate_parts.hpp"

namespace kvflash::fia {
namespace {

using core::str;

constexpr int64_t kCompressedMask = 2048;

bool is_mask_dtype(DType t) { return t == DType::kBool || t == DType::kInt8 || t == DType::kUInt8; }

// D3: the compressed mask of modes 2-4 in the shapes the FIA V4 document lists: (2048, 2048),
// (1, 2048, 2048), (1, 1, 2048, 2048).
bool is_compressed_mask(const TensorView& m) {
  if (m.rank < 2 || m.rank > 4) return false;
  for (int i = 0; i < m.rank; ++i)
    if (m.shape[i] != (i < m.rank - 2 ? 1 : kCompressedMask)) return false;
  return true;
}

bool is_float_param(DType t) {
  return t == DType::kFloat16 || t == DType::kBFloat16 || t == DType::kFloat32;
}

// The element offset of flat (row-major) index `flat` of t.
int64_t flat_elem(const TensorView& t, int64_t flat) {
  int64_t e = 0;
  for (int i = t.rank - 1; i >= 0; --i) {
    e += flat % t.shape[i] * t.strides[i];
    flat /= t.shape[i];
  }
  return e;
}

// Rows a full mask / pse must have: the query's S, or (TND) at least the longest query length.
bool rows_ok(const FiaShape& s, int64_t rows) { return s.tnd ? rows >= s.max_q : rows == s.S1; }

std::string rows_rule(const FiaShape& s) {
  return s.tnd ? ">= the longest query length (" + str(s.max_q) + ")" : "S1 (" + str(s.S1) + ")";
}

// Positions a per-token antiquant parameter covers: the key's S (list: the longest), the paged
// capacity, or T2.
int64_t token_positions(const FiaArgs& a, const FiaShape& s) {
  if (s.paged) return s.capacity;
  int64_t n = s.S2;
  if (s.list)
    for (const TensorView& t : a.key) n = std::max(n, s.in == "BNSD" ? t.shape[2] : t.shape[1]);
  return n;
}

// The offset argument that goes with scale argument `scale_name` (antiquant_scale ->
// antiquant_offset, key_antiquant_scale -> key_antiquant_offset): messages about the offset name
// it.
std::string offset_name(const char* scale_name) {
  std::string n(scale_name);
  const size_t at = n.rfind("scale");
  if (at != std::string::npos) n.replace(at, 5, "offset");
  return n;
}

// One set of dequantisation parameters: `which` 0 = key, 1 = value half of combined ones.
Status dequant_params(const FiaArgs& a, const FiaShape& s, const TensorView& sc,
                      const TensorView* of, int64_t mode, bool combined, int which, int64_t Dd,
                      const char* name, core::FiaDequant* q) {
  if (!is_float_param(sc.dtype))
    return invalid(std::string(name) + " dtype must be fp16, bf16 or fp32, got " +
                   dtype_name(sc.dtype));
  if (of != nullptr && (of->dtype != sc.dtype || !core::same_dims(*of, sc)))
    return invalid(offset_name(name) + " must have the shape and dtype of " + name + " (" +
                   sc.describe() + "), got " + of->describe());
  q->dtype = sc.dtype;
  q->has_offset = of != nullptr;
  const int64_t per = combined ? 2 : 1;
  if (combined && (sc.rank < 1 || sc.shape[0] != 2))
    return invalid(std::string(name) + "'s leading dim must be 2 (key, value), got " +
                   sc.describe());
  if (mode == 1) {
    if (s.P > 0)
      return invalid(std::string(name) + " per-token (mode 1) with key_shared_prefix is not " +
                     "defined upstream");
    const int r = sc.rank;
    const bool shape_ok = combined ? r == 3 && sc.shape[1] == s.B
                                   : (r == 3 && sc.shape[0] == 1 && sc.shape[1] == s.B) ||
                                         (r == 2 && sc.shape[0] == s.B);
    const int64_t need = token_positions(a, s);
    if (!shape_ok || sc.shape[r - 1] < need)
      return invalid(std::string(name) + " (per-token, mode 1) must be " +
                     (combined ? "(2, B, S)" : "(1, B, S) or (B, S)") + " with B = " + str(s.B) +
                     " and S >= " + str(need) + ", got " + sc.describe());
    q->mode = core::FiaDequant::Mode::kToken;
    q->tok_batch = sc.strides[r - 2], q->tok_pos = sc.strides[r - 1];
    q->scale_at = combined ? which * sc.strides[0] : 0;
    q->offset_at = of != nullptr ? (combined ? which * of->strides[0] : 0) : 0;
    return Status::kSuccess;
  }
  if (sc.numel() == per) {
    q->mode = core::FiaDequant::Mode::kTensor;
    q->scale_at = flat_elem(sc, combined ? which : 0);
    q->offset_at = of != nullptr ? flat_elem(*of, combined ? which : 0) : 0;
    return Status::kSuccess;
  }
  if (of != nullptr && !of->is_contiguous())
    return invalid(offset_name(name) + " (mode 0) must be contiguous, as " + name + ", got " +
                   of->describe());
  if (sc.numel() != per * s.KVN * Dd || !sc.is_contiguous())
    return invalid(std::string(name) + " (mode 0) must hold " + str(per) + " (per tensor) or " +
                   str(per * s.KVN * Dd) + " contiguous (per channel, KV_N x D) values, got " +
                   sc.describe());
  if (combined && s.D != s.Dv)
    return invalid("combined per-channel antiquant_scale needs key and value of one head dim");
  q->mode = core::FiaDequant::Mode::kChannel;
  q->chan_head = Dd;
  q->scale_at = combined ? which * s.KVN * Dd : 0;
  q->offset_at = of != nullptr ? q->scale_at : 0;
  return Status::kSuccess;
}

}  // namespace

Status check_mask(const FiaArgs& a, const FiaShape& s, core::FiaProblem* pr, int64_t* mask_batch) {
  core::FiaParams& p = pr->params;
  const int64_t mode = a.sparse_mode;
  // D4: the decode branch ignores pre / next and the sparse mode (so it needs no mask). pre / next
  // are clamped as the problem stores them (fill_problem): no int64 overflow in their sum.
  const int64_t lim = core::kFiaUnbounded;
  const int64_t pre = std::clamp(a.pre_tokens, -lim, lim),
                next = std::clamp(a.next_tokens, -lim, lim);
  if (!s.decode && mode == 4 && pre + next < 0 && a.pre_tokens < kFiaTokensMax)
    return invalid("sparse_mode 4 needs pre_tokens + next_tokens >= 0, got " + str(a.pre_tokens) +
                   " and " + str(a.next_tokens));
  if (!a.atten_mask) {
    if (mode >= 1 && !s.decode) {
      return invalid("sparse_mode " + str(mode) + " requires atten_mask (" +
                     (mode == 1 ? std::string("a full mask") : "the 2048x2048 compressed mask") +
                     ")");
    }
    return Status::kSuccess;
  }
  const TensorView& m = *a.atten_mask;
  if (!is_mask_dtype(m.dtype))
    return invalid(std::string("atten_mask dtype must be bool, int8 or uint8, got ") +
                   dtype_name(m.dtype));
  if (mode >= 2) {  // D3: the compressed mask's contents are never read, on either branch
    if (!is_compressed_mask(m))
      return invalid("sparse_mode " + str(mode) +
                     " requires the compressed atten_mask, shaped (2048, 2048), (1, 2048, 2048) "
                     "or (1, 1, 2048, 2048), got " +
                     m.describe() +
                     (s.decode ? " (with a query length of 1 the sparse mode is ignored: pass "
                                 "sparse_mode 0 to apply a full mask)"
                               : ""));
    return Status::kSuccess;
  }
  const int r = m.rank;
  if (r < 2 || r > 4)
    return invalid("atten_mask must have rank 2, 3 or 4 for sparse_mode " + str(mode) + ", got " +
                   m.describe());
  if (m.shape[r - 1] < s.columns)
    return invalid("atten_mask's last dim (" + str(m.shape[r - 1]) + ") must cover the " +
                   str(s.columns) + " key positions (shared prefix included)");
  bool ok = false;
  if (s.decode) {  // D4: IFA's shapes (B|1, S), (B|1, 1, S), (B|1, 1, 1, S)
    ok = r >= 2 && r <= 4 && (m.shape[0] == s.B || m.shape[0] == 1);
    for (int i = 1; ok && i < r - 1; ++i) ok = m.shape[i] == 1;
    p.mask_row = 0;
  } else {  // (S1, S2), (B|1, S1, S2), (B|1, 1, S1, S2)
    ok = r >= 2 && r <= 4 && rows_ok(s, m.shape[r - 2]) &&
         (r == 2 || m.shape[0] == s.B || m.shape[0] == 1) && (r != 4 || m.shape[1] == 1);
    p.mask_row = m.strides[r - 2];
  }
  if (!ok)
    return invalid("atten_mask must be " +
                   (s.decode
                        ? std::string("(B|1, S), (B|1, 1, S) or (B|1, 1, 1, S)")
                        : "(S1, S2), (B|1, S1, S2) or (B|1, 1, S1, S2) with S1 " + rows_rule(s)) +
                   " for sparse_mode " + str(mode) + " (B = " + str(s.B) + "), got " +
                   m.describe() + " (masks are never broadcast further)");
  const bool batched = s.decode ? true : r >= 3;
  *mask_batch = batched && m.shape[0] == s.B && s.B > 1 ? m.strides[0] : 0;
  p.has_mask = true;
  p.mask_col = m.strides[r - 1];
  return Status::kSuccess;
}

Status check_pse(const FiaArgs& a, const FiaShape& s, core::FiaProblem* pr, int64_t* pse_batch) {
  if (!a.pse_shift) return Status::kSuccess;
  core::FiaParams& p = pr->params;
  const TensorView& ps = *a.pse_shift;
  if (ps.dtype != DType::kFloat16 && ps.dtype != DType::kBFloat16)
    return invalid(std::string("pse_shift dtype must be fp16 or bf16, got ") +
                   dtype_name(ps.dtype));
  const bool ok = ps.rank == 4 && (ps.shape[0] == s.B || ps.shape[0] == 1) && ps.shape[1] == s.N &&
                  (ps.shape[2] == 1 || (!s.decode && rows_ok(s, ps.shape[2]))) &&
                  ps.shape[3] >= s.columns;
  if (!ok)
    return invalid("pse_shift must be (B|1, N, " + (s.decode ? std::string("1") : "1|S1") +
                   ", S2) with B = " + str(s.B) + ", N = " + str(s.N) + ", S1 " + rows_rule(s) +
                   ", S2 >= " + str(s.columns) + ", got " + ps.describe());
  p.has_pse = true, p.pse_dtype = ps.dtype;
  *pse_batch = ps.shape[0] == 1 ? 0 : ps.strides[0];
  p.pse_head = ps.strides[1], p.pse_row = ps.shape[2] == 1 ? 0 : ps.strides[2];
  p.pse_col = ps.strides[3];
  return Status::kSuccess;
}

Status check_antiquant(const FiaArgs& a, const FiaShape& s, core::FiaProblem* pr) {
  core::FiaParams& p = pr->params;
  const bool int8 = a.key[0].dtype == DType::kInt8;
  const bool combined = a.antiquant_scale.has_value();
  const bool split = a.key_antiquant_scale.has_value() || a.value_antiquant_scale.has_value();
  if (a.antiquant_offset && !combined) return invalid("antiquant_offset needs antiquant_scale");
  if (a.key_antiquant_offset && !a.key_antiquant_scale)
    return invalid("key_antiquant_offset needs key_antiquant_scale");
  if (a.value_antiquant_offset && !a.value_antiquant_scale)
    return invalid("value_antiquant_offset needs value_antiquant_scale");
  if (!int8) {
    if (combined || split)
      return invalid("antiquant parameters need an int8 key / value, got " +
                     std::string(dtype_name(a.key[0].dtype)));
    return Status::kSuccess;
  }
  if (!combined && !split)
    return invalid(
        "an int8 key / value needs antiquant_scale or key_antiquant_scale and "
        "value_antiquant_scale");
  p.kv_int8 = true;
  if (split) {  // split parameters win when both are given
    if (!a.key_antiquant_scale || !a.value_antiquant_scale)
      return invalid("key_antiquant_scale and value_antiquant_scale must be given together");
    const TensorView* ko = a.key_antiquant_offset ? &*a.key_antiquant_offset : nullptr;
    const TensorView* vo = a.value_antiquant_offset ? &*a.value_antiquant_offset : nullptr;
    KVFLASH_RETURN_IF_ERROR(dequant_params(a, s, *a.key_antiquant_scale, ko, a.key_antiquant_mode,
                                           false, 0, s.D, "key_antiquant_scale", &p.k_dq));
    return dequant_params(a, s, *a.value_antiquant_scale, vo, a.value_antiquant_mode, false, 1,
                          s.Dv, "value_antiquant_scale", &p.v_dq);
  }
  const TensorView* of = a.antiquant_offset ? &*a.antiquant_offset : nullptr;
  KVFLASH_RETURN_IF_ERROR(dequant_params(a, s, *a.antiquant_scale, of, a.antiquant_mode, true, 0,
                                         s.D, "antiquant_scale", &p.k_dq));
  return dequant_params(a, s, *a.antiquant_scale, of, a.antiquant_mode, true, 1, s.Dv,
                        "antiquant_scale", &p.v_dq);
}

Status check_post_quant(const FiaArgs& a, const FiaShape& s, core::FiaProblem* pr) {
  core::FiaParams& p = pr->params;
  if (a.quant_offset2 && !a.quant_scale2) return invalid("quant_offset2 needs quant_scale2");
  if (!a.quant_scale2) return Status::kSuccess;
  const TensorView& sc = *a.quant_scale2;
  if (!is_float_param(sc.dtype))
    return invalid(std::string("quant_scale2 dtype must be fp16, bf16 or fp32, got ") +
                   dtype_name(sc.dtype));
  if (a.quant_offset2 &&
      (a.quant_offset2->dtype != sc.dtype || !core::same_dims(*a.quant_offset2, sc) ||
       a.quant_offset2->is_contiguous() != sc.is_contiguous()))
    return invalid("quant_offset2 must have quant_scale2's shape, dtype and layout (" +
                   sc.describe() + "), got " + a.quant_offset2->describe());
  const bool channel = sc.numel() != 1;
  if (channel && (sc.numel() != s.N * s.Dv || !sc.is_contiguous()))
    return invalid("quant_scale2 must hold 1 (per tensor) or N x Dv = " + str(s.N * s.Dv) +
                   " contiguous values (per channel), got " + sc.describe());
  p.q2_channel = channel, p.q2_dtype = sc.dtype;
  p.has_q2_offset = a.quant_offset2.has_value();
  return Status::kSuccess;
}

Status check_sink(const FiaArgs& a, const FiaShape& s, core::FiaProblem* pr) {
  (void)pr;
  if (!a.learnable_sink) return Status::kSuccess;
  const TensorView& t = *a.learnable_sink;
  if (!is_float_param(t.dtype))
    return invalid(std::string("learnable_sink dtype must be fp16, bf16 or fp32, got ") +
                   dtype_name(t.dtype));
  if (t.rank != 1 || t.shape[0] != s.N || (s.N > 1 && t.strides[0] != 1))
    return invalid("learnable_sink must be contiguous (N,) with N = " + str(s.N) + ", got " +
                   t.describe());
  return Status::kSuccess;
}

}  // namespace kvflash::fia
