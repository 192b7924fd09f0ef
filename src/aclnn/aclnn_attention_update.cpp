// aclnnAttentionUpdate: the lists and outputs as kvflash::MergeArgs (the merge's list form,
// kvflash/merge.hpp), MergePlan::create (which does all validation of the tensors) and a
// single-use executor. updateType's rule is the entry point's own (upstream's: 0 writes out only
// and lseOut must be null; 1 also lseOut, which must be given), and out keeps localOut's dtype.
// Nothing is computed here.
#include "aclnnop/aclnn_attention_update.h"

#include <string>
#include <utility>

#include "aclnn/acl_objects.hpp"
#include "core/error.hpp"
#include "core/strings.hpp"
#include "kvflash/merge.hpp"
#include "ops/plan_faults.hpp"

namespace kvflash::aclnn {
namespace {

constexpr const char* kOp = "attention_update";

aclnnStatus invalid(const std::string& msg) {
  return to_aclnn(core::fail(Status::kInvalid, kOp, msg));
}

aclnnStatus phase1(const aclTensorList* lse, const aclTensorList* local_out, int64_t update_type,
                   aclTensor* out, aclTensor* lse_out, uint64_t* workspace_size,
                   aclOpExecutor** executor) {
  if (workspace_size == nullptr) return null_arg(kOp, "workspaceSize");
  if (executor == nullptr) return null_arg(kOp, "executor");
  if (lse == nullptr) return null_arg(kOp, "lse");
  if (local_out == nullptr) return null_arg(kOp, "localOut");
  if (out == nullptr) return null_arg(kOp, "out");
  if (update_type != 0 && update_type != 1)
    return invalid("updateType must be 0 (out) or 1 (out and lseOut), got " +
                   core::str(update_type));
  if (update_type == 0 && lse_out != nullptr)
    return invalid("lseOut must be null with updateType 0");
  if (update_type == 1 && lse_out == nullptr)
    return invalid("lseOut is required with updateType 1");
  MergeArgs args;
  Status s = tensor_list_views(kOp, "lse", lse, &args.partial_lse_list);
  if (s == Status::kSuccess)
    s = tensor_list_views(kOp, "localOut", local_out, &args.partial_out_list);
  if (s == Status::kSuccess) s = tensor_view(kOp, "out", out, &args.out);
  if (s == Status::kSuccess && update_type == 1)
    s = optional_view(kOp, "lseOut", lse_out, &args.out_lse);
  if (s != Status::kSuccess) return to_aclnn(s);
  if (args.partial_out_list.empty()) return invalid("localOut must hold at least one tensor");
  if (args.out.dtype != args.partial_out_list[0].dtype) {
    return invalid(std::string("out dtype (") + dtype_name(args.out.dtype) +
                   ") must be localOut's (" + dtype_name(args.partial_out_list[0].dtype) + ")");
  }
  return plan_executor<MergePlan>(kOp, std::move(args), workspace_size, executor);
}

}  // namespace
}  // namespace kvflash::aclnn

extern "C" {

aclnnStatus aclnnAttentionUpdateGetWorkspaceSize(const aclTensorList* lse,
                                                 const aclTensorList* localOut, int64_t updateType,
                                                 aclTensor* out, aclTensor* lseOut,
                                                 uint64_t* workspaceSize,
                                                 aclOpExecutor** executor) {
  using namespace kvflash;
  core::clear_error();
  if (executor != nullptr) *executor = nullptr;
  return aclnn::c_entry(aclnn::kOp, static_cast<aclnnStatus>(ACLNN_ERR_RUNTIME_ERROR), [&] {
    return aclnn::phase1(lse, localOut, updateType, out, lseOut, workspaceSize, executor);
  });
}

aclnnStatus aclnnAttentionUpdate(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                 aclrtStream stream) {
  using namespace kvflash;
  return aclnn::c_entry(aclnn::kOp, static_cast<aclnnStatus>(ACLNN_ERR_RUNTIME_ERROR), [&] {
    return aclnn::launch(aclnn::kOp, workspace, workspaceSize, executor, stream);
  });
}

}  // extern "C"
