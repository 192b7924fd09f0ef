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

}  // namespace

Status validate(const MergeArgs& a, core::MergeProblem* problem) {
  // Required tensors first (161001).
  if (core::is_null_view(a.partial_out)) return null_ptr("partial_out is null");
  if (core::is_null_view(a.out)) return null_ptr("out is null");
  const bool has_max = a.partial_max.has_value(), has_sum = a.partial_sum.has_value();
  if (!a.partial_lse && !has_max && !has_sum) {
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
  const Device dev = a.partial_out.device;
  KVFLASH_RETURN_IF_ERROR(each_view(a, [dev](const TensorView& t, const char* name) {
    if (t.device == dev) return Status::kSuccess;
    return invalid(std::string(name) + " is on " + device_name(t.device) +
                   " but partial_out is on " + device_name(dev) +
                   ": every tensor of a call must be on one device");
  }));

  // partial_out: [K, rows..., D].
  const TensorView& po = a.partial_out;
  if (!float_dtype(po.dtype)) {
    return invalid(std::string("partial_out dtype must be fp32, fp16 or bf16, got ") +
                   dtype_name(po.dtype));
  }
  if (po.rank < 2) {
    return invalid("partial_out rank (" + str(po.rank) + ") must be at least 2: [K, rows..., D]");
  }
  core::MergeProblem p;
  p.device = dev;
  p.num_parts = po.shape[0];
  p.head_dim = po.shape[po.rank - 1];
  p.row_rank = po.rank - 2;
  p.num_rows = 1;
  for (int r = 0; r < p.row_rank; ++r) {
    p.row_dims[r] = po.shape[1 + r];
    p.num_rows *= p.row_dims[r];  // bounded: check_view proved the product fits int64
  }
  if (p.num_parts < 1) return invalid("partial_out dim 0 (K, the number of parts) must be >= 1");
  if (p.head_dim < 1) return invalid("partial_out last dim (D) must be >= 1");
  p.part_dtype = po.dtype;
  p.po_k = po.strides[0];
  p.po_d = po.strides[po.rank - 1];
  p.po = row_strides(po, 1, p.row_rank);

  // The per-part statistics: [K, rows...] fp32.
  p.lse_form = a.partial_lse.has_value();
  const TensorView& pm = p.lse_form ? *a.partial_lse : *a.partial_max;
  const char* pm_name = p.lse_form ? "partial_lse" : "partial_max";
  KVFLASH_RETURN_IF_ERROR(expect_f32(pm, pm_name));
  KVFLASH_RETURN_IF_ERROR(expect_dims(pm, pm_name, p.num_parts, p, -1, po));
  p.pm_k = pm.strides[0];
  p.pm = row_strides(pm, 1, p.row_rank);
  if (!p.lse_form) {
    const TensorView& ps = *a.partial_sum;
    KVFLASH_RETURN_IF_ERROR(expect_f32(ps, "partial_sum"));
    KVFLASH_RETURN_IF_ERROR(expect_dims(ps, "partial_sum", p.num_parts, p, -1, po));
    p.ps_k = ps.strides[0];
    p.ps = row_strides(ps, 1, p.row_rank);
  }
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
  d->partial_out = core::element0(a.partial_out);
  d->partial_m =
      static_cast<const float*>(core::element0(p.lse_form ? *a.partial_lse : *a.partial_max));
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
