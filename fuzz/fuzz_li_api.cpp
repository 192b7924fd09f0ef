// Fuzz target: the C++ API of the lightning indexer (LightningIndexerPlan: create, run, reuse),
// at every instruction set. The invariants of fuzz_cpp_api.cpp (docs/testing.md): create returns
// a documented status with a message naming an argument and leaves *plan empty on failure; a run
// with other metadata is refused and writes nothing; a run returns 161002 exactly when the device
// data is bad; inputs are unchanged and nothing outside an output or the workspace is written; a
// run at another thread count gives the same bits; and the outputs match the fp64 reference.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cpu/isa.hpp"
#include "fuzz_input.hpp"
#include "harness.hpp"
#include "kvflash/li.hpp"
#include "li_fuzz.hpp"

namespace kvflash::fuzz {
namespace {

constexpr const char* kOp = "lightning_indexer";

std::vector<std::byte> bytes_of(const std::optional<TensorView>& v) {
  if (!v || v->data == nullptr) return {};
  const auto* p = static_cast<const std::byte*>(v->data);
  return {p, p + v->numel() * static_cast<int64_t>(dtype_size(v->dtype))};
}

void run(FuzzInput& in, LiFuzzCase& f) {
  LightningIndexerArgs& a = f.args;
  std::vector<Slot> slots = f.slots();
  if (!a.return_value && a.sparse_values) f.mem.forbid(&*a.sparse_values);  // not looked at
  f.mem.snapshot(slots);
  std::unique_ptr<LightningIndexerPlan> plan;
  const Status st = LightningIndexerPlan::create(a, &plan);
  check_status(static_cast<int64_t>(st), last_error_message(), kOp, li_names(), "create");
  if (st != Status::kSuccess) {
    if (plan) violated("create failed but set *plan");
    ++stats().refused;
    f.mem.check_after(slots, false, "create failed");
    return;
  }
  if (!plan) violated("create succeeded without a plan");
  const uint64_t ws_size = plan->workspace_size();
  if (!li_affordable(f, a, ws_size)) {
    ++stats().planned_only;
    f.mem.check_after(slots, false, "planned only");
    return;
  }
  Guarded ws(static_cast<size_t>(ws_size), in.below(64));
  if (in.rare(4)) {  // a run with other metadata: refused, nothing written
    LightningIndexerArgs other = a;
    switch (in.below(4)) {
      case 0:
        other.sparse_count = another_value(other.sparse_count);
        break;
      case 1:
        other.query.strides[0] = another_value(other.query.strides[0]);
        break;
      case 2:
        other.key.offset = another_value(other.key.offset);
        break;
      default:
        other.query.data = nullptr;
        break;
    }
    const Status rs = plan->run(other, ws.data(), ws.size());
    check_status(static_cast<int64_t>(rs), last_error_message(), kOp, li_names(), "mismatched run");
    if (rs == Status::kSuccess) violated("a run with other metadata than the plan's succeeded");
    f.mem.check_after(slots, false, "mismatched run");
  }
  if (ws_size > 0 && in.rare(8)) {
    const Status rs = plan->run(a, ws.data(), ws_size - 1);
    if (rs != Status::kInvalid) violated("a run with a small workspace did not return 161002");
    f.mem.check_after(slots, false, "small workspace");
  }
  const Status rs = plan->run(a, ws.data(), ws.size());
  const std::string message = last_error_message();
  check_status(static_cast<int64_t>(rs), message.c_str(), kOp, li_names(), "run");
  f.mem.check_after(slots, true, "run");
  ws.check_guards("the workspace");
  if (in.flag()) {  // the same bits at another thread count
    const std::vector<std::byte> first = bytes_of(a.sparse_indices);
    const std::vector<std::byte> first_values =
        bytes_of(a.return_value ? a.sparse_values : std::nullopt);
    LightningIndexerArgs again = a;
    again.num_threads = static_cast<int>(1 + (int64_t{a.num_threads} + 1 + in.below(3)) % 4);
    const Status rs2 = plan->run(again, ws.data(), ws.size());
    if (rs2 != rs) violated("the second run returned another status");
    if (bytes_of(a.sparse_indices) != first ||
        bytes_of(a.return_value ? a.sparse_values : std::nullopt) != first_values)
      violated("the outputs differ between " + std::to_string(a.num_threads) + " and " +
               std::to_string(again.num_threads) + " threads");
    ws.check_guards("the workspace (second run)");
  }
  check_li_run(f, a, static_cast<int64_t>(rs), message, "run");
  // status(): a host run returned its faults itself, so it reads nothing and succeeds.
  const Status ss = plan->status(in.flag() ? ws.data() : nullptr);
  check_status(static_cast<int64_t>(ss), last_error_message(), kOp, li_names(), "status");
  if (ss != Status::kSuccess)
    violated("status() of a host plan returned " + std::to_string(static_cast<int>(ss)));
  f.mem.check_after(slots, true, "status");
  ws.check_guards("the workspace (status)");
}

}  // namespace
}  // namespace kvflash::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kvflash;
  using namespace kvflash::fuzz;
  FuzzInput in(data, size);
  ++stats().inputs;
  const uint32_t isa = in.below(5);  // 0: what the CPU has; else capped at scalar .. avx512bf16
  cpu::set_isa_cap(isa == 0 ? std::nullopt
                            : std::optional<cpu::Isa>(static_cast<cpu::Isa>(isa - 1)));
  LiFuzzCase f;
  if (decode_li(in, /*extensions=*/true, &f)) {
    add_context(std::string("C++ isa cap ") + std::to_string(isa));
    run(in, f);
  }
  cpu::set_isa_cap(std::nullopt);
  return 0;
}
