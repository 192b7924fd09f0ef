// PromptFlashAttention and FusedInferAttentionScore (v1, v2, their .out forms and
// _get_max_workspace) as torch operators: the CPU kernels (views of the tensors, a cached FiaPlan,
// one run) and the fake kernels (the output shapes of output_rules.hpp). Every schema is read
// through FIA's field table (src/ops/fia/fia_fields.hpp); the arguments PFA and v2 name otherwise
// are renamed here, and the few that FiaArgs has no member for are read (or refused) here.
#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "kvflash/fia.hpp"
#include "ops.hpp"
#include "ops/fia/fia_fields.hpp"
#include "output_rules.hpp"
#include "plan_cache.hpp"
#include "schema_args.hpp"
#include "views.hpp"

namespace kvflash::torch_ext {
namespace {

using FiaCache = PlanCache<FiaPlan, FiaArgs, fia::kFields>;

// Plans by metadata, one cache per operator (a PFA plan never runs an FIA call, whatever the
// table's fingerprint holds). Host lengths are part of a plan, as in aclnn.
FiaCache& pfa_cache() {
  static FiaCache c(256);
  return c;
}
FiaCache& fia_cache() {
  static FiaCache c(256);
  return c;
}

// The schema arguments of FIA v2 that FiaArgs has no member for: each must be None (D1 refuses
// them; docs/fia-pfa-indexer.md).
const std::vector<std::string_view> kV2Refused = {"quant_scale_p",
                                                  "query_dtype",
                                                  "key_dtype",
                                                  "value_dtype",
                                                  "query_rope_dtype",
                                                  "key_rope_dtype",
                                                  "key_shared_prefix_dtype",
                                                  "value_shared_prefix_dtype",
                                                  "dequant_scale_query_dtype",
                                                  "dequant_scale_key_dtype",
                                                  "dequant_scale_value_dtype",
                                                  "dequant_scale_key_rope_dtype",
                                                  "out_dtype"};

// The schema arguments the kernels read themselves: PFA's reserved padding_mask (ignored, as
// torch_npu does), v2's refused ones, the .out forms' workspace and softmax_lse.
std::vector<std::string_view> extras_of(FiaOp op, FiaForm form) {
  std::vector<std::string_view> e;
  if (op == FiaOp::kPfa) e.push_back("padding_mask");
  if (op == FiaOp::kFiaV2) e.insert(e.end(), kV2Refused.begin(), kV2Refused.end());
  if (form == FiaForm::kOut) e.insert(e.end(), {"workspace", "softmax_lse"});
  return e;
}

// {FiaArgs member, schema argument} where the schema names a member otherwise. softmax_lse (.out)
// is read by the kernel, only when the LSE is requested (torch_npu callers pass a dummy).
std::vector<std::pair<std::string_view, std::string_view>> renames_of(FiaOp op, FiaForm form) {
  std::vector<std::pair<std::string_view, std::string_view>> r;
  if (op == FiaOp::kPfa)
    r = {{"dequant_scale1", "deq_scale1"},
         {"dequant_scale2", "deq_scale2"},
         {"scale", "scale_value"}};
  if (op == FiaOp::kFiaV2)
    r = {{"num_heads", "num_query_heads"},
         {"scale", "softmax_scale"},
         {"actual_seq_lengths", "actual_seq_qlen"},
         {"actual_seq_lengths_kv", "actual_seq_kvlen"},
         {"softmax_lse_flag", "return_softmax_lse"},
         {"key_antiquant_scale", "dequant_scale_key"},
         {"key_antiquant_offset", "dequant_offset_key"},
         {"value_antiquant_scale", "dequant_scale_value"},
         {"value_antiquant_offset", "dequant_offset_value"},
         {"key_antiquant_mode", "key_quant_mode"},
         {"value_antiquant_mode", "value_quant_mode"},
         {"quant_scale2", "quant_scale_out"},
         {"quant_offset2", "quant_offset_out"},
         {"key_rope_antiquant_scale", "dequant_scale_key_rope"}};
  if (form == FiaForm::kOut) r.emplace_back("softmax_lse", "");
  return r;
}

// One operator's schema and the positions of the arguments the kernels look at themselves (-1
// where the schema lacks one).
struct FiaSchema {
  FiaSchema(const c10::FunctionSchema& schema, FiaOp op, FiaForm form)
      : args(schema, extras_of(op, form), renames_of(op, form)),
        value(args.index().at("value")),
        input_layout(args.index().at("input_layout")),
        num_heads(args.index().at(op == FiaOp::kFiaV2 ? "num_query_heads" : "num_heads")),
        num_kv_heads(args.index().at("num_key_value_heads")),
        quant_scale2(args.index().at(op == FiaOp::kFiaV2 ? "quant_scale_out" : "quant_scale2")),
        query_rope(args.index().find("query_rope")),
        block_table(args.index().find("block_table")),
        lse_flag(
            args.index().find(op == FiaOp::kFiaV2 ? "return_softmax_lse" : "softmax_lse_flag")),
        workspace(args.index().find("workspace")),
        attention_out(args.index().find("attention_out")),
        softmax_lse(args.index().find("softmax_lse")) {
    if (op == FiaOp::kFiaV2)
      for (std::string_view name : kV2Refused) refused.push_back(args.index().at(name));
  }
  SchemaArgs<fia::kFields> args;
  int value, input_layout, num_heads, num_kv_heads, quant_scale2, query_rope, block_table, lse_flag,
      workspace, attention_out, softmax_lse;
  std::vector<int> refused;
};

template <FiaOp kOp, FiaForm kForm>
const FiaSchema& schema_of(const c10::OperatorHandle& op) {
  static const FiaSchema s(op.schema(), kOp, kForm);
  return s;
}

FiaCache& cache_of(FiaOp op) { return op == FiaOp::kPfa ? pfa_cache() : fia_cache(); }

// v2's arguments kvflash has no meaning for (D1) are a ValueError naming the argument.
void check_refused(const FiaSchema& s, c10::ArrayRef<c10::IValue> in) {
  for (const int i : s.refused) {
    TORCH_CHECK_VALUE(in[static_cast<size_t>(i)].isNone(), "[", s.args.op(), "] ",
                      s.args.index().name(static_cast<size_t>(i)),
                      " is not supported by kvflash (docs/fia-pfa-indexer.md, D1): pass None");
  }
}

// The call's FiaArgs, but the outputs.
FiaArgs read_args(const FiaSchema& s, c10::ArrayRef<c10::IValue> in, FiaOp op) {
  check_refused(s, in);
  FiaArgs args;
  s.args.read(in, &args);
  if (op == FiaOp::kPfa) {
    args.prompt = true;
    // torch_npu's PFA: sparse_mode 10-14 asks for high precision (inner_precise 0) with mode
    // sparse_mode - 10; any other mode runs high-performance (1). inner_precise does not change
    // kvflash's numerics (D2); it is passed on for the library to validate.
    if (args.sparse_mode >= 10 && args.sparse_mode <= 14) {
      args.sparse_mode -= 10;
      args.inner_precise = 0;
    } else {
      args.inner_precise = 1;
    }
  }
  return args;
}

// The outputs' shapes and dtypes (output_rules.hpp). Where the rule is undefined for the
// arguments, a [0] placeholder: the library then refuses the call, naming the argument.
struct OutputShapes {
  std::vector<int64_t> out, lse;
  at::ScalarType dtype;
};

OutputShapes output_shapes(const FiaSchema& s, c10::ArrayRef<c10::IValue> in, const FiaArgs& args,
                           FiaOp op) {
  const at::Tensor& q = in[0].toTensor();
  const at::Tensor& v = in[static_cast<size_t>(s.value)].toTensor();
  const c10::IValue& quant = in[static_cast<size_t>(s.quant_scale2)];
  std::optional<std::vector<int64_t>> shape;
  at::ScalarType dtype;
  if (op == FiaOp::kPfa) {
    shape = pfa_out_shape<int64_t>(q.sizes(), v.sizes(), args.input_layout);
    dtype = pfa_out_dtype(q, quant);
  } else {
    shape = fia_out_shape<int64_t>(q.sizes(), v.sizes(), args.input_layout, args.num_heads,
                                   args.num_key_value_heads, args.block_table.has_value(),
                                   v.scalar_type() == at::kInt);
    dtype = fia_out_dtype(q, quant, in[static_cast<size_t>(s.query_rope)]);
  }
  const std::vector<int64_t> none{0};
  // A shape whose bytes leave int64 (absurd attributes) is the placeholder too: its strides
  // could not be written, and the library names the attribute that makes it so.
  const auto representable = [](const std::vector<int64_t>& dims) {
    int64_t bytes = 4;
    for (const int64_t d : dims)
      if (d < 0 || __builtin_mul_overflow(bytes, d, &bytes)) return false;
    return true;
  };
  if (shape && !representable(*shape)) shape.reset();
  OutputShapes o;
  o.out = shape.value_or(none);
  o.dtype = dtype;
  auto lse = args.softmax_lse_flag
                 ? fia_lse_shape<int64_t>(q.sizes(), args.input_layout, args.num_heads)
                 : std::nullopt;
  if (lse && !representable(*lse)) lse.reset();
  o.lse = lse.value_or(none);
  return o;
}

// The plan of the call, made before its outputs exist (so that a bad argument is refused
// before anything is allocated for it): the outputs are bound as unallocated views.
std::shared_ptr<const FiaPlan> plan_of(const FiaSchema& s, const OutputShapes& shapes,
                                       const at::Tensor& query, FiaOp op, FiaArgs* args) {
  args->attention_out =
      unallocated_view(shapes.out, shapes.dtype, query, s.args.op(), "attention_out");
  if (args->softmax_lse_flag)
    args->softmax_lse = unallocated_view(shapes.lse, at::kFloat, query, s.args.op(), "softmax_lse");
  return cache_of(op).get(*args);
}

struct Outputs {
  at::Tensor out, lse;
};

// The outputs, allocated, bound into *args.
Outputs bind_outputs(const FiaSchema& s, const OutputShapes& shapes, const at::Tensor& query,
                     FiaArgs* args) {
  Outputs o;
  o.out = at::empty(shapes.out, query.options().dtype(shapes.dtype));
  o.lse = at::empty(shapes.lse, query.options().dtype(at::kFloat));
  args->attention_out = view_of(o.out, s.args.op(), "attention_out");
  if (args->softmax_lse_flag) args->softmax_lse = view_of(o.lse, s.args.op(), "softmax_lse");
  return o;
}

}  // namespace

template <FiaOp kOp, FiaForm kForm>
void fia_cpu(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
  const FiaSchema& s = schema_of<kOp, kForm>(op);
  const size_t n = s.args.index().num_arguments();
  const auto in = arguments(*stack, n);
  FiaArgs args = read_args(s, in, kOp);
  const at::Tensor query = in[0].toTensor();
  if constexpr (kForm == FiaForm::kOut) {
    // attention_out came through the table; softmax_lse is bound only when requested (D7: else
    // it is left as it is, whatever its shape and dtype).
    const at::Tensor out = in[static_cast<size_t>(s.attention_out)].toTensor();
    const at::Tensor lse = in[static_cast<size_t>(s.softmax_lse)].toTensor();
    if (args.softmax_lse_flag) args.softmax_lse = view_of(lse, s.args.op(), "softmax_lse");
    const c10::IValue& ws = in[static_cast<size_t>(s.workspace)];
    const at::Tensor workspace = ws.isTensor() ? ws.toTensor() : at::Tensor();
    run_plan(*cache_of(kOp).get(args), args, query, workspace);
    finish(stack, n, out, lse);
  } else {
    const OutputShapes shapes = output_shapes(s, in, args, kOp);
    const auto plan = plan_of(s, shapes, query, kOp, &args);
    if constexpr (kForm == FiaForm::kWorkspace) {
      // The workspace a run of these arguments needs (a function of the plan: the same for every
      // thread count); .out uses it as given.
      finish(stack, n,
             at::empty({static_cast<int64_t>(plan->workspace_size())},
                       query.options().dtype(at::kByte)));
    } else {
      const Outputs o = bind_outputs(s, shapes, query, &args);
      run_plan(*plan, args, query);
      if constexpr (kOp == FiaOp::kPfa) {
        finish(stack, n, o.out);
      } else {
        finish(stack, n, o.out, o.lse);
      }
    }
  }
}

template <FiaOp kOp, FiaForm kForm>
void fia_meta(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
  const FiaSchema& s = schema_of<kOp, kForm>(op);
  const size_t n = s.args.index().num_arguments();
  const auto in = arguments(*stack, n);
  check_same_devices(s.args.index(), in);
  check_refused(s, in);
  const at::Tensor query = in[0].toTensor();
  if constexpr (kForm == FiaForm::kOut) {
    const at::Tensor out = in[static_cast<size_t>(s.attention_out)].toTensor();
    const at::Tensor lse = in[static_cast<size_t>(s.softmax_lse)].toTensor();
    finish(stack, n, out, lse);
  } else if constexpr (kForm == FiaForm::kWorkspace) {
    // The size is the plan's: the plan is made from the fake tensors' metadata (concrete shapes).
    const MetaViews meta;
    FiaArgs args = read_args(s, in, kOp);
    const auto plan = plan_of(s, output_shapes(s, in, args, kOp), query, kOp, &args);
    finish(stack, n,
           at::empty({static_cast<int64_t>(plan->workspace_size())},
                     query.options().dtype(at::kByte)));
  } else {
    const at::Tensor& value = in[static_cast<size_t>(s.value)].toTensor();
    const std::string& layout = in[static_cast<size_t>(s.input_layout)].toStringRef();
    const int64_t heads = in[static_cast<size_t>(s.num_heads)].toInt();
    const int64_t kv_heads = in[static_cast<size_t>(s.num_kv_heads)].toInt();
    const c10::IValue& quant = in[static_cast<size_t>(s.quant_scale2)];
    std::optional<std::vector<c10::SymInt>> shape;
    at::ScalarType dtype;
    if constexpr (kOp == FiaOp::kPfa) {
      shape = pfa_out_shape<c10::SymInt>(query.sym_sizes(), value.sym_sizes(), layout);
      dtype = pfa_out_dtype(query, quant);
    } else {
      const c10::IValue& table = in[static_cast<size_t>(s.block_table)];
      const bool paged = table.isTensor() && table.toTensor().defined();
      shape = fia_out_shape<c10::SymInt>(query.sym_sizes(), value.sym_sizes(), layout, heads,
                                         kv_heads, paged, value.scalar_type() == at::kInt);
      dtype = fia_out_dtype(query, quant, in[static_cast<size_t>(s.query_rope)]);
    }
    TORCH_CHECK_VALUE(shape.has_value(), "[", s.args.op(), "] input_layout \"", layout,
                      "\" with query ", query.sym_sizes(), ", value ", value.sym_sizes(),
                      ", num_heads ", heads, " and num_key_value_heads ", kv_heads,
                      " leaves the output shape undefined (docs/python.md)");
    const at::Tensor out = at::empty_symint(*shape, query.options().dtype(dtype));
    if constexpr (kOp == FiaOp::kPfa) {
      finish(stack, n, out);
    } else {
      const auto f32 = query.options().dtype(at::kFloat);
      at::Tensor lse = at::empty({0}, f32);
      if (in[static_cast<size_t>(s.lse_flag)].toBool()) {
        const auto lse_shape = fia_lse_shape<c10::SymInt>(query.sym_sizes(), layout, heads);
        TORCH_CHECK_VALUE(lse_shape.has_value(), "[", s.args.op(), "] softmax_lse: input_layout \"",
                          layout, "\" with query ", query.sym_sizes(),
                          " leaves the LSE shape undefined");
        lse = at::empty_symint(*lse_shape, f32);
      }
      finish(stack, n, out, std::move(lse));
    }
  }
}

#define KVFLASH_FIA_INSTANTIATE(OP, FORM)                                                          \
  template void fia_cpu<FiaOp::OP, FiaForm::FORM>(const c10::OperatorHandle&, c10::DispatchKeySet, \
                                                  torch::jit::Stack*);                             \
  template void fia_meta<FiaOp::OP, FiaForm::FORM>(const c10::OperatorHandle&,                     \
                                                   c10::DispatchKeySet, torch::jit::Stack*);
KVFLASH_FIA_INSTANTIATE(kPfa, kFunctional)
KVFLASH_FIA_INSTANTIATE(kFia, kFunctional)
KVFLASH_FIA_INSTANTIATE(kFia, kOut)
KVFLASH_FIA_INSTANTIATE(kFia, kWorkspace)
KVFLASH_FIA_INSTANTIATE(kFiaV2, kFunctional)
KVFLASH_FIA_INSTANTIATE(kFiaV2, kOut)
KVFLASH_FIA_INSTANTIATE(kFiaV2, kWorkspace)
#undef KVFLASH_FIA_INSTANTIATE

std::vector<int64_t> fia_plan_cache_info() {
  const auto [ph, pm, ps] = pfa_cache().stats();
  const auto [fh, fm, fs] = fia_cache().stats();
  return {ph, pm, ps, fh, fm, fs};
}

void clear_fia_plan_cache() {
  pfa_cache().clear();
  fia_cache().clear();
}

}  // namespace kvflash::torch_ext
