// aclnnLightningIndexer: argument conversion to kvflash::LightningIndexerArgs over the indexer's
// field table (aclnn/acl_args.hpp), LightningIndexerPlan::create (which does all validation) and
// a single-use executor. Nothing is computed here.
//
// Wrapper facts (docs/lightning_indexer.md): a null layout means "BSND" (the parameters are
// *Optional upstream); without returnValues sparseValuesOut is not looked at; with it a null one
// is 161001 before any argument is converted.
#include "aclnnop/aclnn_lightning_indexer.h"

#include <tuple>

#include "aclnn/acl_args.hpp"
#include "core/error.hpp"
#include "kvflash/li.hpp"
#include "ops/li/li_fields.hpp"
#include "ops/li/li_validate.hpp"

namespace kvflash::aclnn {
namespace {

constexpr const char* kOp = li::kOpName;
char kBsnd[] = "BSND";

aclnnStatus aclnn_only(const LightningIndexerArgs& a) {
  if (!a.return_value || !a.sparse_values) return ACLNN_SUCCESS;
  return refuse_fp32_output(kOp, "sparseValuesOut", *a.sparse_values, "the query dtype");
}

}  // namespace
}  // namespace kvflash::aclnn

extern "C" {

aclnnStatus aclnnLightningIndexerGetWorkspaceSize(
    const aclTensor* query, const aclTensor* key, const aclTensor* weights,
    const aclTensor* actualSeqLengthsQueryOptional, const aclTensor* actualSeqLengthsKeyOptional,
    const aclTensor* blockTableOptional, char* layoutQueryOptional, char* layoutKeyOptional,
    int64_t sparseCount, int64_t sparseMode, int64_t preTokens, int64_t nextTokens,
    bool returnValues, const aclTensor* sparseIndicesOut, const aclTensor* sparseValuesOut,
    uint64_t* workspaceSize, aclOpExecutor** executor) {
  using namespace kvflash;
  if (returnValues && sparseValuesOut == nullptr) {
    core::clear_error();
    if (executor != nullptr) *executor = nullptr;
    return aclnn::c_entry(aclnn::kOp, static_cast<aclnnStatus>(ACLNN_ERR_RUNTIME_ERROR),
                          [&] { return aclnn::null_arg(aclnn::kOp, "sparseValuesOut"); });
  }
  return aclnn::plan_phase1<LightningIndexerPlan, li::kFields>(
      aclnn::kOp,
      std::tuple(query, key, weights, actualSeqLengthsQueryOptional, actualSeqLengthsKeyOptional,
                 blockTableOptional,
                 layoutQueryOptional != nullptr ? layoutQueryOptional : aclnn::kBsnd,
                 layoutKeyOptional != nullptr ? layoutKeyOptional : aclnn::kBsnd, sparseCount,
                 sparseMode, preTokens, nextTokens, returnValues, sparseIndicesOut,
                 returnValues ? sparseValuesOut : nullptr),
      aclnn::aclnn_only, workspaceSize, executor);
}

aclnnStatus aclnnLightningIndexer(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                  aclrtStream stream) {
  return kvflash::aclnn::plan_phase2(kvflash::aclnn::kOp, workspace, workspaceSize, executor,
                                     stream);
}

}  // extern "C"
