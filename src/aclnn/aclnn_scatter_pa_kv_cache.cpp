// aclnnScatterPaKvCache: argument conversion to kvflash::ScatterPaKvCacheArgs over the cache
// write's field table (aclnn/acl_args.hpp), ScatterPaKvCachePlan::create (which does all
// validation) and a single-use executor. Nothing is computed here.
//
// Wrapper facts (include/aclnnop/aclnn_scatter_pa_kv_cache.h): a null cacheModeOptional /
// scatterModeOptional means "Norm" / "None"; value and valueCacheRef are required handles (161001
// when null), and both 0-D means the key only (upstream's scenario 6).
#include "aclnnop/aclnn_scatter_pa_kv_cache.h"

#include <tuple>

#include "aclnn/acl_args.hpp"
#include "core/error.hpp"
#include "kvflash/kv_cache.hpp"
#include "ops/kv_cache/kv_cache_fields.hpp"
#include "ops/kv_cache/kv_cache_validate.hpp"

namespace kvflash::aclnn {
namespace {

constexpr const char* kOp = kv_cache::kOpName;
char kNorm[] = "Norm";
char kNone[] = "None";

// A 0-D value and value cache: the key only.
aclnnStatus key_only(ScatterPaKvCacheArgs& a) {
  if (a.value && a.value_cache && a.value->rank == 0 && a.value_cache->rank == 0) {
    a.value.reset();
    a.value_cache.reset();
  }
  return ACLNN_SUCCESS;
}

}  // namespace
}  // namespace kvflash::aclnn

extern "C" {

aclnnStatus aclnnScatterPaKvCacheGetWorkspaceSize(
    const aclTensor* key, aclTensor* keyCacheRef, const aclTensor* slotMapping,
    const aclTensor* value, aclTensor* valueCacheRef, const aclTensor* compressLensOptional,
    const aclTensor* compressSeqOffsetOptional, const aclTensor* seqLensOptional,
    char* cacheModeOptional, char* scatterModeOptional, const aclIntArray* stridesOptional,
    const aclIntArray* offsetsOptional, uint64_t* workspaceSize, aclOpExecutor** executor) {
  using namespace kvflash;
  if (value == nullptr || valueCacheRef == nullptr) {
    core::clear_error();
    if (executor != nullptr) *executor = nullptr;
    return aclnn::c_entry(aclnn::kOp, static_cast<aclnnStatus>(ACLNN_ERR_RUNTIME_ERROR), [&] {
      return aclnn::null_arg(aclnn::kOp, value == nullptr ? "value" : "valueCacheRef");
    });
  }
  return aclnn::plan_phase1<ScatterPaKvCachePlan, kv_cache::kFields>(
      aclnn::kOp,
      std::tuple(key, keyCacheRef, slotMapping, value, valueCacheRef, compressLensOptional,
                 compressSeqOffsetOptional, seqLensOptional,
                 cacheModeOptional != nullptr ? cacheModeOptional : aclnn::kNorm,
                 scatterModeOptional != nullptr ? scatterModeOptional : aclnn::kNone,
                 stridesOptional, offsetsOptional),
      aclnn::key_only, workspaceSize, executor);
}

aclnnStatus aclnnScatterPaKvCache(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                  aclrtStream stream) {
  return kvflash::aclnn::plan_phase2(kvflash::aclnn::kOp, workspace, workspaceSize, executor,
                                     stream);
}

}  // extern "C"
