// KV antiquant (docs/semantics.md §2.9), output post-quant (§2.10) and the softmax_lse extension.
#include <string>

#include "core/view_check.hpp"
#include "ops/ifa/ifa_error.hpp"
#include "ops/ifa/ifa_validate.hpp"
#include "ops/ifa/ifa_validate_parts.hpp"

namespace kvflash::ifa {
namespace {

using core::str;

// Antiquant scale/offset as (kv, n2, d). Per-tensor: shape (2). Per-channel: (2, KV_N, 1, D),
// (2, 1, KV_N, D), (2, KV_N, D) or (2, KV_N*D). Returns false for any other shape.
bool antiquant_view(const TensorView& t, const IfaShape& s, core::View3* v,
                    core::AntiquantMode* mode) {
  const int64_t kvn = s.num_kv_heads, d = s.head_dim;
  const auto& sh = t.shape;
  const auto& st = t.strides;
  if (t.rank < 1 || sh[0] != 2) return false;
  v->present = true;
  v->dtype = t.dtype;
  v->s0 = st[0];
  switch (t.rank) {
    case 1:
      *mode = core::AntiquantMode::kPerTensor;
      v->s1 = v->s2 = 0;
      return true;
    case 2:
      if (sh[1] != kvn * d) return false;
      // With kvn >= 2, d * st[1] <= (kvn*d - 1) * st[1], which the view check bounded; with
      // kvn == 1 the head index is always 0.
      v->s1 = kvn == 1 ? 0 : d * st[1];
      v->s2 = st[1];
      break;
    case 3:
      if (sh[1] != kvn || sh[2] != d) return false;
      v->s1 = st[1];
      v->s2 = st[2];
      break;
    case 4:
      if (sh[1] == kvn && sh[2] == 1 && sh[3] == d) {
        v->s1 = st[1];
      } else if (sh[1] == 1 && sh[2] == kvn && sh[3] == d) {
        v->s1 = st[2];
      } else {
        return false;
      }
      v->s2 = st[3];
      break;
    default:
      return false;
  }
  *mode = core::AntiquantMode::kPerChannel;
  return true;
}

Status validate_antiquant(const IfaArgs& a, const IfaShape& s, core::IfaProblem* p) {
  if (s.kv_dtype != DType::kInt8) {
    for (const auto* view : {&a.antiquant_scale, &a.antiquant_offset}) {
      if (view->has_value()) {
        return invalid(
            std::string(view == &a.antiquant_scale ? "antiquant_scale" : "antiquant_offset") +
            " is only allowed with int8 key/value, got " + dtype_name(s.kv_dtype) + " key/value");
      }
    }
    return Status::kSuccess;
  }
  if (!a.antiquant_scale.has_value()) {
    return invalid("antiquant_scale is required with int8 key/value");
  }
  const TensorView& sc = *a.antiquant_scale;
  if (sc.dtype != s.q_dtype) {
    return invalid(std::string("antiquant_scale dtype (") + dtype_name(sc.dtype) +
                   ") must equal the query dtype (" + dtype_name(s.q_dtype) + ")");
  }
  const std::string expected = "expected (2), (2," + str(s.num_kv_heads) + ",1," + str(s.head_dim) +
                               "), (2,1," + str(s.num_kv_heads) + "," + str(s.head_dim) + "), (2," +
                               str(s.num_kv_heads) + "," + str(s.head_dim) + ") or (2," +
                               str(s.num_kv_heads * s.head_dim) + ")";
  if (!antiquant_view(sc, s, &p->antiquant_scale, &p->antiquant)) {
    return invalid("antiquant_scale shape " + core::dims_str(sc) + " is not supported; " +
                   expected);
  }
  if (a.antiquant_offset.has_value()) {
    const TensorView& off = *a.antiquant_offset;
    if (off.dtype != sc.dtype) {
      return invalid(std::string("antiquant_offset dtype (") + dtype_name(off.dtype) +
                     ") must equal the antiquant_scale dtype (" + dtype_name(sc.dtype) + ")");
    }
    if (off.rank != sc.rank) {
      return invalid("antiquant_offset rank (" + std::to_string(off.rank) +
                     ") must equal the antiquant_scale rank (" + std::to_string(sc.rank) +
                     "), got " + off.describe());
    }
    core::AntiquantMode mode;
    if (!antiquant_view(off, s, &p->antiquant_offset, &mode)) {
      return invalid("antiquant_offset shape " + core::dims_str(off) + " is not supported; " +
                     expected);
    }
  }
  return Status::kSuccess;
}

Status quant2_view(const TensorView& t, const std::string& name, const IfaShape& s,
                   core::View3* v) {
  v->present = true;
  v->dtype = t.dtype;
  v->s0 = 0;
  if (t.numel() == 1) {
    v->s1 = v->s2 = 0;  // per-tensor
    return Status::kSuccess;
  }
  if (!quant2_channel_view(t, s.num_heads, s.head_dim, v)) {
    const std::string n = str(s.num_heads), d = str(s.head_dim), nd = str(s.num_heads * s.head_dim);
    return invalid(name + " shape " + core::dims_str(t) + " is not supported; expected 1 element " +
                   "(per-tensor) or a per-channel shape with num_heads * head_dim = " + nd +
                   " elements: [" + nd + "], [1," + nd + "], [1,1," + nd + "], [" + n + "," + d +
                   "], [1," + n + "," + d + "], [" + n + ",1," + d + "], [1," + n + ",1," + d +
                   "] or [1,1," + n + "," + d + "]");
  }
  return Status::kSuccess;
}

Status validate_post_quant(const IfaArgs& a, const IfaShape& s, core::IfaProblem* p) {
  if (s.out_dtype != DType::kInt8) {
    for (const auto* view : {&a.quant_scale2, &a.quant_offset2}) {
      if (view->has_value()) {
        return invalid(std::string(view == &a.quant_scale2 ? "quant_scale2" : "quant_offset2") +
                       " is only allowed with an int8 attention_out, got " +
                       dtype_name(s.out_dtype) + " attention_out");
      }
    }
    return Status::kSuccess;
  }
  if (!a.quant_scale2.has_value()) {
    return invalid("quant_scale2 is required when attention_out is int8");
  }
  const TensorView& sc = *a.quant_scale2;
  const bool dtype_ok = sc.dtype == DType::kFloat32 ||
                        (sc.dtype == DType::kBFloat16 && s.q_dtype == DType::kBFloat16);
  if (!dtype_ok) {
    return invalid(std::string("quant_scale2 dtype must be fp32 (or bf16 with a bf16 query), "
                               "got ") +
                   dtype_name(sc.dtype) + " with a " + dtype_name(s.q_dtype) + " query");
  }
  KVFLASH_RETURN_IF_ERROR(quant2_view(sc, "quant_scale2", s, &p->quant_scale2));
  if (a.quant_offset2.has_value()) {
    const TensorView& off = *a.quant_offset2;
    if (off.dtype != sc.dtype) {
      return invalid(std::string("quant_offset2 dtype (") + dtype_name(off.dtype) +
                     ") must equal the quant_scale2 dtype (" + dtype_name(sc.dtype) + ")");
    }
    if (!core::same_dims(off, sc)) {
      return invalid("quant_offset2 shape " + core::dims_str(off) +
                     " must equal the quant_scale2 shape " + core::dims_str(sc));
    }
    KVFLASH_RETURN_IF_ERROR(quant2_view(off, "quant_offset2", s, &p->quant_offset2));
  }
  return Status::kSuccess;
}

Status validate_lse(const TensorView& t, const IfaShape& s, core::IfaProblem* p) {
  if (t.dtype != DType::kFloat32) {
    return invalid(std::string("softmax_lse dtype must be fp32, got ") + dtype_name(t.dtype));
  }
  if (t.rank != 2 || t.shape[0] != s.batch || t.shape[1] != s.num_heads) {
    return invalid("softmax_lse shape must be (batch, num_heads) = (" + str(s.batch) + ", " +
                   str(s.num_heads) + "), got " + t.describe());
  }
  if (!t.is_contiguous()) {
    return invalid("softmax_lse must be contiguous with offset 0, got " + t.describe());
  }
  p->has_lse = true;
  p->lse_s0 = s.num_heads;
  p->lse_s1 = 1;
  return Status::kSuccess;
}

}  // namespace

// Per-channel quantScale2 shapes ([IFA-check] IsQuant2ShapeValid).
bool quant2_channel_view(const TensorView& t, int64_t n, int64_t d, core::View3* v) {
  const auto& sh = t.shape;
  const auto& st = t.strides;
  const int64_t nd = n * d;
  auto flat = [&](int axis) {           // one dim of N*D elements
    v->s1 = n == 1 ? 0 : d * st[axis];  // n >= 2: bounded by the view check, (n*d - 1) * st
    v->s2 = st[axis];
    return true;
  };
  auto split = [&](int n_axis, int d_axis) {
    v->s1 = st[n_axis];
    v->s2 = st[d_axis];
    return true;
  };
  switch (t.rank) {
    case 1:
      if (sh[0] == nd) return flat(0);
      break;
    case 2:
      if (sh[0] == 1 && sh[1] == nd) return flat(1);
      if (sh[0] == n && sh[1] == d) return split(0, 1);
      break;
    case 3:
      if (sh[0] == 1 && sh[1] == 1 && sh[2] == nd) return flat(2);
      if (sh[0] == 1 && sh[1] == n && sh[2] == d) return split(1, 2);
      if (sh[0] == n && sh[1] == 1 && sh[2] == d) return split(0, 2);
      break;
    case 4:
      if (sh[0] == 1 && sh[1] == n && sh[2] == 1 && sh[3] == d) return split(1, 3);
      if (sh[0] == 1 && sh[1] == 1 && sh[2] == n && sh[3] == d) return split(2, 3);
      break;
    default:
      break;
  }
  return false;
}

Status validate_quant_and_lse(const IfaArgs& a, const IfaShape& s, core::IfaProblem* p) {
  KVFLASH_RETURN_IF_ERROR(validate_antiquant(a, s, p));
  KVFLASH_RETURN_IF_ERROR(validate_post_quant(a, s, p));
  if (a.softmax_lse.has_value()) KVFLASH_RETURN_IF_ERROR(validate_lse(*a.softmax_lse, s, p));
  return Status::kSuccess;
}

}  // namespace kvflash::ifa
