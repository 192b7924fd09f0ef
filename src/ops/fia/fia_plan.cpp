// FiaPlan: the plan handle (core/plan_handle.hpp) over FIA's field table, validator, binder and
// backends. PromptFlashAttention is the same plan with FiaArgs::prompt set.
#include <cstddef>
#include <memory>
#include <new>
#include <string>
#include <utility>

#include "backends/lists.hpp"
#include "core/error.hpp"
#include "core/plan_handle.hpp"
#include "kvflash/fia.hpp"
#include "ops/fia/fia_bind.hpp"
#include "ops/fia/fia_fields.hpp"
#include "ops/fia/fia_plan_impl.hpp"
#include "ops/fia/fia_validate.hpp"
#include "ops/plan_faults.hpp"

namespace kvflash {
namespace {

struct Desc {
  using Plan = FiaPlan;
  using Access = FiaPlanAccess;
  using Args = FiaArgs;
  static constexpr const auto& fields = fia::kFields;
  static constexpr core::PlanOps<core::FiaProblem, FiaArgs, core::FiaData> ops = {
      fia::kOpName,   fia::validate, fia::strip_data, fia::check_matches_plan,
      fia::bind_data, fia::describe, fia_backends,    read_fault_record};
};
using Handle = core::PlanHandle<Desc>;

}  // namespace

FiaPlan::FiaPlan(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
FiaPlan::~FiaPlan() = default;

Status FiaPlan::create(const FiaArgs& args, std::unique_ptr<FiaPlan>* plan) {
  return Handle::create(args, plan);
}

size_t FiaPlan::workspace_size() const { return impl_->workspace_size; }

Status FiaPlan::run(const FiaArgs& args, void* workspace, size_t workspace_size,
                    void* stream) const {
  return Handle::run(*this, args, workspace, workspace_size, stream);
}

Status FiaPlan::status(const void* workspace, void* stream) const {
  return Handle::status(*this, workspace, stream);
}

bool plan_writes_fault_record(const FiaPlan& plan) { return Handle::writes_fault_record(plan); }

Status plan_decode_fault(const FiaPlan& plan, const core::FaultRecord& record) {
  return Handle::decode_fault(plan, record);
}

Status FiaPlan::fingerprint(const FiaArgs& args, std::string* bytes) {
  return Handle::fingerprint(args, bytes);
}

Status fused_infer_attention_score(const FiaArgs& args) { return Handle::one_shot(args); }

Status prompt_flash_attention(const FiaArgs& args) {
  if (args.prompt) return Handle::one_shot(args);
  try {
    FiaArgs pfa = args;
    pfa.prompt = true;
    return Handle::one_shot(pfa);
  } catch (const std::bad_alloc&) {
    return core::fail_noalloc(Status::kRuntime, fia::kOpName, "out of memory while planning");
  }
}

}  // namespace kvflash
