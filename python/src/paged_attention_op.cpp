// ATB's PagedAttention decode as torch operators, _npu_paged_attention and
// _npu_paged_attention_get_workspace, on IncreFlashAttention (no kernel of their own): query
// [B, N, D] is IFA's BNSD query [B, N, 1, D], the cache [num_blocks, block_size, KV_N, D] IFA's
// 4-D paged cache [num_blocks, KV_N, block_size, D] (the same memory, dims 1 and 2 swapped: no
// copy), context_lens (a host tensor, as ATB reads it) IFA's actual_seq_lengths, out [B, N, D]
// written in place; block_size is the cache's dim 1. The plan comes from this file's cache (a
// decode step's new lengths are a new plan, as for IFA's own operator).
//
// _npu_paged_attention_get_workspace returns the workspace of every length the block table can
// hold (each batch's table row full): a run with any context_lens fits in it, so one workspace
// serves a captured graph's every replay (what vllm-ascend uses it for). Being independent of
// context_lens' values, it is also what the fake kernel returns.
#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "kvflash/ifa.hpp"
#include "ops.hpp"
#include "ops/ifa/ifa_fields.hpp"
#include "plan_cache.hpp"
#include "schema_args.hpp"
#include "views.hpp"

namespace kvflash::torch_ext {
namespace {

using IfaCache = PlanCache<IfaPlan, IfaArgs, ifa::kFields>;

IfaCache& cache() {
  static IfaCache c(256);
  return c;
}

// The argument positions, the same in both schemas.
enum Arg : size_t {
  kQuery,
  kKeyCache,
  kValueCache,
  kNumKvHeads,
  kNumHeads,
  kScale,
  kBlockTable,
  kContextLens,
  kOut,
  kWorkspace
};

const char* op_name(const c10::OperatorHandle& op) { return op.schema().name().c_str(); }

// IFA's names for ATB's arguments, in IFA's messages replaced by the schema's.
SchemaNames names_of(const char* op) {
  return {op,
          {{"actual_seq_lengths", "context_lens"},
           {"num_key_value_heads", "num_kv_heads"},
           {"attention_out", "out"},
           {"key[0]", "key_cache"},
           {"value[0]", "value_cache"},
           {"key", "key_cache"},
           {"value", "value_cache"},
           {"block_size", "block_size (key_cache dim 1)"}}};
}

// What the binding checks itself, before any view is reshaped: ranks (IFA's validator names
// the rest of every argument), the caches' and out's shapes, context_lens a 1-D integer host
// tensor with one length per query row (`fake`: a fake kernel's call, whose host tensors are on
// the meta device and whose sizes may be symbolic).
void check_args(const char* op, c10::ArrayRef<c10::IValue> in, bool fake = false) {
  const at::Tensor& q = in[kQuery].toTensor();
  const at::Tensor& out = in[kOut].toTensor();
  TORCH_CHECK_VALUE(q.dim() == 3, "[", op,
                    "] query must be [num_tokens, num_heads, head_size], got ", q.sym_sizes());
  for (const auto& [i, name] : {std::pair{kKeyCache, "key_cache"}, {kValueCache, "value_cache"}}) {
    const at::Tensor& c = in[i].toTensor();
    TORCH_CHECK_VALUE(c.dim() == 4, "[", op, "] ", name,
                      " must be [num_blocks, block_size, num_kv_heads, head_size], got ",
                      c.sym_sizes());
  }
  const at::Tensor& kc = in[kKeyCache].toTensor();
  const at::Tensor& vc = in[kValueCache].toTensor();
  TORCH_CHECK_VALUE(vc.sym_sizes() == kc.sym_sizes(), "[", op, "] value_cache shape ",
                    vc.sym_sizes(), " must equal key_cache shape ", kc.sym_sizes());
  TORCH_CHECK_VALUE(out.sym_sizes() == q.sym_sizes() && out.scalar_type() == q.scalar_type(), "[",
                    op, "] out must have the query's shape ", q.sym_sizes(), " and dtype ",
                    q.scalar_type(), ", got ", out.sym_sizes(), " ", out.scalar_type());
  const at::Tensor& lens = in[kContextLens].toTensor();
  TORCH_CHECK_VALUE(lens.dim() == 1 && (lens.device().is_cpu() || (fake && lens.is_meta())) &&
                        !lens.is_floating_point() && lens.scalar_type() != at::kBool &&
                        !lens.is_complex(),
                    "[", op,
                    "] context_lens must be a 1-D integer CPU tensor (ATB reads it on the "
                    "host), got a ",
                    lens.dim(), "-D ", lens.scalar_type(), " tensor on ", lens.device());
  TORCH_CHECK_VALUE(lens.sym_numel() == q.sym_size(0), "[", op,
                    "] context_lens must hold one length per query row (", q.sym_size(0), "), got ",
                    lens.sym_numel());
}

// v with a dim of extent 1 inserted at `at` (its stride never stepped).
TensorView unit_dim(TensorView v, int at) {
  for (int i = v.rank; i > at; --i) {
    v.shape[i] = v.shape[i - 1];
    v.strides[i] = v.strides[i - 1];
  }
  v.shape[at] = 1;
  v.strides[at] = at + 1 < v.rank + 1 ? v.strides[at + 1] * v.shape[at + 1] : 1;
  ++v.rank;
  return v;
}

// [num_blocks, block_size, KV_N, D] as [num_blocks, KV_N, block_size, D].
TensorView heads_first(TensorView v) {
  std::swap(v.shape[1], v.shape[2]);
  std::swap(v.strides[1], v.strides[2]);
  return v;
}

// The IFA call of the arguments; `lengths` its actual_seq_lengths.
IfaArgs ifa_args(const char* op, c10::ArrayRef<c10::IValue> in, std::vector<int64_t> lengths) {
  IfaArgs a;
  a.query = unit_dim(view_of(in[kQuery].toTensor(), op, "query"), 2);
  a.key = {heads_first(view_of(in[kKeyCache].toTensor(), op, "key_cache"))};
  a.value = {heads_first(view_of(in[kValueCache].toTensor(), op, "value_cache"))};
  a.block_table = view_of(in[kBlockTable].toTensor(), op, "block_table");
  a.actual_seq_lengths = std::move(lengths);
  a.num_heads = in[kNumHeads].toInt();
  a.num_key_value_heads = in[kNumKvHeads].toInt();
  a.scale_value = in[kScale].toDouble();
  a.input_layout = "BNSD";
  a.block_size = in[kKeyCache].toTensor().size(1);
  a.blocks_may_repeat = true;  // vLLM's prefix caching shares blocks between sequences
  a.attention_out = unit_dim(view_of(in[kOut].toTensor(), op, "out"), 2);
  return a;
}

std::vector<int64_t> context_lens(c10::ArrayRef<c10::IValue> in) {
  const at::Tensor lens = in[kContextLens].toTensor().to(at::kLong);
  return std::vector<int64_t>(lens.data_ptr<int64_t>(), lens.data_ptr<int64_t>() + lens.numel());
}

// Every batch's table row full: the longest lengths the table can hold.
std::vector<int64_t> table_capacity(c10::ArrayRef<c10::IValue> in) {
  const at::Tensor& table = in[kBlockTable].toTensor();
  const at::Tensor& cache = in[kKeyCache].toTensor();
  const int64_t rows = table.dim() == 2 ? table.size(0) : 0;
  const int64_t cap = table.dim() == 2 ? table.size(1) * cache.size(1) : 0;
  return std::vector<int64_t>(static_cast<size_t>(std::max<int64_t>(rows, 0)), cap);
}

// The workspace of the table's capacity, as a uint8 tensor on the query's device (zeros: its
// contents mean nothing, and zeros make every call's result the same).
at::Tensor max_workspace(const char* op, c10::ArrayRef<c10::IValue> in) {
  const IfaArgs a = ifa_args(op, in, table_capacity(in));
  return at::zeros({static_cast<int64_t>(cache().get(a)->workspace_size())},
                   in[kQuery].toTensor().options().dtype(at::kByte));
}

// t's metadata with each symbolic size and stride guarded to its value: the workspace is a
// function of the shapes, so a graph asking for it specialises on them.
at::Tensor concrete(const at::Tensor& t) {
  std::vector<int64_t> sizes, strides;
  for (const c10::SymInt& d : t.sym_sizes()) sizes.push_back(d.guard_int(__FILE__, __LINE__));
  for (const c10::SymInt& d : t.sym_strides()) strides.push_back(d.guard_int(__FILE__, __LINE__));
  return at::empty_strided(sizes, strides, t.options().device(at::kMeta));
}

}  // namespace

template <bool kWorkspace>
void paged_attention_cpu(const c10::OperatorHandle& op, c10::DispatchKeySet,
                         torch::jit::Stack* stack) {
  const char* name = op_name(op);
  const size_t n = op.schema().arguments().size();
  const auto in = arguments(*stack, n);
  in_schema_names(names_of(name), [&] {
    check_args(name, in);
    if constexpr (kWorkspace) {
      finish(stack, n, max_workspace(name, in));
    } else {
      IfaArgs a = ifa_args(name, in, context_lens(in));
      const c10::IValue& ws = in[kWorkspace];
      run_plan(*cache().get(a), a, in[kQuery].toTensor(),
               ws.isTensor() ? ws.toTensor() : at::Tensor());
      finish(stack, n);
    }
  });
}

template <bool kWorkspace>
void paged_attention_meta(const c10::OperatorHandle& op, c10::DispatchKeySet,
                          torch::jit::Stack* stack) {
  const char* name = op_name(op);
  const size_t n = op.schema().arguments().size();
  const auto in = arguments(*stack, n);
  in_schema_names(names_of(name), [&] { check_args(name, in, true); });
  const at::Tensor& q = in[kQuery].toTensor();
  for (size_t i = 1; i < n; ++i) {
    if (!in[i].isTensor() || !in[i].toTensor().defined() || i == kContextLens) continue;
    TORCH_CHECK_VALUE(in[i].toTensor().device() == q.device(), "[", name, "] ",
                      op.schema().arguments()[i].name(), " is on ", in[i].toTensor().device(),
                      " but query is on ", q.device(), ": every tensor must be on one device");
  }
  if constexpr (kWorkspace) {
    const MetaViews meta;  // the plan is made from the fake tensors' metadata
    std::vector<c10::IValue> args(in.begin(), in.end());
    for (c10::IValue& a : args)
      if (a.isTensor() && a.toTensor().defined()) a = concrete(a.toTensor());
    const at::Tensor ws =
        in_schema_names(names_of(name), [&] { return max_workspace(name, args); });
    finish(stack, n, at::empty(ws.sizes(), q.options().dtype(at::kByte)));
  } else {
    finish(stack, n);
  }
}

template void paged_attention_cpu<false>(const c10::OperatorHandle&, c10::DispatchKeySet,
                                         torch::jit::Stack*);
template void paged_attention_cpu<true>(const c10::OperatorHandle&, c10::DispatchKeySet,
                                        torch::jit::Stack*);
template void paged_attention_meta<false>(const c10::OperatorHandle&, c10::DispatchKeySet,
                                          torch::jit::Stack*);
template void paged_attention_meta<true>(const c10::OperatorHandle&, c10::DispatchKeySet,
                                         torch::jit::Stack*);

std::tuple<int64_t, int64_t, int64_t> paged_attention_plan_cache_stats() { return cache().stats(); }
void clear_paged_attention_plan_cache() { cache().clear(); }

}  // namespace kvflash::torch_ext
