// npu_fusion_attention (FlashAttentionScore's forward) as a torch operator: CPU kernel (views, a
// cached FlashAttentionScorePlan, one run) and fake kernel (torch_npu's output shapes, SymInt).
// Returns torch_npu's 7-tuple: attention_out, softmax_max and softmax_sum ([B, N, S1, 8] / [T, N,
// 8], each row's value 8 times), softmax_out (reserved upstream: an empty [0] of the query's
// dtype), seed and offset (as given: no dropout mask is generated, keep_prob < 1 is refused) and
// numels (the mask's element count upstream reports, output_rules.hpp's fa_numels). The schema
// arguments FlashAttentionScoreArgs has no member for are read here: gen_mask_parallel and sync
// (dropout mask generation: ignored), softmax_layout (must be "") and sink (must be None).
#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "kvflash/flash_attention_score.hpp"
#include "ops.hpp"
#include "ops/fa/fa_fields.hpp"
#include "output_rules.hpp"
#include "plan_cache.hpp"
#include "schema_args.hpp"
#include "views.hpp"

namespace kvflash::torch_ext {
namespace {

using FaCache = PlanCache<FlashAttentionScorePlan, FlashAttentionScoreArgs, fa::kFields>;

FaCache& cache() {
  static FaCache c(256);
  return c;
}

struct FaSchema {
  explicit FaSchema(const c10::FunctionSchema& s)
      : args(s, {"gen_mask_parallel", "sync", "softmax_layout", "sink", "seed", "offset"}),
        value(args.index().at("value")),
        key(args.index().at("key")),
        head_num(args.index().at("head_num")),
        input_layout(args.index().at("input_layout")),
        softmax_layout(args.index().at("softmax_layout")),
        sink(args.index().at("sink")),
        seed(args.index().at("seed")),
        offset(args.index().at("offset")),
        qlen(args.index().at("actual_seq_qlen")),
        kvlen(args.index().at("actual_seq_kvlen")) {}
  SchemaArgs<fa::kFields> args;
  int value, key, head_num, input_layout, softmax_layout, sink, seed, offset, qlen, kvlen;
};

const FaSchema& schema_of(const c10::OperatorHandle& op) {
  static const FaSchema s(op.schema());
  return s;
}

// softmax_layout and sink: what kvflash has no meaning for, named.
void check_extras(const FaSchema& s, c10::ArrayRef<c10::IValue> in) {
  const std::string& sl = in[static_cast<size_t>(s.softmax_layout)].toStringRef();
  TORCH_CHECK_VALUE(sl.empty(), "[", s.args.op(), "] softmax_layout \"", sl,
                    "\" is not supported by kvflash: pass \"\" (docs/python.md)");
  const c10::IValue& sink = in[static_cast<size_t>(s.sink)];
  TORCH_CHECK_VALUE(sink.isNone(), "[", s.args.op(),
                    "] sink is not supported by kvflash: pass None (docs/python.md)");
}

std::optional<std::vector<int64_t>> int_list(const c10::IValue& v) {
  if (v.isNone()) return std::nullopt;
  return v.toIntVector();
}

// A shape whose bytes leave int64 is no shape: the placeholder [0], which the library refuses.
std::vector<int64_t> or_placeholder(const std::optional<std::vector<int64_t>>& shape) {
  if (!shape) return {0};
  int64_t bytes = 4;
  for (const int64_t d : *shape)
    if (d < 0 || __builtin_mul_overflow(bytes, d, &bytes)) return {0};
  return *shape;
}

void fa_run(const FaSchema& s, torch::jit::Stack* stack);

}  // namespace

void fa_cpu(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
  const FaSchema& s = schema_of(op);
  in_schema_names({s.args.op(), {}}, [&] { fa_run(s, stack); });
}

namespace {
void fa_run(const FaSchema& s, torch::jit::Stack* stack) {
  const size_t n = s.args.index().num_arguments();
  const auto in = arguments(*stack, n);
  check_extras(s, in);
  FlashAttentionScoreArgs args;
  s.args.read(in, &args);
  const at::Tensor& q = in[0].toTensor();
  const at::Tensor& k = in[static_cast<size_t>(s.key)].toTensor();
  const at::Tensor& v = in[static_cast<size_t>(s.value)].toTensor();
  const std::string layout = fa_layout(args.input_layout);
  const std::vector<int64_t> out_shape =
      or_placeholder(fa_out_shape<int64_t>(q.sizes(), k.sizes(), v.sizes(), layout, args.head_num));
  const std::vector<int64_t> ms_shape =
      or_placeholder(fa_softmax_shape<int64_t>(q.sizes(), layout, args.head_num));
  // The plan first, over views of outputs not yet allocated: a bad call allocates nothing.
  args.attention_out =
      unallocated_view(out_shape, q.scalar_type(), q, s.args.op(), "attention_out");
  args.softmax_max = unallocated_view(ms_shape, at::kFloat, q, s.args.op(), "softmax_max");
  args.softmax_sum = unallocated_view(ms_shape, at::kFloat, q, s.args.op(), "softmax_sum");
  const auto plan = cache().get(args);
  const at::Tensor out = at::empty(out_shape, q.options());
  const at::Tensor mx = at::empty(ms_shape, q.options().dtype(at::kFloat));
  const at::Tensor sm = at::empty(ms_shape, q.options().dtype(at::kFloat));
  args.attention_out = view_of(out, s.args.op(), "attention_out");
  args.softmax_max = view_of(mx, s.args.op(), "softmax_max");
  args.softmax_sum = view_of(sm, s.args.op(), "softmax_sum");
  run_plan(*plan, args, q);
  const int64_t numels = fa_numels<int64_t>(q.sizes(), k.sizes(), layout, args.head_num,
                                            args.actual_seq_qlen, args.actual_seq_kvlen);
  finish(stack, n, out, mx, sm, at::empty({0}, q.options()),
         in[static_cast<size_t>(s.seed)].toInt(), in[static_cast<size_t>(s.offset)].toInt(),
         numels);
}

}  // namespace

void fa_meta(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
  const FaSchema& s = schema_of(op);
  const size_t n = s.args.index().num_arguments();
  const auto in = arguments(*stack, n);
  check_same_devices(s.args.index(), in);
  check_extras(s, in);
  const at::Tensor& q = in[0].toTensor();
  const at::Tensor& k = in[static_cast<size_t>(s.key)].toTensor();
  const at::Tensor& v = in[static_cast<size_t>(s.value)].toTensor();
  const std::string layout = fa_layout(in[static_cast<size_t>(s.input_layout)].toStringRef());
  const int64_t heads = in[static_cast<size_t>(s.head_num)].toInt();
  TORCH_CHECK_VALUE(layout != "SBH", "[", s.args.op(),
                    "] input_layout SBH is not supported by kvflash (docs/api.md, "
                    "\"FlashAttentionScore\")");
  const auto out_shape =
      fa_out_shape<c10::SymInt>(q.sym_sizes(), k.sym_sizes(), v.sym_sizes(), layout, heads);
  const auto ms_shape = fa_softmax_shape<c10::SymInt>(q.sym_sizes(), layout, heads);
  TORCH_CHECK_VALUE(out_shape && ms_shape, "[", s.args.op(), "] input_layout \"", layout,
                    "\" with query ", q.sym_sizes(), ", key ", k.sym_sizes(), ", value ",
                    v.sym_sizes(), " and head_num ", heads,
                    " leaves the output shapes undefined (docs/python.md)");
  const c10::SymInt numels = fa_numels<c10::SymInt>(q.sym_sizes(), k.sym_sizes(), layout, heads,
                                                    int_list(in[static_cast<size_t>(s.qlen)]),
                                                    int_list(in[static_cast<size_t>(s.kvlen)]));
  const auto f32 = q.options().dtype(at::kFloat);
  finish(stack, n, at::empty_symint(*out_shape, q.options()), at::empty_symint(*ms_shape, f32),
         at::empty_symint(*ms_shape, f32), at::empty({0}, q.options()),
         in[static_cast<size_t>(s.seed)].toInt(), in[static_cast<size_t>(s.offset)].toInt(),
         numels);
}

std::tuple<int64_t, int64_t, int64_t> fa_plan_cache_stats() { return cache().stats(); }
void clear_fa_plan_cache() { cache().clear(); }

}  // namespace kvflash::torch_ext
