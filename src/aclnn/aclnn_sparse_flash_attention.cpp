// aclnnSparseFlashAttention{,V2}: argument conversion to kvflash::SfaArgs, SfaPlan::create (which
// does all validation) and a single-use executor whose phase 2 queues SfaPlan::run (which reads
// the block table and the selected positions in stream order). Nothing is computed here.
//
// Wrapper facts (docs/semantics.md §3.1): value == nullptr means key; returnSoftmaxLse with a null
// softmax output is 161001 (decision #20); V1 is V2 without sinks. Sinks are accepted on every
// layout (decision #16), matching the DAV_3510 that aclnn/opdev/platform.h reports, so the 361001
// that upstream returns for sinks on A2/A3 never arises.
#include "aclnnop/aclnn_sparse_flash_attention.h"

#include <memory>
#include <new>
#include <string>
#include <utility>

#include "aclnn/acl_objects.hpp"
#include "aclnnop/aclnn_sparse_flash_attention_v2.h"
#include "core/error.hpp"
#include "kvflash/sfa.hpp"

namespace kvflash::aclnn {
namespace {

constexpr const char* kOp = "sparse_flash_attention";  // the name SfaPlan uses in its messages

struct SfaCall {
  const aclTensor* query = nullptr;
  const aclTensor* key = nullptr;
  const aclTensor* value = nullptr;
  const aclTensor* sparse_indices = nullptr;
  const aclTensor* block_table = nullptr;
  const aclTensor* actual_seq_lengths_query = nullptr;
  const aclTensor* actual_seq_lengths_kv = nullptr;
  const aclTensor* query_rope = nullptr;
  const aclTensor* key_rope = nullptr;
  const aclTensor* sinks = nullptr;
  double scale_value = 1.0;
  int64_t sparse_block_size = 1;
  const char* layout_query = nullptr;
  const char* layout_kv = nullptr;
  int64_t sparse_mode = 3;
  int64_t pre_tokens = 0;
  int64_t next_tokens = 0;
  int64_t attention_mode = 2;
  bool return_softmax_lse = false;
  const aclTensor* attention_out = nullptr;
  const aclTensor* softmax_max = nullptr;
  const aclTensor* softmax_sum = nullptr;
};

Status convert(const SfaCall& c, SfaArgs* a) {
  KVFLASH_RETURN_IF_ERROR(tensor_view(kOp, "query", c.query, &a->query));
  KVFLASH_RETURN_IF_ERROR(tensor_view(kOp, "key", c.key, &a->key));
  KVFLASH_RETURN_IF_ERROR(optional_view(kOp, "value", c.value, &a->value));
  KVFLASH_RETURN_IF_ERROR(tensor_view(kOp, "sparseIndices", c.sparse_indices, &a->sparse_indices));
  KVFLASH_RETURN_IF_ERROR(optional_view(kOp, "blockTable", c.block_table, &a->block_table));
  KVFLASH_RETURN_IF_ERROR(optional_view(kOp, "actualSeqLengthsQuery", c.actual_seq_lengths_query,
                                        &a->actual_seq_lengths_query));
  KVFLASH_RETURN_IF_ERROR(
      optional_view(kOp, "actualSeqLengthsKv", c.actual_seq_lengths_kv, &a->actual_seq_lengths_kv));
  // The ropes are required by attentionMode 2, but their absence is an invalid combination
  // (161002, rule 1), which the validator reports when their views stay empty.
  std::optional<TensorView> rope;
  KVFLASH_RETURN_IF_ERROR(optional_view(kOp, "queryRope", c.query_rope, &rope));
  if (rope) a->query_rope = *rope;
  rope.reset();
  KVFLASH_RETURN_IF_ERROR(optional_view(kOp, "keyRope", c.key_rope, &rope));
  if (rope) a->key_rope = *rope;
  KVFLASH_RETURN_IF_ERROR(optional_view(kOp, "sinks", c.sinks, &a->sinks));
  KVFLASH_RETURN_IF_ERROR(tensor_view(kOp, "attentionOut", c.attention_out, &a->attention_out));
  // An fp32 output is an extension of kvflash's C++ API; aclnn keeps upstream's dtype rule.
  if (a->attention_out.dtype == DType::kFloat32) {
    return core::fail(Status::kInvalid, kOp,
                      "attentionOut dtype fp32 is not supported; expected the query dtype");
  }
  if (c.return_softmax_lse) {
    // Decision #18: without returnSoftmaxLse the softmax outputs are not even looked at.
    KVFLASH_RETURN_IF_ERROR(
        tensor_view(kOp, "softmaxMaxOut", c.softmax_max, &a->softmax_max.emplace()));
    KVFLASH_RETURN_IF_ERROR(
        tensor_view(kOp, "softmaxSumOut", c.softmax_sum, &a->softmax_sum.emplace()));
  }
  a->scale_value = c.scale_value;
  a->sparse_block_size = c.sparse_block_size;
  a->layout_query = c.layout_query;
  a->layout_kv = c.layout_kv;
  a->sparse_mode = c.sparse_mode;
  a->pre_tokens = c.pre_tokens;
  a->next_tokens = c.next_tokens;
  a->attention_mode = c.attention_mode;
  a->return_softmax_lse = c.return_softmax_lse;
  return Status::kSuccess;
}

aclnnStatus get_workspace_size(const SfaCall& c, uint64_t* workspace_size,
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
    if (c.sparse_indices == nullptr) return null_arg(kOp, "sparseIndices");
    if (c.attention_out == nullptr) return null_arg(kOp, "attentionOut");
    if (c.layout_query == nullptr) return null_arg(kOp, "layoutQuery");
    if (c.layout_kv == nullptr) return null_arg(kOp, "layoutKv");
    if (c.return_softmax_lse && c.softmax_max == nullptr) return null_arg(kOp, "softmaxMaxOut");
    if (c.return_softmax_lse && c.softmax_sum == nullptr) return null_arg(kOp, "softmaxSumOut");
    SfaArgs args;
    if (Status s = convert(c, &args); s != Status::kSuccess) return to_aclnn(s);
    return plan_executor<SfaPlan>(kOp, std::move(args), workspace_size, executor);
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

SfaCall make_call(const aclTensor* query, const aclTensor* key, const aclTensor* value,
                  const aclTensor* sparse_indices, const aclTensor* block_table,
                  const aclTensor* asq, const aclTensor* askv, const aclTensor* query_rope,
                  const aclTensor* key_rope, const aclTensor* sinks, double scale_value,
                  int64_t sparse_block_size, const char* layout_query, const char* layout_kv,
                  int64_t sparse_mode, int64_t pre_tokens, int64_t next_tokens,
                  int64_t attention_mode, bool return_softmax_lse, const aclTensor* attention_out,
                  const aclTensor* softmax_max, const aclTensor* softmax_sum) {
  SfaCall c;
  c.query = query;
  c.key = key;
  c.value = value;
  c.sparse_indices = sparse_indices;
  c.block_table = block_table;
  c.actual_seq_lengths_query = asq;
  c.actual_seq_lengths_kv = askv;
  c.query_rope = query_rope;
  c.key_rope = key_rope;
  c.sinks = sinks;
  c.scale_value = scale_value;
  c.sparse_block_size = sparse_block_size;
  c.layout_query = layout_query;
  c.layout_kv = layout_kv;
  c.sparse_mode = sparse_mode;
  c.pre_tokens = pre_tokens;
  c.next_tokens = next_tokens;
  c.attention_mode = attention_mode;
  c.return_softmax_lse = return_softmax_lse;
  c.attention_out = attention_out;
  c.softmax_max = softmax_max;
  c.softmax_sum = softmax_sum;
  return c;
}

}  // namespace
}  // namespace kvflash::aclnn

extern "C" {

aclnnStatus aclnnSparseFlashAttentionGetWorkspaceSize(
    const aclTensor* query, const aclTensor* key, const aclTensor* value,
    const aclTensor* sparseIndices, const aclTensor* blockTable,
    const aclTensor* actualSeqLengthsQuery, const aclTensor* actualSeqLengthsKv,
    const aclTensor* queryRope, const aclTensor* keyRope, double scaleValue,
    int64_t sparseBlockSize, char* layoutQuery, char* layoutKv, int64_t sparseMode,
    int64_t preTokens, int64_t nextTokens, int64_t attentionMode, bool returnSoftmaxLse,
    const aclTensor* attentionOut, const aclTensor* softmaxMaxOut, const aclTensor* softmaxSumOut,
    uint64_t* workspaceSize, aclOpExecutor** executor) {
  return kvflash::aclnn::get_workspace_size(
      kvflash::aclnn::make_call(query, key, value, sparseIndices, blockTable, actualSeqLengthsQuery,
                                actualSeqLengthsKv, queryRope, keyRope, nullptr, scaleValue,
                                sparseBlockSize, layoutQuery, layoutKv, sparseMode, preTokens,
                                nextTokens, attentionMode, returnSoftmaxLse, attentionOut,
                                softmaxMaxOut, softmaxSumOut),
      workspaceSize, executor);
}

aclnnStatus aclnnSparseFlashAttention(void* workspace, uint64_t workspaceSize,
                                      aclOpExecutor* executor, aclrtStream stream) {
  return kvflash::aclnn::run(workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnSparseFlashAttentionV2GetWorkspaceSize(
    const aclTensor* query, const aclTensor* key, const aclTensor* value,
    const aclTensor* sparseIndices, const aclTensor* blockTable,
    const aclTensor* actualSeqLengthsQuery, const aclTensor* actualSeqLengthsKv,
    const aclTensor* queryRope, const aclTensor* keyRope, const aclTensor* sinksOptional,
    double scaleValue, int64_t sparseBlockSize, char* layoutQuery, char* layoutKv,
    int64_t sparseMode, int64_t preTokens, int64_t nextTokens, int64_t attentionMode,
    bool returnSoftmaxLse, const aclTensor* attentionOut, const aclTensor* softmaxMaxOut,
    const aclTensor* softmaxSumOut, uint64_t* workspaceSize, aclOpExecutor** executor) {
  return kvflash::aclnn::get_workspace_size(
      kvflash::aclnn::make_call(query, key, value, sparseIndices, blockTable, actualSeqLengthsQuery,
                                actualSeqLengthsKv, queryRope, keyRope, sinksOptional, scaleValue,
                                sparseBlockSize, layoutQuery, layoutKv, sparseMode, preTokens,
                                nextTokens, attentionMode, returnSoftmaxLse, attentionOut,
                                softmaxMaxOut, softmaxSumOut),
      workspaceSize, executor);
}

aclnnStatus aclnnSparseFlashAttentionV2(void* workspace, uint64_t workspaceSize,
                                        aclOpExecutor* executor, aclrtStream stream) {
  return kvflash::aclnn::run(workspace, workspaceSize, executor, stream);
}

}  // extern "C"
