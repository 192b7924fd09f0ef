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
template <void (*kernel)(const c10::OperatorHandle&, c10::DispatchKeySet, torch::jit::Stack*)>
torch::CppFunction boxed() {
  return torch::CppFunction::makeFromBoxedFunction<kernel>();
}

// PFA and FIA's operators (fia_op.cpp), registered for CPU, CUDA, Meta and Autograd below.
struct FiaRegistration {
  const char* name;
  torch::CppFunction (*cpu)();
  torch::CppFunction (*meta)();
};
template <kvflash::torch_ext::FiaOp kOp, kvflash::torch_ext::FiaForm kForm>
constexpr FiaRegistration fia_registration(const char* name) {
  return {name, &boxed<&kvflash::torch_ext::fia_cpu<kOp, kForm>>,
          &boxed<&kvflash::torch_ext::fia_meta<kOp, kForm>>};
}
using kvflash::torch_ext::FiaForm;
using kvflash::torch_ext::FiaOp;
constexpr FiaRegistration kFiaOps[] = {
    fia_registration<FiaOp::kPfa, FiaForm::kFunctional>("npu_prompt_flash_attention"),
    fia_registration<FiaOp::kFia, FiaForm::kFunctional>("npu_fused_infer_attention_score"),
    fia_registration<FiaOp::kFia, FiaForm::kOut>("npu_fused_infer_attention_score.out"),
    fia_registration<FiaOp::kFia, FiaForm::kWorkspace>(
        "_npu_fused_infer_attention_score_get_max_workspace"),
    fia_registration<FiaOp::kFiaV2, FiaForm::kFunctional>("npu_fused_infer_attention_score_v2"),
    fia_registration<FiaOp::kFiaV2, FiaForm::kOut>("npu_fused_infer_attention_score_v2.out"),
    fia_registration<FiaOp::kFiaV2, FiaForm::kWorkspace>(
        "_npu_fused_infer_attention_score_v2_get_max_workspace"),
};
}  // namespace

TORCH_LIBRARY(kvflash, m) {
  using namespace kvflash::torch_ext;
  m.def(kIfaNpuSchema);
  m.def(kSfaNpuSchema);
  m.def(ifa_ext_schema().c_str());
  m.def(kMergeSchema);
  m.def(kLiNpuSchema);
  m.def(li_scores_schema().c_str());
  m.def(kPfaNpuSchema);
  m.def(kFiaNpuSchema);
  m.def(fia_out_schema(false).c_str());
  m.def(fia_workspace_schema(false).c_str());
  m.def(kFiaV2NpuSchema);
  m.def(fia_out_schema(true).c_str());
  m.def(fia_workspace_schema(true).c_str());
  m.def(kScatterPaKvCacheNpuSchema);
  m.def(kReshapeAndCacheNpuSchema);
  m.def(kPagedAttentionNpuSchema);
  m.def(kPagedAttentionWorkspaceNpuSchema);
  m.def(kFusionAttentionNpuSchema);
  m.def(kAttentionUpdateNpuSchema);
  m.def("_fia_plan_cache_info() -> int[]", &fia_plan_cache_info);
  m.def("_vllm_plan_cache_info() -> int[]", &vllm_plan_cache_info);
  m.def("_plan_cache_info() -> int[]", &plan_cache_info);
  m.def("_clear_plan_cache() -> ()", &clear_plan_cache);
  m.def("_num_threads() -> int", &num_threads);
  m.def("_set_thread_pool(str pool) -> ()", &set_pool);
  m.def("_thread_pool() -> str", &thread_pool);
}

TORCH_LIBRARY_IMPL(kvflash, CPU, m) {
  using namespace kvflash::torch_ext;
  m.impl("npu_incre_flash_attention", boxed<&ifa_cpu<false>>());
  m.impl("npu_sparse_flash_attention", boxed<&sfa_cpu>());
  m.impl("incre_flash_attention", boxed<&ifa_cpu<true>>());
  m.impl("merge_attention_states", boxed<&merge_cpu>());
  m.impl("npu_lightning_indexer", boxed<&li_cpu<false>>());
  m.impl("lightning_indexer_scores", boxed<&li_cpu<true>>());
  for (const FiaRegistration& r : kFiaOps) m.impl(r.name, r.cpu());
  m.impl("npu_scatter_pa_kv_cache", boxed<&kv_cache_cpu<false>>());
  m.impl("_npu_reshape_and_cache", boxed<&kv_cache_cpu<true>>());
  m.impl("_npu_paged_attention", boxed<&paged_attention_cpu<false>>());
  m.impl("_npu_paged_attention_get_workspace", boxed<&paged_attention_cpu<true>>());
  m.impl("npu_fusion_attention", boxed<&fa_cpu>());
  m.impl("npu_attention_update", boxed<&attention_update_cpu>());
}

// CUDA tensors run the same functions (they are device-generic: outputs and workspace are made
// with the query's options, the run is queued on torch's current stream, no host synchronisation).
// Registered whatever torch or kvflash was built with: without a CUDA backend in libkvflash the
// plan is refused with 361001 ("no backend runs on ..."), a clear error instead of a missing
// kernel.
TORCH_LIBRARY_IMPL(kvflash, CUDA, m) {
  using namespace kvflash::torch_ext;
  m.impl("npu_incre_flash_attention", boxed<&ifa_cpu<false>>());
  m.impl("npu_sparse_flash_attention", boxed<&sfa_cpu>());
  m.impl("incre_flash_attention", boxed<&ifa_cpu<true>>());
  for (const FiaRegistration& r : kFiaOps) m.impl(r.name, r.cpu());
  m.impl("npu_scatter_pa_kv_cache", boxed<&kv_cache_cpu<false>>());
  m.impl("_npu_reshape_and_cache", boxed<&kv_cache_cpu<true>>());
  m.impl("_npu_paged_attention", boxed<&paged_attention_cpu<false>>());
  m.impl("_npu_paged_attention_get_workspace", boxed<&paged_attention_cpu<true>>());
  m.impl("npu_fusion_attention", boxed<&fa_cpu>());
  m.impl("npu_attention_update", boxed<&attention_update_cpu>());
}

// npu_attention_update's arguments are two lists: called with both empty there is no tensor to
// dispatch on, and this kernel names them (instead of the dispatcher's NotImplementedError).
TORCH_LIBRARY_IMPL(kvflash, CompositeExplicitAutograd, m) {
  m.impl("npu_attention_update", boxed<&kvflash::torch_ext::attention_update_no_kernel>());
}

TORCH_LIBRARY_IMPL(kvflash, Autograd, m) {
  using namespace kvflash::torch_ext;
  for (const char* op :
       {"npu_incre_flash_attention", "npu_sparse_flash_attention", "incre_flash_attention",
        "merge_attention_states", "npu_lightning_indexer", "lightning_indexer_scores"})
    m.impl(op, boxed<&not_differentiable>());
  for (const FiaRegistration& r : kFiaOps) m.impl(r.name, boxed<&not_differentiable>());
  for (const char* op : {"npu_scatter_pa_kv_cache", "_npu_reshape_and_cache",
                         "_npu_paged_attention", "_npu_paged_attention_get_workspace",
                         "npu_fusion_attention", "npu_attention_update"})
    m.impl(op, boxed<&not_differentiable>());
}

TORCH_LIBRARY_IMPL(kvflash, Meta, m) {
  using namespace kvflash::torch_ext;
  m.impl("npu_incre_flash_attention", boxed<&ifa_meta<false>>());
  m.impl("npu_sparse_flash_attention", boxed<&sfa_meta>());
  m.impl("incre_flash_attention", boxed<&ifa_meta<true>>());
  m.impl("merge_attention_states", boxed<&merge_meta>());
  m.impl("npu_lightning_indexer", boxed<&li_meta<false>>());
  m.impl("lightning_indexer_scores", boxed<&li_meta<true>>());
  for (const FiaRegistration& r : kFiaOps) m.impl(r.name, r.meta());
  m.impl("npu_scatter_pa_kv_cache", boxed<&kv_cache_meta<false>>());
  m.impl("_npu_reshape_and_cache", boxed<&kv_cache_meta<true>>());
  m.impl("_npu_paged_attention", boxed<&paged_attention_meta<false>>());
  m.impl("_npu_paged_attention_get_workspace", boxed<&paged_attention_meta<true>>());
  m.impl("npu_fusion_attention", boxed<&fa_meta>());
  m.impl("npu_attention_update", boxed<&attention_update_meta>());
}
