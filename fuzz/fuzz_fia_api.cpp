// Fuzz target: the C++ API of FIA / PFA (FiaPlan: create, run, a second run at another thread
// count, fingerprint; fused_infer_attention_score / prompt_flash_attention) at every instruction
// set cap, over mutated cases of the FIA list (fia_fuzz.hpp). Invariants: create returns a
// documented status with a message naming an argument and leaves *plan empty on failure; equal
// fingerprints for equal arguments; an accepted call runs without touching memory outside its
// views; a second run at another thread count gives the same bits; unmutated cases match the
// fp64 oracle.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cpu/isa.hpp"
#include "fia_fuzz.hpp"
#include "fuzz_input.hpp"
#include "harness.hpp"
#include "kvflash/fia.hpp"

namespace kvflash::fuzz {
namespace {

constexpr const char* kOp = "fused_infer_attention_score";

std::vector<std::byte> bytes_of(const TensorView& v) {
  const auto* p = static_cast<const std::byte*>(v.data);
  return {p, p + v.numel() * static_cast<int64_t>(dtype_size(v.dtype))};
}

void run(FuzzInput& in) {
  const bool pfa = in.flag();
  FiaFuzzCase f;
  if (!decode_fia(in, pfa, &f)) {
    ++stats().skipped;
    return;
  }
  FiaArgs a = f.call;
  a.num_threads = static_cast<int>(in.below(4));
  std::unique_ptr<FiaPlan> plan;
  const Status st = FiaPlan::create(a, &plan);
  check_status(static_cast<int64_t>(st), last_error_message(), kOp, fia_names(), "create");
  if (st != Status::kSuccess) {
    if (plan) violated("create failed but *plan is not empty");
    ++stats().refused;
    return;
  }
  std::string fp1, fp2;
  if (FiaPlan::fingerprint(a, &fp1) != Status::kSuccess ||
      FiaPlan::fingerprint(f.call, &fp2) != Status::kSuccess)
    violated("fingerprint failed");
  if (fp1 != fp2) violated("equal arguments gave different fingerprints");
  if (!f.runnable || plan->workspace_size() > (size_t{1} << 28)) {
    ++stats().planned_only;
    return;
  }
  Guarded ws(plan->workspace_size(), in.below(64));
  const Status r1 = plan->run(a, ws.data(), plan->workspace_size());
  ws.check_guards("the workspace");
  check_status(static_cast<int64_t>(r1), last_error_message(), kOp, fia_names(), "run");
  if (r1 != Status::kSuccess) {
    if (r1 != Status::kInvalid) violated("run returned " + std::to_string(static_cast<int>(r1)));
    ++stats().faulted;
    return;
  }
  const std::vector<std::byte> first = bytes_of(a.attention_out);
  FiaArgs again = a;
  again.num_threads = 1 + (a.num_threads + 1) % 4;
  if (plan->run(again, ws.data(), plan->workspace_size()) != Status::kSuccess)
    violated(std::string("a second run failed: ") + last_error_message());
  if (bytes_of(a.attention_out) != first) violated("another thread count gave other bits");
  check_fia_run(f, 0, "FiaPlan::run");
  // status(): a host run returned its faults itself, so it reads nothing and succeeds.
  if (plan->status(ws.data()) != Status::kSuccess)
    violated(std::string("status() of a host plan failed: ") + last_error_message());
  if (bytes_of(a.attention_out) != first) violated("status() wrote the output");
}

}  // namespace
}  // namespace kvflash::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kvflash;
  kvflash::fuzz::FuzzInput in(data, size);
  ++kvflash::fuzz::stats().inputs;
  const uint32_t isa = in.below(4);  // 0: what the CPU has; else capped at scalar, avx2, avx512
  cpu::set_isa_cap(isa == 0 ? std::nullopt
                            : std::optional<cpu::Isa>(static_cast<cpu::Isa>(isa - 1)));
  kvflash::fuzz::run(in);
  cpu::set_isa_cap(std::nullopt);
  return 0;
}
