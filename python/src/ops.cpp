// torch.ops.kvflash: the operator schemas and their kernels (CPU and CUDA: the library; Meta: the
// shapes, which FakeTensor uses for torch.compile and torch.export; Autograd: outputs whose
// backward raises "not differentiable"), plus private helpers: the plan caches, the thread pool
// switch (threads.cpp) and the thread count of a call.
#include "ops.hpp"

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/basic_ops.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/library.h>

#include <string>
#include <vector>

#include "kvflash/status.hpp"
#include "schemas.hpp"
#include "threads.hpp"
#include "views.hpp"

namespace kvflash::torch_ext {
namespace {

// [IFA hits, misses, cached plans, SFA hits, misses, cached plans].
std::vector<int64_t> plan_cache_info() {
  const auto [ih, im, is] = ifa_plan_cache_stats();
  const auto [sh, sm, ss] = sfa_plan_cache_stats();
  return {ih, im, is, sh, sm, ss};
}

void clear_plan_cache() {
  clear_ifa_plan_cache();
  clear_sfa_plan_cache();
  clear_li_plan_cache();
  clear_fia_plan_cache();
  clear_kv_cache_plan_cache();
  clear_paged_attention_plan_cache();
  clear_fa_plan_cache();
  clear_attention_update_plan_cache();
}

// [hits, misses, cached plans] of npu_scatter_pa_kv_cache / _npu_reshape_and_cache,
// _npu_paged_attention, npu_fusion_attention and npu_attention_update, in that order.
std::vector<int64_t> vllm_plan_cache_info() {
  std::vector<int64_t> v;
  for (const auto& [h, m, s] : {kv_cache_plan_cache_stats(), paged_attention_plan_cache_stats(),
                                fa_plan_cache_stats(), attention_update_plan_cache_stats()})
    v.insert(v.end(), {h, m, s});
  return v;
}

// The thread count an operator call made now would use (views.hpp).
int64_t num_threads() { return call_num_threads(); }

void set_pool(std::string name) { set_thread_pool(name); }

// The Autograd kernel of every operator: kvflash computes the forward pass only. Without one,
// torch runs the CPU kernel, warns that "an autograd kernel was not registered" and returns
// outputs that do not require grad, so a backward leaves q.grad None. This runs the operator below
// autograd and, when grad mode is on and an input requires grad, gives the floating-point outputs
// a grad_fn (torch::autograd::Error) that raises on backward, naming the operator.
void not_differentiable(const c10::OperatorHandle& op, c10::DispatchKeySet keys,
                        torch::jit::Stack* stack) {
  const c10::FunctionSchema& schema = op.schema();
  std::vector<at::Tensor> need_grad;
  if (at::GradMode::is_enabled()) {
    const auto note = [&](const at::Tensor& t) {
      if (t.defined() && t.requires_grad()) need_grad.push_back(t);
    };
    for (const c10::IValue& v : torch::jit::last(*stack, schema.arguments().size())) {
      if (v.isTensor()) {
        note(v.toTensor());
      } else if (v.isTensorList()) {
        for (const at::Tensor& t : v.toTensorList()) note(t);
      }
    }
  }
  {
    at::AutoDispatchBelowADInplaceOrView guard;
    op.redispatchBoxed(keys & c10::after_ADInplaceOrView_keyset, stack);
  }
  if (need_grad.empty()) return;
  auto node = c10::make_intrusive<torch::autograd::Error>(
      schema.operator_name().name +
          " is not differentiable: kvflash implements the forward pass only (inference); call it "
          "under torch.no_grad() or torch.inference_mode(), or on detached tensors",
      torch::autograd::collect_next_edges(need_grad));
  for (const c10::IValue& v : torch::jit::last(*stack, schema.returns().size())) {
    if (!v.isTensor()) continue;
    const at::Tensor& t = v.toTensor();
    if (t.defined() && torch::autograd::isDifferentiableType(t.scalar_type()))
      torch::autograd::set_history(t, node);
  }
}

}  // namespace
}  // namespace kvflash::torch_ext

namespace {
using Kernel = void (*)(const c10::OperatorHandle&, c10::DispatchKeySet, torch::jit::Stack*);
template <Kernel kernel>
torch::CppFunction boxed() {
  return torch::CppFunction::makeFromBoxedFunction<kernel>();
}

// One operator of torch.ops.kvflash: its schema, the name it is registered under (with the
// overload: "npu_fused_infer_attention_score.out"), its CPU and Meta kernels, and whether the CPU
// kernel serves CUDA tensors too. Every operator gets the Autograd kernel not_differentiable.
struct Registration {
  std::string (*schema)();
  const char* name;
  torch::CppFunction (*cpu)();
  torch::CppFunction (*meta)();
  bool cuda;
};
template <Kernel kCpu, Kernel kMeta>
constexpr Registration registration(std::string (*schema)(), const char* name, bool cuda = true) {
  return {schema, name, &boxed<kCpu>, &boxed<kMeta>, cuda};
}

using namespace kvflash::torch_ext;
// The schemas that are constants (schemas.hpp), as functions of the table's type.
template <const char* const* kSchema>
std::string constant() {
  return *kSchema;
}

// Every operator, in registration order. The lightning indexer and the merge have no CUDA entry in
// the library: their ops are not registered for CUDA (the dispatcher names the missing kernel).
const Registration kOps[] = {
    registration<&ifa_cpu<false>, &ifa_meta<false>>(constant<&kIfaNpuSchema>,
                                                    "npu_incre_flash_attention"),
    registration<&sfa_cpu, &sfa_meta>(constant<&kSfaNpuSchema>, "npu_sparse_flash_attention"),
    registration<&ifa_cpu<true>, &ifa_meta<true>>(ifa_ext_schema, "incre_flash_attention"),
    registration<&merge_cpu, &merge_meta>(constant<&kMergeSchema>, "merge_attention_states", false),
    registration<&li_cpu<false>, &li_meta<false>>(constant<&kLiNpuSchema>, "npu_lightning_indexer",
                                                  false),
    registration<&li_cpu<true>, &li_meta<true>>(li_scores_schema, "lightning_indexer_scores",
                                                false),
    registration<&fia_cpu<FiaOp::kPfa, FiaForm::kFunctional>,
                 &fia_meta<FiaOp::kPfa, FiaForm::kFunctional>>(constant<&kPfaNpuSchema>,
                                                               "npu_prompt_flash_attention"),
    registration<&fia_cpu<FiaOp::kFia, FiaForm::kFunctional>,
                 &fia_meta<FiaOp::kFia, FiaForm::kFunctional>>(constant<&kFiaNpuSchema>,
                                                               "npu_fused_infer_attention_score"),
    registration<&fia_cpu<FiaOp::kFia, FiaForm::kOut>, &fia_meta<FiaOp::kFia, FiaForm::kOut>>(
        [] { return fia_out_schema(false); }, "npu_fused_infer_attention_score.out"),
    registration<&fia_cpu<FiaOp::kFia, FiaForm::kWorkspace>,
                 &fia_meta<FiaOp::kFia, FiaForm::kWorkspace>>(
        [] { return fia_workspace_schema(false); },
        "_npu_fused_infer_attention_score_get_max_workspace"),
    registration<&fia_cpu<FiaOp::kFiaV2, FiaForm::kFunctional>,
                 &fia_meta<FiaOp::kFiaV2, FiaForm::kFunctional>>(
        constant<&kFiaV2NpuSchema>, "npu_fused_infer_attention_score_v2"),
    registration<&fia_cpu<FiaOp::kFiaV2, FiaForm::kOut>, &fia_meta<FiaOp::kFiaV2, FiaForm::kOut>>(
        [] { return fia_out_schema(true); }, "npu_fused_infer_attention_score_v2.out"),
    registration<&fia_cpu<FiaOp::kFiaV2, FiaForm::kWorkspace>,
                 &fia_meta<FiaOp::kFiaV2, FiaForm::kWorkspace>>(
        [] { return fia_workspace_schema(true); },
        "_npu_fused_infer_attention_score_v2_get_max_workspace"),
    registration<&kv_cache_cpu<false>, &kv_cache_meta<false>>(constant<&kScatterPaKvCacheNpuSchema>,
                                                              "npu_scatter_pa_kv_cache"),
    registration<&kv_cache_cpu<true>, &kv_cache_meta<true>>(constant<&kReshapeAndCacheNpuSchema>,
                                                            "_npu_reshape_and_cache"),
    registration<&paged_attention_cpu<false>, &paged_attention_meta<false>>(
        constant<&kPagedAttentionNpuSchema>, "_npu_paged_attention"),
    registration<&paged_attention_cpu<true>, &paged_attention_meta<true>>(
        constant<&kPagedAttentionWorkspaceNpuSchema>, "_npu_paged_attention_get_workspace"),
    registration<&fa_cpu, &fa_meta>(constant<&kFusionAttentionNpuSchema>, "npu_fusion_attention"),
    registration<&attention_update_cpu, &attention_update_meta>(
        constant<&kAttentionUpdateNpuSchema>, "npu_attention_update"),
};
}  // namespace

TORCH_LIBRARY(kvflash, m) {
  using namespace kvflash::torch_ext;
  for (const Registration& r : kOps) m.def(r.schema().c_str());
  m.def("_fia_plan_cache_info() -> int[]", &fia_plan_cache_info);
  m.def("_vllm_plan_cache_info() -> int[]", &vllm_plan_cache_info);
  m.def("_plan_cache_info() -> int[]", &plan_cache_info);
  m.def("_clear_plan_cache() -> ()", &clear_plan_cache);
  m.def("_num_threads() -> int", &num_threads);
  m.def("_set_thread_pool(str pool) -> ()", &set_pool);
  m.def("_thread_pool() -> str", &thread_pool);
}

TORCH_LIBRARY_IMPL(kvflash, CPU, m) {
  for (const Registration& r : kOps) m.impl(r.name, r.cpu());
}

// CUDA tensors run the same functions (they are device-generic: outputs and workspace are made
// with the query's options, the run is queued on torch's current stream, no host synchronisation).
// Registered whatever torch or kvflash was built with: without a CUDA backend in libkvflash the
// plan is refused with 361001 ("no backend runs on ..."), a clear error instead of a missing
// kernel.
TORCH_LIBRARY_IMPL(kvflash, CUDA, m) {
  for (const Registration& r : kOps) {
    if (r.cuda) m.impl(r.name, r.cpu());
  }
}

// npu_attention_update's arguments are two lists: called with both empty there is no tensor to
// dispatch on, and this kernel names them (instead of the dispatcher's NotImplementedError).
TORCH_LIBRARY_IMPL(kvflash, CompositeExplicitAutograd, m) {
  m.impl("npu_attention_update", boxed<&kvflash::torch_ext::attention_update_no_kernel>());
}

TORCH_LIBRARY_IMPL(kvflash, Autograd, m) {
  for (const Registration& r : kOps) m.impl(r.name, boxed<&not_differentiable>());
}

TORCH_LIBRARY_IMPL(kvflash, Meta, m) {
  for (const Registration& r : kOps) m.impl(r.name, r.meta());
}
