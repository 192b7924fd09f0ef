// validate_ifa: the order of the checks follows docs/semantics.md §2.11 (null pointers, emptiness,
// dtypes, head limits, layout and shapes, then the per-feature rules), so the first message a user
// sees is the most basic thing wrong with the call.
#include "ops/ifa/ifa_validate.hpp"

#include <string>
#include <utility>

#include "core/error.hpp"
#include "core/view_check.hpp"
#include "ops/ifa/ifa_error.hpp"
#include "ops/ifa/ifa_fields.hpp"
#include "ops/ifa/ifa_limits.hpp"
#include "ops/ifa/ifa_validate_parts.hpp"

namespace kvflash::ifa {
namespace {

using core::kIfaMaxBatch;
using core::kIfaMaxGroup;
using core::kIfaMaxHeadDim;
using core::kIfaMaxHeads;
using core::kIfaMaxKvHeads;

using core::str;

struct DtypeCombo {
  DType q, kv, out;
};
// docs/semantics.md §2.2: the (query, key/value, attention_out) rows of the op definition that IFA
// supports.
constexpr DtypeCombo kAllowedCombos[] = {
    {DType::kFloat16, DType::kFloat16, DType::kFloat16},
    {DType::kBFloat16, DType::kBFloat16, DType::kBFloat16},
    {DType::kFloat16, DType::kFloat16, DType::kInt8},
    {DType::kFloat16, DType::kInt8, DType::kFloat16},
    {DType::kFloat16, DType::kInt8, DType::kInt8},
    {DType::kBFloat16, DType::kInt8, DType::kBFloat16},
    {DType::kBFloat16, DType::kInt8, DType::kInt8},
    {DType::kBFloat16, DType::kBFloat16, DType::kInt8},
    // kvflash extension (C++ API and the PyTorch extension op, not aclnn): the fp32 result
    // before rounding, for partial results merged by log-sum-exp (context parallelism).
    {DType::kFloat16, DType::kFloat16, DType::kFloat32},
    {DType::kBFloat16, DType::kBFloat16, DType::kFloat32},
    {DType::kFloat16, DType::kInt8, DType::kFloat32},
    {DType::kBFloat16, DType::kInt8, DType::kFloat32},
};

// Rule 1: missing required pointers are 161001 and come before everything else.
Status check_required(const IfaArgs& a) {
  if (core::is_null_view(a.query)) return null_ptr("query is null");
  if (a.key.empty()) return null_ptr("key list is empty; expected 1 or batch tensors");
  if (a.value.empty()) return null_ptr("value list is empty; expected 1 or batch tensors");
  for (size_t i = 0; i < a.key.size(); ++i) {
    if (core::is_null_view(a.key[i])) return null_ptr("key[" + std::to_string(i) + "] is null");
  }
  for (size_t i = 0; i < a.value.size(); ++i) {
    if (core::is_null_view(a.value[i])) return null_ptr("value[" + std::to_string(i) + "] is null");
  }
  if (core::is_null_view(a.attention_out)) return null_ptr("attention_out is null");
  return Status::kSuccess;
}

// The int8-query BMM path these scales belong to is not supported by IFA (docs/semantics.md §2.10).
Status check_unsupported_scales(const IfaArgs& a) {
  const std::pair<const std::optional<TensorView>*, const char*> scales[] = {
      {&a.dequant_scale1, "dequant_scale1"},
      {&a.quant_scale1, "quant_scale1"},
      {&a.dequant_scale2, "dequant_scale2"}};
  for (const auto& [view, name] : scales) {
    if (view->has_value()) {
      return invalid(std::string(name) +
                     " must be absent: it belongs to the int8-query path, which "
                     "incre_flash_attention does not support; got " +
                     (*view)->describe());
    }
  }
  return Status::kSuccess;
}

// Calls fn(view, name) on every tensor of the call (optional ones when given) and returns the
// first failure. kv_padding_size only when with_padding: an inactive one is ignored
// (docs/semantics.md §2.7), so its geometry is checked where it is used.
template <typename Fn>
Status each_view(const IfaArgs& a, bool with_padding, Fn fn) {
  KVFLASH_RETURN_IF_ERROR(fn(a.query, "query"));
  for (size_t i = 0; i < a.key.size(); ++i) {
    KVFLASH_RETURN_IF_ERROR(fn(a.key[i], "key[" + std::to_string(i) + "]"));
  }
  for (size_t i = 0; i < a.value.size(); ++i) {  // the lists' lengths are compared later
    KVFLASH_RETURN_IF_ERROR(fn(a.value[i], "value[" + std::to_string(i) + "]"));
  }
  KVFLASH_RETURN_IF_ERROR(fn(a.attention_out, "attention_out"));
  const std::pair<const std::optional<TensorView>*, const char*> optionals[] = {
      {&a.pse_shift, "pse_shift"},
      {&a.atten_mask, "atten_mask"},
      {&a.quant_scale2, "quant_scale2"},
      {&a.quant_offset2, "quant_offset2"},
      {&a.antiquant_scale, "antiquant_scale"},
      {&a.antiquant_offset, "antiquant_offset"},
      {&a.block_table, "block_table"},
      {&a.softmax_lse, "softmax_lse"},
      {&a.kv_padding_size, "kv_padding_size"}};
  for (const auto& [view, name] : optionals) {
    if (view == &a.kv_padding_size && !with_padding) continue;
    if (view->has_value()) KVFLASH_RETURN_IF_ERROR(fn(**view, name));
  }
  return Status::kSuccess;
}

// Geometry (dims, strides, offset, addressable range) of every view that validation may use, and
// the device rule: every tensor of a call lives where the query does (one backend runs it).
Status check_all_views(const IfaArgs& a) {
  KVFLASH_RETURN_IF_ERROR(each_view(a, false, [](const TensorView& t, const std::string& name) {
    int64_t n = 0;
    return core::check_view(kIfaOp, t, name, &n);
  }));
  const Device dev = a.query.device;
  return each_view(a, true, [dev](const TensorView& t, const std::string& name) {
    if (t.device == dev) return Status::kSuccess;
    return invalid(name + " is on " + device_name(t.device) + " but query is on " +
                   device_name(dev) + ": every tensor of a call must be on one device");
  });
}

Status check_attrs(const IfaArgs& a) {
  if (a.num_threads < 0) {
    return invalid("num_threads (" + str(a.num_threads) + ") must be >= 0 (0 = library default)");
  }
  if (a.inner_precise != 0 && a.inner_precise != 1) {
    return invalid("inner_precise (" + str(a.inner_precise) + ") must be 0 or 1");
  }
  return Status::kSuccess;
}

Status parse_layout(const std::string& layout, Layout* out) {
  if (layout == "BSH") {
    *out = Layout::kBsh;
  } else if (layout == "BSND") {
    *out = Layout::kBsnd;
  } else if (layout == "BNSD") {
    *out = Layout::kBnsd;
  } else {
    return invalid("input_layout must be BSH, BSND or BNSD, got \"" + layout + "\"");
  }
  return Status::kSuccess;
}

// Rule 3: dtypes of query, key/value lists and output.
Status check_dtypes(const IfaArgs& a, IfaShape* s) {
  s->q_dtype = a.query.dtype;
  if (s->q_dtype != DType::kFloat16 && s->q_dtype != DType::kBFloat16) {
    return invalid(std::string("query dtype must be fp16 or bf16, got ") + dtype_name(s->q_dtype));
  }
  s->kv_dtype = a.key[0].dtype;
  for (size_t i = 0; i < a.key.size(); ++i) {
    if (a.key[i].dtype != s->kv_dtype) {
      return invalid("key[" + std::to_string(i) + "] dtype (" + dtype_name(a.key[i].dtype) +
                     ") must equal key[0] dtype (" + dtype_name(s->kv_dtype) + ")");
    }
  }
  for (size_t i = 0; i < a.value.size(); ++i) {
    if (a.value[i].dtype != s->kv_dtype) {
      return invalid("value[" + std::to_string(i) + "] dtype (" + dtype_name(a.value[i].dtype) +
                     ") must equal key dtype (" + dtype_name(s->kv_dtype) + ")");
    }
  }
  s->out_dtype = a.attention_out.dtype;
  for (const auto& c : kAllowedCombos) {
    if (c.q == s->q_dtype && c.kv == s->kv_dtype && c.out == s->out_dtype) {
      return Status::kSuccess;
    }
  }
  return invalid(std::string("dtypes (query, key/value, attention_out) = (") +
                 dtype_name(s->q_dtype) + ", " + dtype_name(s->kv_dtype) + ", " +
                 dtype_name(s->out_dtype) +
                 ") are not supported; expected query fp16/bf16, key/value = query or int8, "
                 "attention_out = query, int8 or fp32");
}

// Rule 4: head counts and their limits.
Status check_heads(const IfaArgs& a, IfaShape* s) {
  if (a.num_heads <= 0) return invalid("num_heads (" + str(a.num_heads) + ") must be > 0");
  if (a.num_heads > kIfaMaxHeads) {
    return invalid("num_heads (" + str(a.num_heads) + ") must be <= " + str(kIfaMaxHeads));
  }
  if (a.num_key_value_heads < 0) {
    return invalid("num_key_value_heads (" + str(a.num_key_value_heads) +
                   ") must be >= 0 (0 means num_heads)");
  }
  s->num_heads = a.num_heads;
  s->num_kv_heads = a.num_key_value_heads == 0 ? a.num_heads : a.num_key_value_heads;
  if (s->num_kv_heads > kIfaMaxKvHeads) {
    return invalid("num_key_value_heads (" + str(s->num_kv_heads) +
                   ") must be <= " + str(kIfaMaxKvHeads));
  }
  if (s->num_heads % s->num_kv_heads != 0) {
    return invalid("num_heads (" + str(s->num_heads) + ") must be a multiple of " +
                   "num_key_value_heads (" + str(s->num_kv_heads) + ")");
  }
  const int64_t group = s->num_heads / s->num_kv_heads;
  if (group > kIfaMaxGroup) {
    return invalid("num_heads / num_key_value_heads (" + str(s->num_heads) + " / " +
                   str(s->num_kv_heads) + " = " + str(group) + ") must be <= " + str(kIfaMaxGroup));
  }
  return Status::kSuccess;
}

// Rules 2, 5, 6 for query and attention_out: rank, B, Q_S == 1, N, D; fills p->q and p->out.
Status check_query_and_out(const IfaArgs& a, IfaShape* s, core::IfaProblem* p) {
  const TensorView& q = a.query;
  const int want_rank = s->layout == Layout::kBsh ? 3 : 4;
  if (q.rank != want_rank) {
    return invalid("query must be " + std::to_string(want_rank) + "-D for input_layout " +
                   a.input_layout + ", got " + q.describe());
  }
  const int64_t n = s->num_heads;
  int64_t q_s = 0, q_n = 0;
  int s_axis = 1, n_axis = 2;
  switch (s->layout) {
    case Layout::kBsh:
      if (q.shape[2] % n != 0) {
        return invalid("query hidden size (" + str(q.shape[2]) + ") must be a multiple of " +
                       "num_heads (" + str(n) + "), got " + q.describe());
      }
      q_s = q.shape[1];
      q_n = n;
      s->head_dim = q.shape[2] / n;
      break;
    case Layout::kBsnd:
      q_s = q.shape[1];
      q_n = q.shape[2];
      s->head_dim = q.shape[3];
      break;
    case Layout::kBnsd:
      q_n = q.shape[1];
      q_s = q.shape[2];
      s->head_dim = q.shape[3];
      s_axis = 2;
      n_axis = 1;
      break;
  }
  s->batch = q.shape[0];
  if (q_s != 1) {
    return invalid("query sequence length (" + str(q_s) + ", dim " + std::to_string(s_axis) +
                   ") must be 1, got " + q.describe());
  }
  if (q_n != n) {
    return invalid("query head dim " + std::to_string(n_axis) + " (" + str(q_n) +
                   ") must equal num_heads (" + str(n) + "), got " + q.describe());
  }
  if (s->head_dim > kIfaMaxHeadDim) {
    return invalid("query head_dim (" + str(s->head_dim) + ") must be <= " + str(kIfaMaxHeadDim));
  }
  if (s->batch > kIfaMaxBatch) {
    return invalid("query batch (" + str(s->batch) + ") must be <= " + str(kIfaMaxBatch));
  }
  const TensorView& o = a.attention_out;
  if (!core::same_dims(o, q)) {
    return invalid("attention_out shape " + core::dims_str(o) + " must equal query shape " +
                   core::dims_str(q));
  }
  if (!o.is_contiguous()) {
    return invalid("attention_out must be contiguous with offset 0, got " + o.describe() +
                   " offset " + str(o.offset));
  }

  p->batch = s->batch;
  p->num_heads = n;
  p->num_kv_heads = s->num_kv_heads;
  p->group = n / s->num_kv_heads;
  p->head_dim = s->head_dim;
  p->q_dtype = s->q_dtype;
  p->out_dtype = s->out_dtype;
  p->scale = static_cast<float>(a.scale_value);
  p->q.present = true;
  p->q.dtype = q.dtype;
  p->q.s0 = q.strides[0];
  if (s->layout == Layout::kBsh) {
    KVFLASH_RETURN_IF_ERROR(
        core::scaled_stride(kIfaOp, s->head_dim, q.strides[2], "query", &p->q.s1));
    p->q.s2 = q.strides[2];
  } else {
    p->q.s1 = q.strides[n_axis];
    p->q.s2 = q.strides[3];
  }
  // Contiguous: (b, h, d) -> b*N*D + h*D + d in every layout, since Q_S == 1.
  p->out_s0 = n * s->head_dim;
  p->out_s1 = s->head_dim;
  p->out_s2 = 1;
  return Status::kSuccess;
}

}  // namespace

Status validate_ifa(const IfaArgs& user_args, core::IfaProblem* out) {
  const IfaArgs args = core::with_canonical_strides(kFields, user_args);
  KVFLASH_RETURN_IF_ERROR(check_required(args));
  KVFLASH_RETURN_IF_ERROR(check_unsupported_scales(args));
  KVFLASH_RETURN_IF_ERROR(check_all_views(args));
  KVFLASH_RETURN_IF_ERROR(check_attrs(args));
  IfaShape shape;
  core::IfaProblem p;
  KVFLASH_RETURN_IF_ERROR(parse_layout(args.input_layout, &shape.layout));
  if (args.query.numel() == 0) {
    return invalid("query must not be empty, got " + args.query.describe());
  }
  KVFLASH_RETURN_IF_ERROR(check_dtypes(args, &shape));
  KVFLASH_RETURN_IF_ERROR(check_heads(args, &shape));
  KVFLASH_RETURN_IF_ERROR(check_query_and_out(args, &shape, &p));
  KVFLASH_RETURN_IF_ERROR(validate_kv(args, &shape, &p));
  KVFLASH_RETURN_IF_ERROR(validate_lengths(args, &shape, &p));
  KVFLASH_RETURN_IF_ERROR(validate_mask_pse(args, shape, &p));
  KVFLASH_RETURN_IF_ERROR(validate_quant_and_lse(args, shape, &p));
  p.device = args.query.device;
  p.zero_fully_masked_rows = args.zero_fully_masked_rows;
  *out = std::move(p);
  return Status::kSuccess;
}

}  // namespace kvflash::ifa
