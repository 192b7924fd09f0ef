// aclnnIncreFlashAttention{,V2,V3,V4}: argument conversion to kvflash::IfaArgs, IfaPlan::create
// (which does all validation), and a single-use executor. Nothing is computed here.
//
// As upstream, every version funnels into one internal entry with the full V4 argument set:
// V1/V2 pass pseShift as nullptr whatever the caller gave ((void)pseShift upstream, so it is never
// even looked at), no antiquant / paging / padding, blockSize 0 and innerPrecise 1.
#include "aclnnop/aclnn_incre_flash_attention.h"

#include <memory>
#include <new>
#include <string>
#include <utility>

#include "aclnn/acl_objects.hpp"
#include "aclnnop/aclnn_incre_flash_attention_v2.h"
#include "aclnnop/aclnn_incre_flash_attention_v3.h"
#include "aclnnop/aclnn_incre_flash_attention_v4.h"
#include "core/error.hpp"
#include "kvflash/ifa.hpp"

namespace kvflash::aclnn {
namespace {

constexpr const char* kOp = "incre_flash_attention";  // the name IfaPlan uses in its messages

struct IfaCall {
  const aclTensor* query = nullptr;
  const aclTensorList* key = nullptr;
  const aclTensorList* value = nullptr;
  const aclTensor* pse_shift = nullptr;
  const aclTensor* atten_mask = nullptr;
  const aclIntArray* actual_seq_lengths = nullptr;
  const aclTensor* dequant_scale1 = nullptr;
  const aclTensor* quant_scale1 = nullptr;
  const aclTensor* dequant_scale2 = nullptr;
  const aclTensor* quant_scale2 = nullptr;
  const aclTensor* quant_offset2 = nullptr;
  const aclTensor* antiquant_scale = nullptr;
  const aclTensor* antiquant_offset = nullptr;
  const aclTensor* block_table = nullptr;
  const aclTensor* kv_padding_size = nullptr;
  int64_t num_heads = 1;
  double scale_value = 1.0;
  const char* input_layout = nullptr;
  int64_t num_key_value_heads = 0;
  int64_t block_size = 0;
  int64_t inner_precise = 1;
  const aclTensor* attention_out = nullptr;
};

Status convert(const IfaCall& c, IfaArgs* a) {
  KVFLASH_RETURN_IF_ERROR(tensor_view(kOp, "query", c.query, &a->query));
  KVFLASH_RETURN_IF_ERROR(tensor_list_views(kOp, "key", c.key, &a->key));
  KVFLASH_RETURN_IF_ERROR(tensor_list_views(kOp, "value", c.value, &a->value));
  KVFLASH_RETURN_IF_ERROR(optional_view(kOp, "pseShift", c.pse_shift, &a->pse_shift));
  KVFLASH_RETURN_IF_ERROR(optional_view(kOp, "attenMask", c.atten_mask, &a->atten_mask));
  KVFLASH_RETURN_IF_ERROR(
      optional_int_array(kOp, "actualSeqLengths", c.actual_seq_lengths, &a->actual_seq_lengths));
  KVFLASH_RETURN_IF_ERROR(
      optional_view(kOp, "dequantScale1", c.dequant_scale1, &a->dequant_scale1));
  KVFLASH_RETURN_IF_ERROR(optional_view(kOp, "quantScale1", c.quant_scale1, &a->quant_scale1));
  KVFLASH_RETURN_IF_ERROR(
      optional_view(kOp, "dequantScale2", c.dequant_scale2, &a->dequant_scale2));
  KVFLASH_RETURN_IF_ERROR(optional_view(kOp, "quantScale2", c.quant_scale2, &a->quant_scale2));
  KVFLASH_RETURN_IF_ERROR(optional_view(kOp, "quantOffset2", c.quant_offset2, &a->quant_offset2));
  KVFLASH_RETURN_IF_ERROR(
      optional_view(kOp, "antiquantScale", c.antiquant_scale, &a->antiquant_scale));
  KVFLASH_RETURN_IF_ERROR(
      optional_view(kOp, "antiquantOffset", c.antiquant_offset, &a->antiquant_offset));
  KVFLASH_RETURN_IF_ERROR(optional_view(kOp, "blocktable", c.block_table, &a->block_table));
  KVFLASH_RETURN_IF_ERROR(
      optional_view(kOp, "kvPaddingSize", c.kv_padding_size, &a->kv_padding_size));
  KVFLASH_RETURN_IF_ERROR(tensor_view(kOp, "attentionOut", c.attention_out, &a->attention_out));
  // An fp32 output is an extension of kvflash's C++ API; aclnn keeps upstream's dtype table.
  if (a->attention_out.dtype == DType::kFloat32) {
    return core::fail(Status::kInvalid, kOp,
                      "attentionOut dtype fp32 is not supported; expected the query dtype or int8");
  }
  a->num_heads = c.num_heads;
  a->scale_value = c.scale_value;
  a->input_layout = c.input_layout;
  a->num_key_value_heads = c.num_key_value_heads;
  a->block_size = c.block_size;
  a->inner_precise = c.inner_precise;
  return Status::kSuccess;
}

aclnnStatus get_workspace_size(const IfaCall& c, uint64_t* workspace_size,
                               aclOpExecutor** executor) {
  core::clear_error();
  if (executor != nullptr) *executor = nullptr;
  // No exception leaves: an allocation failure anywhere (a message, the conversion, the plan) is
  // 361001 with *executor still null.
  return c_entry(kOp, static_cast<aclnnStatus>(ACLNN_ERR_RUNTIME_ERROR), [&]() -> aclnnStatus {
    if (workspace_size == nullptr) return null_arg(kOp, "workspaceSize");
    if (executor == nullptr) return null_arg(kOp, "executor");
    if (c.query == nullptr) return null_arg(kOp, "query");
    if (c.key == nullptr) return null_arg(kOp, "key");
    if (c.value == nullptr) return null_arg(kOp, "value");
    if (c.attention_out == nullptr) return null_arg(kOp, "attentionOut");
    if (c.input_layout == nullptr) return null_arg(kOp, "inputLayout");
    IfaArgs args;
    if (Status s = convert(c, &args); s != Status::kSuccess) return to_aclnn(s);
    return plan_executor<IfaPlan>(kOp, std::move(args), workspace_size, executor);
  });
}

aclnnStatus run(void* workspace, uint64_t workspace_size, aclOpExecutor* executor,
                aclrtStream stream) {
  // std::bad_alloc, or the std::system_error of a default stream whose thread cannot start: 361001,
  // and the executor stays usable (launch consumes it only once the work is queued).
  return c_entry(kOp, static_cast<aclnnStatus>(ACLNN_ERR_RUNTIME_ERROR), [&]() -> aclnnStatus {
    return launch(kOp, workspace, workspace_size, executor, stream);
  });
}

}  // namespace
}  // namespace kvflash::aclnn

using kvflash::aclnn::IfaCall;

extern "C" {

aclnnStatus aclnnIncreFlashAttentionGetWorkspaceSize(
    const aclTensor* query, const aclTensorList* key, const aclTensorList* value,
    const aclTensor* pseShift, const aclTensor* attenMask, const aclIntArray* actualSeqLengths,
    int64_t numHeads, double scaleValue, char* inputLayout, int64_t numKeyValueHeads,
    const aclTensor* attentionOut, uint64_t* workspaceSize, aclOpExecutor** executor) {
  (void)pseShift;  // V1 ignores pseShift, as upstream
  IfaCall c;
  c.query = query;
  c.key = key;
  c.value = value;
  c.atten_mask = attenMask;
  c.actual_seq_lengths = actualSeqLengths;
  c.num_heads = numHeads;
  c.scale_value = scaleValue;
  c.input_layout = inputLayout;
  c.num_key_value_heads = numKeyValueHeads;
  c.attention_out = attentionOut;
  return kvflash::aclnn::get_workspace_size(c, workspaceSize, executor);
}

aclnnStatus aclnnIncreFlashAttention(void* workspace, uint64_t workspaceSize,
                                     aclOpExecutor* executor, const aclrtStream stream) {
  return kvflash::aclnn::run(workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnIncreFlashAttentionV2GetWorkspaceSize(
    const aclTensor* query, const aclTensorList* key, const aclTensorList* value,
    const aclTensor* pseShift, const aclTensor* attenMask, const aclIntArray* actualSeqLengths,
    const aclTensor* dequantScale1, const aclTensor* quantScale1, const aclTensor* dequantScale2,
    const aclTensor* quantScale2, const aclTensor* quantOffset2, int64_t numHeads,
    double scaleValue, char* inputLayout, int64_t numKeyValueHeads, const aclTensor* attentionOut,
    uint64_t* workspaceSize, aclOpExecutor** executor) {
  (void)pseShift;  // V2 ignores pseShift, as upstream
  IfaCall c;
  c.query = query;
  c.key = key;
  c.value = value;
  c.atten_mask = attenMask;
  c.actual_seq_lengths = actualSeqLengths;
  c.dequant_scale1 = dequantScale1;
  c.quant_scale1 = quantScale1;
  c.dequant_scale2 = dequantScale2;
  c.quant_scale2 = quantScale2;
  c.quant_offset2 = quantOffset2;
  c.num_heads = numHeads;
  c.scale_value = scaleValue;
  c.input_layout = inputLayout;
  c.num_key_value_heads = numKeyValueHeads;
  c.attention_out = attentionOut;
  return kvflash::aclnn::get_workspace_size(c, workspaceSize, executor);
}

aclnnStatus aclnnIncreFlashAttentionV2(void* workspace, uint64_t workspaceSize,
                                       aclOpExecutor* executor, const aclrtStream stream) {
  return kvflash::aclnn::run(workspace, workspaceSize, executor, stream);
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
  return kvflash::aclnn::run(workspace, workspaceSize, executor, stream);
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
  IfaCall c;
  c.query = query;
  c.key = key;
  c.value = value;
  c.pse_shift = pseShift;
  c.atten_mask = attenMask;
  c.actual_seq_lengths = actualSeqLengths;
  c.dequant_scale1 = dequantScale1;
  c.quant_scale1 = quantScale1;
  c.dequant_scale2 = dequantScale2;
  c.quant_scale2 = quantScale2;
  c.quant_offset2 = quantOffset2;
  c.antiquant_scale = antiquantScale;
  c.antiquant_offset = antiquantOffset;
  c.block_table = blocktable;
  c.kv_padding_size = kvPaddingSize;
  c.num_heads = numHeads;
  c.scale_value = scaleValue;
  c.input_layout = inputLayout;
  c.num_key_value_heads = numKeyValueHeads;
  c.block_size = blockSize;
  c.inner_precise = innerPrecise;
  c.attention_out = attentionOut;
  return kvflash::aclnn::get_workspace_size(c, workspaceSize, executor);
}

aclnnStatus aclnnIncreFlashAttentionV4(void* workspace, uint64_t workspaceSize,
                                       aclOpExecutor* executor, const aclrtStream stream) {
  return kvflash::aclnn::run(workspace, workspaceSize, executor, stream);
}

}  // extern "C"
