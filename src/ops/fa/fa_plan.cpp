// FlashAttentionScorePlan: FlashAttentionScore's rules and mapping (fa_convert.hpp) over a
// FiaPlan. A run matches its arguments against the plan's (the field table), then runs the
// FiaPlan on a per-thread copy of the mapped arguments with the run's views: after a thread's
// first run it allocates only to grow that copy for longer length lists.
#include <cstddef>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/plan_fields.hpp"
#include "kvflash/flash_attention_score.hpp"
#include "ops/fa/fa_convert.hpp"
#include "ops/fa/fa_fields.hpp"
#include "ops/fa/fa_plan_impl.hpp"
#include "ops/plan_faults.hpp"

namespace kvflash {
namespace {

bool word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// FusedInferAttentionScore's refusal of a mapped call in FlashAttentionScore's terms: its
// argument names replaced (whole words) by the ones the caller passed, under this operator's name.
Status in_fa_terms(Status code) {
  static constexpr std::pair<std::string_view, std::string_view> kRenames[] = {
      {"actual_seq_lengths_kv", "actual_seq_kvlen"},
      {"actual_seq_lengths", "actual_seq_qlen"},
      {"num_key_value_heads", "key's head count"},
      {"num_heads", "head_num"},
      {"pre_tokens", "pre_tockens"},
      {"next_tokens", "next_tockens"},
      {"key[0]", "key"},
      {"value[0]", "value"},
      {"pse_shift", "pse"},
  };
  std::string text = last_error_message();
  const size_t close = text.size() > 0 && text[0] == '[' ? text.find("] ") : std::string::npos;
  if (close != std::string::npos) text.erase(0, close + 2);
  for (const auto& [from, to] : kRenames) {
    std::string out;
    size_t pos = 0;
    for (size_t at; (at = text.find(from, pos)) != std::string::npos;) {
      const size_t end = at + from.size();
      const bool whole =
          (at == 0 || !word_char(text[at - 1])) && (end == text.size() || !word_char(text[end]));
      out.append(text, pos, (whole ? at : end) - pos);
      if (whole) out.append(to);
      pos = end;
    }
    text = out.append(text, pos, std::string::npos);
  }
  return core::fail(code, fa::kOpName, text);
}

}  // namespace

FlashAttentionScorePlan::FlashAttentionScorePlan(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}
FlashAttentionScorePlan::~FlashAttentionScorePlan() = default;

Status FlashAttentionScorePlan::create(const FlashAttentionScoreArgs& args,
                                       std::unique_ptr<FlashAttentionScorePlan>* plan) {
  core::clear_error();
  const char* op = fa::kOpName;
  if (plan == nullptr) return core::fail(Status::kNullPtr, op, "plan (the output pointer) is null");
  plan->reset();
  try {
    auto impl = std::make_unique<Impl>();
    KVFLASH_RETURN_IF_ERROR(fa::to_fia(args, &impl->fia));
    const Status fia = FiaPlan::create(impl->fia, &impl->plan);
    if (fia == Status::kInvalid) return in_fa_terms(fia);
    KVFLASH_RETURN_IF_ERROR(fia);
    impl->meta = core::strip_fields(fa::kFields, args);
    plan->reset(FlashAttentionScorePlanAccess::make(std::move(impl)));
  } catch (const std::bad_alloc&) {
    return core::fail_noalloc(Status::kRuntime, op, "out of memory while planning");
  }
  if (!*plan) return core::fail_noalloc(Status::kRuntime, op, "out of memory while planning");
  return Status::kSuccess;
}

size_t FlashAttentionScorePlan::workspace_size() const { return impl_->plan->workspace_size(); }

Status FlashAttentionScorePlan::run(const FlashAttentionScoreArgs& args, void* workspace,
                                    size_t workspace_size, void* stream) const {
  core::clear_error();
  KVFLASH_RETURN_IF_ERROR(core::match_fields(fa::kOpName, fa::kFields, impl_->meta, args));
  if (args.num_threads < 0) {
    return core::fail(Status::kInvalid, fa::kOpName,
                      "num_threads (" + std::to_string(args.num_threads) + ") must be >= 0");
  }
  thread_local FiaArgs call;
  try {
    call = impl_->fia;  // keeps its capacity: equal or shorter lists allocate nothing
  } catch (const std::bad_alloc&) {
    return core::fail_noalloc(Status::kRuntime, fa::kOpName, "out of memory while running");
  }
  fa::rebind_views(args, &call);
  return impl_->plan->run(call, workspace, workspace_size, stream);
}

Status FlashAttentionScorePlan::status(const void* workspace, void* stream) const {
  return impl_->plan->status(workspace, stream);
}

Status FlashAttentionScorePlan::fingerprint(const FlashAttentionScoreArgs& args,
                                            std::string* bytes) {
  core::clear_error();
  if (bytes == nullptr) return core::fail(Status::kNullPtr, fa::kOpName, "bytes is null");
  try {
    bytes->clear();
    core::fingerprint_fields(fa::kFields, args, bytes);
  } catch (const std::bad_alloc&) {
    return core::fail_noalloc(Status::kRuntime, fa::kOpName, "out of memory while fingerprinting");
  }
  return Status::kSuccess;
}

Status flash_attention_score(const FlashAttentionScoreArgs& args) {
  std::unique_ptr<FlashAttentionScorePlan> plan;
  KVFLASH_RETURN_IF_ERROR(FlashAttentionScorePlan::create(args, &plan));
  std::vector<std::byte> ws;
  try {
    ws.resize(plan->workspace_size());
  } catch (const std::bad_alloc&) {
    return core::fail_noalloc(Status::kRuntime, fa::kOpName, "cannot allocate the workspace");
  }
  return plan->run(args, ws.data(), ws.size());
}

bool plan_writes_fault_record(const FlashAttentionScorePlan& plan) {
  return plan_writes_fault_record(*FlashAttentionScorePlanAccess::impl(plan).plan);
}

Status plan_decode_fault(const FlashAttentionScorePlan& plan, const core::FaultRecord& record) {
  return plan_decode_fault(*FlashAttentionScorePlanAccess::impl(plan).plan, record);
}

}  // namespace kvflash
