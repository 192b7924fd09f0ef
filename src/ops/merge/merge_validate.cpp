#include "ops/merge/merge_validate.hpp"

#include <cstdio>
#include <initializer_list>
#include <string>
#include <utility>

#include "core/error.hpp"
#include "core/plan_fields.hpp"
#include "core/view_check.hpp"
#include "ops/merge/merge_fields.hpp"

namespace kvflash::merge {
namespace {

using core::str;

Status invalid(const std::string& msg) { return core::fail(Status::kInvalid, kOpName, msg); }
Status null_ptr(const std::string& msg) { return core::fail(Status::kNullPtr, kOpName, msg); }

bool float_dtype(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBFloat16;
}

// Every tensor of the call with its name (optional ones when present), in table order.
template <typename Fn>
Status each_view(const MergeArgs& a, Fn fn) {
  return core::for_each_view(kFields, a, fn);
}

// v's dims must be `lead` (when >= 0) followed by the row dims of partial_out, then `tail` (when
// >= 0).
Status expect_dims(const TensorView& v, const char* name, int64_t lead, const core::MergeProblem& p,
                   int64_t tail, const TensorView& po) {
  const int want_rank = p.row_rank + (lead >= 0) + (tail >= 0);
  bool ok = v.rank == want_rank;
  int i = 0;
  if (ok && lead >= 0) ok = v.shape[i++] == lead;
  for (int r = 0; ok && r < p.row_rank; ++r) ok = v.shape[i++] == p.row_dims[r];
  if (ok && tail >= 0) ok = v.shape[i] == tail;
  if (ok) return Status::kSuccess;
  std::string want = "[";
  bool first = true;
  auto add = [&](int64_t x) {
    want += (first ? "" : ",") + str(x);
    first = false;
  };
  if (lead >= 0) add(lead);
  for (int r = 0; r < p.row_rank; ++r) add(p.row_dims[r]);
  if (tail >= 0) add(tail);
  want += "]";
  return invalid(std::string(name) + " shape " + core::dims_str(v) + " must be " + want +
                 " (partial_out is " + core::dims_str(po) + ")");
}

Status expect_f32(const TensorView& v, const char* name) {
  if (v.dtype == DType::kFloat32) return Status::kSuccess;
  return invalid(std::string(name) + " dtype must be fp32, got " + dtype_name(v.dtype));
}

Status expect_contiguous(const TensorView& v, const char* name) {
  if (v.is_contiguous()) return Status::kSuccess;
  return invalid(std::string(name) + " must be contiguous with offset 0, got " + v.describe() +
                 " with offset " + str(v.offset));
}

// Strides of v over the row dims, which start at dim `first`.
core::MergeRowStrides row_strides(const TensorView& v, int first, int row_rank) {
  core::MergeRowStrides s;
  for (int r = 0; r < row_rank; ++r) s.s[r] = v.strides[first + r];
  return s;
}

// The list form's own rules: both lists K long, nothing of the stacked form.
Status check_list_form(const MergeArgs& a) {
  if (a.partial_out_list.empty()) return null_ptr("partial_out_list is required with partial_lse_list");
  if (a.partial_lse_list.empty()) return null_ptr("partial_lse_list is required with partial_out_list");
  if (a.partial_lse_list.size() != a.partial_out_list.size()) {
    return invalid("partial_lse_list must hold as many tensors as partial_out_list (" +
                   str(static_cast<int64_t>(a.partial_out_list.size())) + "), got " +
                   str(static_cast<int64_t>(a.partial_lse_list.size())));
  }
  if (a.partial_out) return invalid("give either partial_out or partial_out_list, not both");
  if (a.partial_lse || a.partial_max || a.partial_sum) {
    return invalid("partial_lse, partial_max and partial_sum must be absent with the lists");
  }
  for (size_t k = 0; k < a.partial_out_list.size(); ++k) {
    if (core::is_null_view(a.partial_out_list[k])) {
      return null_ptr("partial_out_list[" + str(static_cast<int64_t>(k)) + "] is null");
    }
    if (core::is_null_view(a.partial_lse_list[k])) {
      return null_ptr("partial_lse_list[" + str(static_cast<int64_t>(k)) + "] is null");
    }
  }
  return Status::kSuccess;
}

// [rows..., D] of partial_out's rank r: the row dims and D into *p.
Status part_geometry(const TensorView& po, const char* name, int first,
                     core::MergeProblem* p) {
  if (!float_dtype(po.dtype)) {
    return invalid(std::string(name) + " dtype must be fp32, fp16 or bf16, got " +
                   dtype_name(po.dtype));
  }
  if (po.rank < first + 1) {
    return invalid(std::string(name) + " rank (" + str(po.rank) + ") must be at least " +
                   str(first + 1) + (first ? ": [K, rows..., D]" : ": [rows..., D]"));
  }
  p->head_dim = po.shape[po.rank - 1];
  p->row_rank = po.rank - 1 - first;
  p->num_rows = 1;
  for (int r = 0; r < p->row_rank; ++r) {
    p->row_dims[r] = po.shape[first + r];
    p->num_rows *= p->row_dims[r];  // bounded: check_view proved the product fits int64
  }
  if (p->head_dim < 1) return invalid(std::string(name) + " last dim (D) must be >= 1");
  p->part_dtype = po.dtype;
  p->po_d = po.strides[po.rank - 1];
  p->po = row_strides(po, first, p->row_rank);
  return Status::kSuccess;
}

// partial_out [K, rows..., D] with partial_lse, or partial_max and partial_sum, [K, rows...].
Status validate_stacked(const MergeArgs& a, core::MergeProblem* p) {
  const TensorView& po = *a.partial_out;
  KVFLASH_RETURN_IF_ERROR(part_geometry(po, "partial_out", 1, p));
  p->num_parts = po.shape[0];
  if (p->num_parts < 1) return invalid("partial_out dim 0 (K, the number of parts) must be >= 1");
  p->po_k = po.strides[0];
  p->lse_form = a.partial_lse.has_value();
  const TensorView& pm = p->lse_form ? *a.partial_lse : *a.partial_max;
  const char* pm_name = p->lse_form ? "partial_lse" : "partial_max";
  KVFLASH_RETURN_IF_ERROR(expect_f32(pm, pm_name));
  KVFLASH_RETURN_IF_ERROR(expect_dims(pm, pm_name, p->num_parts, *p, -1, po));
  p->pm_k = pm.strides[0];
  p->pm = row_strides(pm, 1, p->row_rank);
  if (!p->lse_form) {
    const TensorView& ps = *a.partial_sum;
    KVFLASH_RETURN_IF_ERROR(expect_f32(ps, "partial_sum"));
    KVFLASH_RETURN_IF_ERROR(expect_dims(ps, "partial_sum", p->num_parts, *p, -1, po));
    p->ps_k = ps.strides[0];
    p->ps = row_strides(ps, 1, p->row_rank);
  }
  return Status::kSuccess;
}

// The lists: entry k of partial_out_list [rows..., D] and of partial_lse_list [rows...] fp32,
// each with its entry 0's dtype, dims and strides (the parts share the row offsets).
Status validate_parts(const MergeArgs& a, core::MergeProblem* p) {
  const TensorView& po = a.partial_out_list[0];
  KVFLASH_RETURN_IF_ERROR(part_geometry(po, "partial_out_list[0]", 0, p));
  p->parts = true;
  p->lse_form = true;
  p->num_parts = static_cast<int64_t>(a.partial_out_list.size());
  const TensorView& pm = a.partial_lse_list[0];
  KVFLASH_RETURN_IF_ERROR(expect_f32(pm, "partial_lse_list[0]"));
  KVFLASH_RETURN_IF_ERROR(expect_dims(pm, "partial_lse_list[0]", -1, *p, -1, po));
  p->pm = row_strides(pm, 0, p->row_rank);
  // Strides compared where they are stepped (core::canonical_strides).
  const auto same = [](const TensorView& xv, const TensorView& x0v) {
    const TensorView x = core::canonical_strides(xv), x0 = core::canonical_strides(x0v);
    if (x.dtype != x0.dtype || x.rank != x0.rank) return false;
    for (int i = 0; i < x.rank; ++i)
      if (x.shape[i] != x0.shape[i] || x.strides[i] != x0.strides[i]) return false;
    return true;
  };
  for (size_t k = 1; k < a.partial_out_list.size(); ++k) {
    const std::string ks = "[" + str(static_cast<int64_t>(k)) + "]";
    if (!same(a.partial_out_list[k], po)) {
      return invalid("partial_out_list" + ks + " " + a.partial_out_list[k].describe() +
                     " must have partial_out_list[0]'s dtype, dims and strides (" +
                     po.describe() + ")");
    }
    if (!same(a.partial_lse_list[k], pm)) {
      return invalid("partial_lse_list" + ks + " " + a.partial_lse_list[k].describe() +
                     " must have partial_lse_list[0]'s dtype, dims and strides (" +
                     pm.describe() + ")");
    }
  }
  return Status::kSuccess;
}

}  // namespace

Status validate(const MergeArgs& a, core::MergeProblem* problem) {
  // Required tensors first (161001).
  const bool parts = !a.partial_out_list.empty() || !a.partial_lse_list.empty();
  if (parts) {
    KVFLASH_RETURN_IF_ERROR(check_list_form(a));
  } else if (!a.partial_out || core::is_null_view(*a.partial_out)) {
    return null_ptr("partial_out is null (or give partial_out_list and partial_lse_list)");
  }
  if (core::is_null_view(a.out)) return null_ptr("out is null");
  const bool has_max = a.partial_max.has_value(), has_sum = a.partial_sum.has_value();
  if (!parts && !a.partial_lse && !has_max && !has_sum) {
    return null_ptr("partial_lse (or partial_max and partial_sum) is required");
  }
  if (a.partial_lse && (has_max || has_sum)) {
    return invalid("give either partial_lse or partial_max and partial_sum, not both forms");
  }
  if (has_max != has_sum) {
    return invalid(std::string(has_max ? "partial_sum" : "partial_max") + " is required with " +
                   (has_max ? "partial_max" : "partial_sum"));
  }
  if (a.out_max.has_value() != a.out_sum.has_value()) {
    return invalid("out_max and out_sum must be given together");
  }
  if (a.num_threads < 0) {
    return invalid("num_threads (" + str(a.num_threads) + ") must be >= 0 (0 = library default)");
  }
  // Geometry of every view, then one device for all.
  KVFLASH_RETURN_IF_ERROR(each_view(a, [](const TensorView& t, const char* name) {
    int64_t n = 0;
    return core::check_view(kOpName, t, name, &n);
  }));
  const char* first_name = parts ? "partial_out_list[0]" : "partial_out";
  const Device dev = (parts ? a.partial_out_list[0] : *a.partial_out).device;
  KVFLASH_RETURN_IF_ERROR(each_view(a, [dev, first_name](const TensorView& t, const char* name) {
    if (t.device == dev) return Status::kSuccess;
    return invalid(std::string(name) + " is on " + device_name(t.device) + " but " + first_name +
                   " is on " + device_name(dev) + ": every tensor of a call must be on one device");
  }));

  core::MergeProblem p;
  p.device = dev;
  if (parts) {
    KVFLASH_RETURN_IF_ERROR(validate_parts(a, &p));
  } else {
    KVFLASH_RETURN_IF_ERROR(validate_stacked(a, &p));
  }
  const TensorView& po = parts ? a.partial_out_list[0] : *a.partial_out;
  if (a.sink) {
    KVFLASH_RETURN_IF_ERROR(expect_f32(*a.sink, "sink"));
    KVFLASH_RETURN_IF_ERROR(expect_dims(*a.sink, "sink", -1, p, -1, po));
    p.has_sink = true;
    p.sink = row_strides(*a.sink, 0, p.row_rank);
  }

  // Outputs: contiguous.
  if (!float_dtype(a.out.dtype)) {
    return invalid(std::string("out dtype must be fp32, fp16 or bf16, got ") +
                   dtype_name(a.out.dtype));
  }
  KVFLASH_RETURN_IF_ERROR(expect_dims(a.out, "out", -1, p, p.head_dim, po));
  KVFLASH_RETURN_IF_ERROR(expect_contiguous(a.out, "out"));
  p.out_dtype = a.out.dtype;
  const std::pair<const std::optional<TensorView>*, const char*> row_outputs[] = {
      {&a.out_lse, "out_lse"}, {&a.out_max, "out_max"}, {&a.out_sum, "out_sum"}};
  for (const auto& [view, name] : row_outputs) {
    if (!view->has_value()) continue;
    KVFLASH_RETURN_IF_ERROR(expect_f32(**view, name));
    KVFLASH_RETURN_IF_ERROR(expect_dims(**view, name, -1, p, -1, po));
    KVFLASH_RETURN_IF_ERROR(expect_contiguous(**view, name));
  }
  p.has_out_lse = a.out_lse.has_value();
  p.has_out_max_sum = a.out_max.has_value();
  *problem = p;
  return Status::kSuccess;
}

MergeArgs strip_data(const MergeArgs& args,
                     const core::MergeProblem& /*problem: nothing to drop*/) {
  return core::strip_fields(kFields, args);
}

Status check_matches_plan(const MergeArgs& p, const MergeArgs& a) {
  return core::match_fields(kOpName, kFields, p, a);
}

void bind_data(const core::MergeProblem& p, const MergeArgs& a, core::MergeData* d) {
  *d = core::MergeData{};
  if (p.parts) {
    d->part_out = a.partial_out_list.data();
    d->part_lse = a.partial_lse_list.data();
  } else {
    d->partial_out = core::element0(*a.partial_out);
    d->partial_m =
        static_cast<const float*>(core::element0(p.lse_form ? *a.partial_lse : *a.partial_max));
  }
  if (!p.lse_form) d->partial_sum = static_cast<const float*>(core::element0(*a.partial_sum));
  if (p.has_sink) d->sink = static_cast<const float*>(core::element0(*a.sink));
  d->out = core::element0(a.out);
  if (p.has_out_lse) d->out_lse = static_cast<float*>(core::element0(*a.out_lse));
  if (p.has_out_max_sum) {
    d->out_max = static_cast<float*>(core::element0(*a.out_max));
    d->out_sum = static_cast<float*>(core::element0(*a.out_sum));
  }
}

void describe(const core::MergeProblem& p, char* buf, size_t size) {
  std::snprintf(buf, size, "K=%lld rows=%lld D=%lld %s->%s", static_cast<long long>(p.num_parts),
                static_cast<long long>(p.num_rows), static_cast<long long>(p.head_dim),
                dtype_name(p.part_dtype), dtype_name(p.out_dtype));
}

}  // namespace kvflash::merge
