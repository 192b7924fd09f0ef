// Fuzz target: the KV cache write's C++ API (ScatterPaKvCachePlan: create, run, reuse; and the
// one-shot scatter_pa_kv_cache), over mutated cases (kv_cache_fuzz.hpp).
//
// Invariants (docs/testing.md): create returns a documented status with a message naming an
// argument and leaves *plan empty on failure, writing nothing; a run with other metadata than the
// plan's is refused and writes nothing; inputs are unchanged and nothing outside the caches is
// written; bad slots (past the cache, twice) are 161002 naming slot_mapping with the caches
// unchanged, valid ones write exactly the oracle's bytes; a run at another thread count and the
// one-shot call give the same status and bytes.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/strings.hpp"
#include "fuzz_input.hpp"
#include "harness.hpp"
#include "kv_cache_fuzz.hpp"
#include "kvflash/kv_cache.hpp"

namespace kvflash::fuzz {
namespace {

constexpr const char* kOp = "scatter_pa_kv_cache";

void run(FuzzInput& in, KvCacheFuzzCase& f) {
  ScatterPaKvCacheArgs& a = f.args;
  std::vector<Slot> slots = f.slots();
  f.mem.snapshot(slots);
  std::unique_ptr<ScatterPaKvCachePlan> plan;
  const Status st = ScatterPaKvCachePlan::create(a, &plan);
  check_status(static_cast<int64_t>(st), last_error_message(), kOp, kv_cache_names(), "create");
  if (st != Status::kSuccess) {
    if (plan) violated("create failed but set *plan");
    ++stats().refused;
    f.mem.check_after(slots, false, "create failed");
    if (scatter_pa_kv_cache(a) != st) violated("the one-shot call and create disagree");
    f.mem.check_after(slots, false, "one-shot after a failed create");
    return;
  }
  if (!plan) violated("create succeeded without a plan");
  if (!kv_cache_affordable(f)) {
    ++stats().planned_only;
    return;
  }
  Guarded ws(plan->workspace_size(), in.below(64));
  if (in.rare(4)) {  // other metadata: refused, nothing written
    ScatterPaKvCacheArgs other = a;
    other.key.offset = another_value(other.key.offset);
    const Status rs = plan->run(other, ws.data(), ws.size());
    check_status(static_cast<int64_t>(rs), last_error_message(), kOp, kv_cache_names(), "mismatch");
    if (rs == Status::kSuccess) violated("a run with other metadata than the plan's succeeded");
    f.mem.check_after(slots, false, "mismatched run");
  }
  expect_kv_cache(f);
  const Status rs = plan->run(a, ws.data(), ws.size());
  check_status(static_cast<int64_t>(rs), last_error_message(), kOp, kv_cache_names(), "run");
  check_kv_cache_run(f, static_cast<int64_t>(rs), last_error_message(), "run");
  f.mem.check_after(slots, true, "run");
  ws.check_guards("the workspace");
  // Again (the same rows into the same slots), at another thread count, and one-shot: the same
  // status and bytes.
  ScatterPaKvCacheArgs again = a;
  again.num_threads = static_cast<int>(1 + in.below(4));
  expect_kv_cache(f);
  const Status rs2 = plan->run(again, ws.data(), ws.size());
  if (rs2 != rs) violated("the run at " + core::str(again.num_threads) + " threads disagrees");
  check_kv_cache_run(f, static_cast<int64_t>(rs2), last_error_message(), "second run");
  if (scatter_pa_kv_cache(a) != rs) violated("the one-shot call disagrees with the plan");
  check_kv_cache_run(f, static_cast<int64_t>(rs), last_error_message(), "one-shot");
  if (plan->status(ws.data()) != Status::kSuccess) violated("status() of a host plan failed");
}

}  // namespace
}  // namespace kvflash::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kvflash::fuzz;
  FuzzInput in(data, size);
  ++stats().inputs;
  KvCacheFuzzCase f;
  decode_kv_cache(in, /*extensions=*/true, &f);
  run(in, f);
  return 0;
}
