// Fuzz target: FlashAttentionScore's C++ API (FlashAttentionScorePlan: create, run, reuse; and
// the one-shot flash_attention_score), over mutated calls (fa_fuzz.hpp).
//
// Invariants (docs/testing.md): create returns a documented status with a message naming an
// argument and leaves *plan empty on failure; a run with other metadata than the plan's is
// refused; nothing is written outside the outputs (guards); a run at another thread count and the
// one-shot call give the same bits; an unmutated call matches the oracle (output, max and sum).
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "fa_fuzz.hpp"
#include "fuzz_input.hpp"
#include "harness.hpp"
#include "kvflash/flash_attention_score.hpp"

namespace kvflash::fuzz {
namespace {

constexpr const char* kOp = "flash_attention_score";

std::vector<std::byte> outputs(const FlashAttentionScoreArgs& a) {
  std::vector<std::byte> b;
  for (const TensorView* v : {&a.attention_out, &a.softmax_max, &a.softmax_sum}) {
    const auto* p = static_cast<const std::byte*>(v->data);
    b.insert(b.end(), p, p + safe_numel(*v) * static_cast<int64_t>(dtype_size(v->dtype)));
  }
  return b;
}

void run(FuzzInput& in, FaFuzzCase& f) {
  FlashAttentionScoreArgs& a = f.args;
  std::unique_ptr<FlashAttentionScorePlan> plan;
  const Status st = FlashAttentionScorePlan::create(a, &plan);
  check_status(static_cast<int64_t>(st), last_error_message(), kOp, fa_names(), "create");
  // The prefill kernel's own refusals carry its name: the call is FIA's once mapped.
  if (st != Status::kSuccess) {
    if (plan) violated("create failed but set *plan");
    ++stats().refused;
    check_fa_guards(f, "create failed");
    return;
  }
  if (!plan) violated("create succeeded without a plan");
  if (!fa_affordable(f, plan->workspace_size())) {
    ++stats().planned_only;
    return;
  }
  Guarded ws(plan->workspace_size(), in.below(64));
  if (in.rare(4)) {
    FlashAttentionScoreArgs other = a;
    other.scale = a.scale == 0.5 ? 0.25 : 0.5;  // other bits whatever a.scale is (NaN, 1e300)
    if (plan->run(other, ws.data(), ws.size()) == Status::kSuccess)
      violated("a run with another scale than the plan's succeeded");
  }
  const Status rs = plan->run(a, ws.data(), ws.size());
  check_status(static_cast<int64_t>(rs), last_error_message(), kOp, fa_names(), "run");
  check_fa_run(f, static_cast<int64_t>(rs), "run");
  ws.check_guards("the workspace");
  const std::vector<std::byte> first = outputs(a);
  FlashAttentionScoreArgs again = a;
  again.num_threads = static_cast<int>(1 + in.below(4));
  if (plan->run(again, ws.data(), ws.size()) != Status::kSuccess) violated("the second run failed");
  if (outputs(a) != first) violated("the outputs differ between thread counts");
  if (flash_attention_score(a) != Status::kSuccess) violated("the one-shot call failed");
  if (outputs(a) != first) violated("the one-shot call gave other bits than the plan");
}

}  // namespace
}  // namespace kvflash::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kvflash::fuzz;
  FuzzInput in(data, size);
  ++stats().inputs;
  FaFuzzCase f;
  decode_fa(in, /*extensions=*/true, &f);
  run(in, f);
  return 0;
}
