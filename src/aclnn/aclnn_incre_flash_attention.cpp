// aclnnIncreFlashAttention{,V2,V3,V4}: argument conversion to kvflash::IfaArgs over IFA's field
// table (aclnn/acl_args.hpp), IfaPlan::create (which does all validation), and a single-use
// executor. Nothing is computed here.
//
// As upstream, every version funnels into the full V4 argument set: V1-V3 call V4, V1/V2 with
// pseShift nullptr whatever the caller gave ((void)pseShift upstream, so it is never even looked
// at), no antiquant / paging / padding, blockSize 0 and innerPrecise 1.
#include "aclnnop/aclnn_incre_flash_attention.h"

#include <tuple>

#include "aclnn/acl_args.hpp"
#include "aclnn/same_arguments.hpp"
#include "aclnnop/aclnn_incre_flash_attention_v2.h"
#include "aclnnop/aclnn_incre_flash_attention_v3.h"
#include "aclnnop/aclnn_incre_flash_attention_v4.h"
#include "core/error.hpp"
#include "kvflash/ifa.hpp"
#include "ops/ifa/ifa_error.hpp"
#include "ops/ifa/ifa_fields.hpp"

namespace kvflash::aclnn {
namespace {

constexpr const char* kOp = ifa::kIfaOp;

aclnnStatus aclnn_only(const IfaArgs& a) {
  return refuse_fp32_output(kOp, "attentionOut", a.attention_out, "the query dtype or int8");
}

// Phase 1 reuses the last plan for identical arguments (aclnn/acl_objects.hpp,
// plan_executor_reusing), which needs IfaPlan::create to be a function of its arguments alone.
// It is: validate_ifa and its parts (ops/ifa/ifa_validate*.cpp) read only the arguments; the
// workspace is the largest any entry of the device needs (core::plan_workspace over the entries'
// workspace_size of the problem, whatever the ISA cap; the CPU entries have no supports hook, and
// the CUDA entry's, cuda::ifa_cuda_supports, reads only the problem);
// device_memory_bytes is fixed per process; strip_data copies. The table covers every member of
// IfaArgs but num_threads (ifa_fields.hpp), which phase 1 leaves at 0; it is compared anyway.
bool same_call(const IfaArgs& a, const IfaArgs& b) {
  return same_arguments<ifa::kFields>(a, b) && a.num_threads == b.num_threads;
}

}  // namespace
}  // namespace kvflash::aclnn

extern "C" {

aclnnStatus aclnnIncreFlashAttentionGetWorkspaceSize(
    const aclTensor* query, const aclTensorList* key, const aclTensorList* value,
    const aclTensor* pseShift, const aclTensor* attenMask, const aclIntArray* actualSeqLengths,
    int64_t numHeads, double scaleValue, char* inputLayout, int64_t numKeyValueHeads,
    const aclTensor* attentionOut, uint64_t* workspaceSize, aclOpExecutor** executor) {
  (void)pseShift;  // V1 ignores pseShift, as upstream
  return aclnnIncreFlashAttentionV4GetWorkspaceSize(
      query, key, value, /*pseShift=*/nullptr, attenMask, actualSeqLengths,
      /*dequantScale1=*/nullptr, /*quantScale1=*/nullptr, /*dequantScale2=*/nullptr,
      /*quantScale2=*/nullptr, /*quantOffset2=*/nullptr, /*antiquantScale=*/nullptr,
      /*antiquantOffset=*/nullptr, /*blocktable=*/nullptr, /*kvPaddingSize=*/nullptr, numHeads,
      scaleValue, inputLayout, numKeyValueHeads, /*blockSize=*/0, /*innerPrecise=*/1, attentionOut,
      workspaceSize, executor);
}

aclnnStatus aclnnIncreFlashAttention(void* workspace, uint64_t workspaceSize,
                                     aclOpExecutor* executor, const aclrtStream stream) {
  return kvflash::aclnn::plan_phase2(kvflash::aclnn::kOp, workspace, workspaceSize, executor,
                                     stream);
}

aclnnStatus aclnnIncreFlashAttentionV2GetWorkspaceSize(
    const aclTensor* query, const aclTensorList* key, const aclTensorList* value,
    const aclTensor* pseShift, const aclTensor* attenMask, const aclIntArray* actualSeqLengths,
    const aclTensor* dequantScale1, const aclTensor* quantScale1, const aclTensor* dequantScale2,
    const aclTensor* quantScale2, const aclTensor* quantOffset2, int64_t numHeads,
    double scaleValue, char* inputLayout, int64_t numKeyValueHeads, const aclTensor* attentionOut,
    uint64_t* workspaceSize, aclOpExecutor** executor) {
  (void)pseShift;  // V2 ignores pseShift, as upstream
  return aclnnIncreFlashAttentionV4GetWorkspaceSize(
      query, key, value, /*pseShift=*/nullptr, attenMask, actualSeqLengths, dequantScale1,
      quantScale1, dequantScale2, quantScale2, quantOffset2, /*antiquantScale=*/nullptr,
      /*antiquantOffset=*/nullptr, /*blocktable=*/nullptr, /*kvPaddingSize=*/nullptr, numHeads,
      scaleValue, inputLayout, numKeyValueHeads, /*blockSize=*/0, /*innerPrecise=*/1, attentionOut,
      workspaceSize, executor);
}

aclnnStatus aclnnIncreFlashAttentionV2(void* workspace, uint64_t workspaceSize,
                                       aclOpExecutor* executor, const aclrtStream stream) {
  return kvflash::aclnn::plan_phase2(kvflash::aclnn::kOp, workspace, workspaceSize, executor,
                                     stream);
}

aclnnStatus aclnnIncreFlashAttentionV3GetWorkspaceSize(
    const aclTensor* query, const aclTensorList* key, const aclTensorList* value,
    const aclTensor* pseShift, const aclTensor* attenMask, const aclIntArray* actualSeqLengths,
    const aclTensor* dequantScale1, const aclTensor* quantScale1, const aclTensor* dequantScale2,
    const aclTensor* quantScale2, const aclTensor* quantOffset2, const aclTensor* antiquantScale,
    const aclTensor* antiquantOffset, const aclTensor* blocktable, int64_t numHeads,
    double scaleValue, char* inputLayout, int64_t numKeyValueHeads, int64_t blockSize,
    int64_t innerPrecise, const aclTensor* attentionOut, uint64_t* workspaceSize,
    aclOpExecutor** executor) {
  return aclnnIncreFlashAttentionV4GetWorkspaceSize(
      query, key, value, pseShift, attenMask, actualSeqLengths, dequantScale1, quantScale1,
      dequantScale2, quantScale2, quantOffset2, antiquantScale, antiquantOffset, blocktable,
      /*kvPaddingSize=*/nullptr, numHeads, scaleValue, inputLayout, numKeyValueHeads, blockSize,
      innerPrecise, attentionOut, workspaceSize, executor);
}

aclnnStatus aclnnIncreFlashAttentionV3(void* workspace, uint64_t workspaceSize,
                                       aclOpExecutor* executor, const aclrtStream stream) {
  return kvflash::aclnn::plan_phase2(kvflash::aclnn::kOp, workspace, workspaceSize, executor,
                                     stream);
}

aclnnStatus aclnnIncreFlashAttentionV4GetWorkspaceSize(
    const aclTensor* query, const aclTensorList* key, const aclTensorList* value,
    const aclTensor* pseShift, const aclTensor* attenMask, const aclIntArray* actualSeqLengths,
    const aclTensor* dequantScale1, const aclTensor* quantScale1, const aclTensor* dequantScale2,
    const aclTensor* quantScale2, const aclTensor* quantOffset2, const aclTensor* antiquantScale,
    const aclTensor* antiquantOffset, const aclTensor* blocktable, const aclTensor* kvPaddingSize,
    int64_t numHeads, double scaleValue, char* inputLayout, int64_t numKeyValueHeads,
    int64_t blockSize, int64_t innerPrecise, const aclTensor* attentionOut, uint64_t* workspaceSize,
    aclOpExecutor** executor) {
  using namespace kvflash;
  return aclnn::plan_phase1<IfaPlan, ifa::kFields, aclnn::same_call>(
      aclnn::kOp,
      std::tuple(query, key, value, pseShift, attenMask, actualSeqLengths, dequantScale1,
                 quantScale1, dequantScale2, quantScale2, quantOffset2, antiquantScale,
                 antiquantOffset, blocktable, kvPaddingSize, numHeads, scaleValue, inputLayout,
                 numKeyValueHeads, blockSize, innerPrecise, attentionOut),
      aclnn::aclnn_only, workspaceSize, executor);
}

aclnnStatus aclnnIncreFlashAttentionV4(void* workspace, uint64_t workspaceSize,
                                       aclOpExecutor* executor, const aclrtStream stream) {
  return kvflash::aclnn::plan_phase2(kvflash::aclnn::kOp, workspace, workspaceSize, executor,
                                     stream);
}

}  // extern "C"
