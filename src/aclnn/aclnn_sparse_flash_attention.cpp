// aclnnSparseFlashAttention{,V2}: argument conversion to kvflash::SfaArgs over SFA's field table
// (aclnn/acl_args.hpp), SfaPlan::create (which does all validation) and a single-use executor.
// Nothing is computed here.
//
// Wrapper facts (docs/semantics.md §3.1): value == nullptr means key; returnSoftmaxLse with a null
// softmax output is 161001 (decision #20); V1 is V2 without sinks. Sinks are accepted on every
// layout (decision #16), matching the DAV_3510 that aclnn/opdev/platform.h reports, so the 361001
// that upstream returns for sinks on A2/A3 never arises.
#include "aclnnop/aclnn_sparse_flash_attention.h"

#include <tuple>

#include "aclnn/acl_args.hpp"
#include "aclnnop/aclnn_sparse_flash_attention_v2.h"
#include "core/error.hpp"
#include "kvflash/sfa.hpp"
#include "ops/sfa/sfa_fields.hpp"
#include "ops/sfa/sfa_validate.hpp"

namespace kvflash::aclnn {
namespace {

constexpr const char* kOp = sfa::kOpName;

aclnnStatus aclnn_only(const SfaArgs& a) {
  // Decision #18: without returnSoftmaxLse the softmax outputs are not even looked at (V2 passes
  // them on as null), with it they are required.
  if (a.return_softmax_lse && !a.softmax_max) return null_arg(kOp, "softmaxMaxOut");
  if (a.return_softmax_lse && !a.softmax_sum) return null_arg(kOp, "softmaxSumOut");
  return refuse_fp32_output(kOp, "attentionOut", a.attention_out, "the query dtype");
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
  return aclnnSparseFlashAttentionV2GetWorkspaceSize(
      query, key, value, sparseIndices, blockTable, actualSeqLengthsQuery, actualSeqLengthsKv,
      queryRope, keyRope, /*sinksOptional=*/nullptr, scaleValue, sparseBlockSize, layoutQuery,
      layoutKv, sparseMode, preTokens, nextTokens, attentionMode, returnSoftmaxLse, attentionOut,
      softmaxMaxOut, softmaxSumOut, workspaceSize, executor);
}

aclnnStatus aclnnSparseFlashAttention(void* workspace, uint64_t workspaceSize,
                                      aclOpExecutor* executor, aclrtStream stream) {
  return kvflash::aclnn::plan_phase2(kvflash::aclnn::kOp, workspace, workspaceSize, executor,
                                     stream);
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
  using namespace kvflash;
  // A required output that is null is 161001 before any argument is converted (a conversion's
  // 161002 must not hide it); aclnn_only keeps the same rule for the converted arguments.
  if (returnSoftmaxLse && (softmaxMaxOut == nullptr || softmaxSumOut == nullptr)) {
    core::clear_error();
    if (executor != nullptr) *executor = nullptr;
    return aclnn::c_entry(aclnn::kOp, static_cast<aclnnStatus>(ACLNN_ERR_RUNTIME_ERROR), [&] {
      return aclnn::null_arg(aclnn::kOp,
                             softmaxMaxOut == nullptr ? "softmaxMaxOut" : "softmaxSumOut");
    });
  }
  return aclnn::plan_phase1<SfaPlan, sfa::kFields>(
      aclnn::kOp,
      std::tuple(query, key, value, sparseIndices, blockTable, actualSeqLengthsQuery,
                 actualSeqLengthsKv, queryRope, keyRope, sinksOptional, scaleValue, sparseBlockSize,
                 layoutQuery, layoutKv, sparseMode, preTokens, nextTokens, attentionMode,
                 returnSoftmaxLse, attentionOut, returnSoftmaxLse ? softmaxMaxOut : nullptr,
                 returnSoftmaxLse ? softmaxSumOut : nullptr),
      aclnn::aclnn_only, workspaceSize, executor);
}

aclnnStatus aclnnSparseFlashAttentionV2(void* workspace, uint64_t workspaceSize,
                                        aclOpExecutor* executor, aclrtStream stream) {
  return kvflash::aclnn::plan_phase2(kvflash::aclnn::kOp, workspace, workspaceSize, executor,
                                     stream);
}

}  // extern "C"
