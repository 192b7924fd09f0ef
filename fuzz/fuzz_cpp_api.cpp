// Fuzz target: the C++ API (IfaPlan / SfaPlan: create, run, status, reuse), at every instruction
// set.
//
// Invariants (docs/testing.md): create returns a documented status with a message naming an
// argument and leaves *plan empty on failure; a plan run with arguments of other metadata is
// refused and writes nothing; a run returns 161002 exactly when the device data is bad; inputs are
// unchanged and nothing outside an output or the workspace is written; a run at another thread
// count gives the same bits; status() of a host plan succeeds and writes nothing; and the outputs
// match the fp64 reference.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "cpu/isa.hpp"
#include "fuzz_input.hpp"
#include "harness.hpp"
#include "ifa_fuzz.hpp"
#include "kvflash/ifa.hpp"
#include "kvflash/sfa.hpp"
#include "sfa_fuzz.hpp"

namespace kvflash::fuzz {
namespace {

std::vector<std::byte> bytes_of(const TensorView& v) {
  const auto* p = static_cast<const std::byte*>(v.data);
  return {p, p + v.numel() * static_cast<int64_t>(dtype_size(v.dtype))};
}

// Another call's metadata for a plan: each must be refused by run (161002, or 161001 for a
// missing pointer) without writing anything.
template <typename Args>
void perturb_common(FuzzInput& in, Args* a, TensorView* first_input) {
  switch (in.below(4)) {
    case 0:  // another (float) scale; a non-finite or huge one becomes finite
      a->scale_value =
          std::isfinite(static_cast<float>(a->scale_value)) ? a->scale_value * 2 + 1 : 0.5;
      break;
    case 1:
      first_input->strides[0] = another_value(first_input->strides[0]);
      break;
    case 2:
      first_input->offset = another_value(first_input->offset);
      break;
    default:
      first_input->data = nullptr;
      break;
  }
}

template <typename Case, typename Plan, typename Args>
void run_case(FuzzInput& in, Case& f, const char* op, const std::vector<const char*>& names,
              bool (*affordable)(const Case&, const Args&, uint64_t),
              void (*check)(Case&, const Args&, int64_t, const std::string&)) {
  Args& a = f.args;
  std::vector<Slot> slots = f.slots();
  if constexpr (std::is_same_v<Args, SfaArgs>) {
    if (!a.return_softmax_lse) {  // written only when requested
      if (a.softmax_max) f.mem.forbid(&*a.softmax_max);
      if (a.softmax_sum) f.mem.forbid(&*a.softmax_sum);
    }
  }
  f.mem.snapshot(slots);
  std::unique_ptr<Plan> plan;
  const Status st = Plan::create(a, &plan);
  check_status(static_cast<int64_t>(st), last_error_message(), op, names, "create");
  if (st != Status::kSuccess) {
    if (plan) violated("create failed but set *plan");
    ++stats().refused;
    f.mem.check_after(slots, false, "create failed");
    return;
  }
  if (!plan) violated("create succeeded without a plan");
  const uint64_t ws_size = plan->workspace_size();
  if (!affordable(f, a, ws_size)) {
    ++stats().planned_only;
    f.mem.check_after(slots, false, "planned only");
    return;
  }
  Guarded ws(static_cast<size_t>(ws_size), in.below(64));
  if (in.rare(4)) {  // a run with other metadata: refused, nothing written
    Args other = a;
    perturb_common(in, &other, &other.query);
    const Status rs = plan->run(other, ws.data(), ws.size());
    check_status(static_cast<int64_t>(rs), last_error_message(), op, names, "mismatched run");
    if (rs == Status::kSuccess) violated("a run with other metadata than the plan's succeeded");
    f.mem.check_after(slots, false, "mismatched run");
  }
  if (ws_size > 0 && in.rare(8)) {
    const Status rs = plan->run(a, ws.data(), ws_size - 1);
    if (rs != Status::kInvalid) violated("a run with a small workspace did not return 161002");
    f.mem.check_after(slots, false, "small workspace");
  }
  const Status rs = plan->run(a, ws.data(), ws.size());
  check_status(static_cast<int64_t>(rs), last_error_message(), op, names, "run");
  f.mem.check_after(slots, true, "run");
  ws.check_guards("the workspace");
  if (in.flag()) {  // the same bits at another thread count
    std::vector<std::byte> first = bytes_of(a.attention_out);
    Args again = a;
    again.num_threads = static_cast<int>(1 + (int64_t{a.num_threads} + 1 + in.below(3)) % 4);
    const Status rs2 = plan->run(again, ws.data(), ws.size());
    if (rs2 != rs) violated("the second run returned another status");
    if (bytes_of(a.attention_out) != first)
      violated("the output differs between " + std::to_string(a.num_threads) + " and " +
               std::to_string(again.num_threads) + " threads");
    ws.check_guards("the workspace (second run)");
  }
  check(f, a, static_cast<int64_t>(rs), "run");
  // status(): a host run returned its faults itself, so it reads nothing and succeeds; a device
  // plan's reads the run's fault record (documented codes only).
  const Status ss = plan->status(in.flag() ? ws.data() : nullptr);
  check_status(static_cast<int64_t>(ss), last_error_message(), op, names, "status");
  if (a.query.device.type == DeviceType::kHost && ss != Status::kSuccess)
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
  const bool sfa = in.flag();
  const uint32_t isa = in.below(4);  // 0: what the CPU has; else capped at scalar, avx2, avx512
  cpu::set_isa_cap(isa == 0 ? std::nullopt
                            : std::optional<cpu::Isa>(static_cast<cpu::Isa>(isa - 1)));
  if (sfa) {
    SfaFuzzCase f;
    if (decode_sfa(in, /*sinks=*/true, /*extensions=*/true, &f)) {
      add_context(std::string("C++ isa cap ") + std::to_string(isa));
      run_case<SfaFuzzCase, SfaPlan, SfaArgs>(in, f, "sparse_flash_attention", sfa_names(),
                                              sfa_affordable, check_sfa_run);
    }
  } else {
    IfaFuzzCase f;
    if (decode_ifa(in, IfaFeatures{}, &f)) {
      add_context(std::string("C++ isa cap ") + std::to_string(isa));
      run_case<IfaFuzzCase, IfaPlan, IfaArgs>(in, f, "incre_flash_attention", ifa_names(),
                                              ifa_affordable, check_ifa_run);
    }
  }
  cpu::set_isa_cap(std::nullopt);
  return 0;
}
