// The kernels of torch.ops.kvflash (registered in ops.cpp). Each is boxed: it reads its schema's
// arguments from the stack into the operator's Args through the field table (schema_args.hpp),
// so no kernel re-declares the arguments.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

#include <cstdint>
#include <tuple>
#include <vector>

namespace kvflash::torch_ext {

// ---- IFA (ifa_op.cpp): npu_incre_flash_attention (kExt false) and incre_flash_attention ----
template <bool kExt>
void ifa_cpu(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack);
template <bool kExt>
void ifa_meta(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack);

// ---- SFA (sfa_op.cpp): npu_sparse_flash_attention ----
void sfa_cpu(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack);
void sfa_meta(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack);

// ---- merge_attention_states (merge_op.cpp) ----
void merge_cpu(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack);
void merge_meta(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack);

// ---- the lightning indexer (li_op.cpp): npu_lightning_indexer (kScores false) and
// lightning_indexer_scores (true: the fp32 scores as the second output) ----
template <bool kScores>
void li_cpu(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack);
template <bool kScores>
void li_meta(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack);
std::tuple<int64_t, int64_t, int64_t> li_plan_cache_stats();
void clear_li_plan_cache();
// ---- PFA / FIA (fia_op.cpp): npu_prompt_flash_attention, npu_fused_infer_attention_score(_v2),
// their .out forms and _npu_fused_infer_attention_score(_v2)_get_max_workspace ----
enum class FiaOp { kPfa, kFia, kFiaV2 };
enum class FiaForm { kFunctional, kOut, kWorkspace };
template <FiaOp kOp, FiaForm kForm>
void fia_cpu(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack);
template <FiaOp kOp, FiaForm kForm>
void fia_meta(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack);
/// [PFA hits, misses, cached plans, FIA hits, misses, cached plans], and clearing both caches.
std::vector<int64_t> fia_plan_cache_info();
void clear_fia_plan_cache();

// ---- vllm-ascend's attention path: the cache writes (kv_cache_op.cpp: npu_scatter_pa_kv_cache,
// kAtb: _npu_reshape_and_cache), ATB's paged attention on IFA (paged_attention_op.cpp,
// kWorkspace: _npu_paged_attention_get_workspace), npu_fusion_attention (fa_op.cpp) and
// npu_attention_update (attention_update_op.cpp) ----
template <bool kAtb>
void kv_cache_cpu(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack);
template <bool kAtb>
void kv_cache_meta(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack);
template <bool kWorkspace>
void paged_attention_cpu(const c10::OperatorHandle& op, c10::DispatchKeySet,
                         torch::jit::Stack* stack);
template <bool kWorkspace>
void paged_attention_meta(const c10::OperatorHandle& op, c10::DispatchKeySet,
                          torch::jit::Stack* stack);
void fa_cpu(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack);
void fa_meta(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack);
void attention_update_cpu(const c10::OperatorHandle& op, c10::DispatchKeySet,
                          torch::jit::Stack* stack);
void attention_update_meta(const c10::OperatorHandle& op, c10::DispatchKeySet,
                           torch::jit::Stack* stack);
/// Their plan caches' (hits, misses, cached plans), and clearing them.
void attention_update_no_kernel(const c10::OperatorHandle& op, c10::DispatchKeySet,
                                torch::jit::Stack* stack);

std::tuple<int64_t, int64_t, int64_t> kv_cache_plan_cache_stats();
std::tuple<int64_t, int64_t, int64_t> paged_attention_plan_cache_stats();
std::tuple<int64_t, int64_t, int64_t> fa_plan_cache_stats();
std::tuple<int64_t, int64_t, int64_t> attention_update_plan_cache_stats();
void clear_kv_cache_plan_cache();
void clear_paged_attention_plan_cache();
void clear_fa_plan_cache();
void clear_attention_update_plan_cache();

/// Plan cache statistics (hits, misses, cached plans) of IFA and SFA, and clearing them.
std::tuple<int64_t, int64_t, int64_t> ifa_plan_cache_stats();
std::tuple<int64_t, int64_t, int64_t> sfa_plan_cache_stats();
void clear_ifa_plan_cache();
void clear_sfa_plan_cache();

}  // namespace kvflash::torch_ext
