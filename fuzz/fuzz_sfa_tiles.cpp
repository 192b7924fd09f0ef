// Fuzz target: the SFA kernel's matrix-engine body (src/cpu/sfa/sfa_tiles-inl.h), the code the
// cpu-amx backend entry runs on the CPU's tiles, here on the software model of the tiles
// (tests/support/sfa_emu_tiles.hpp) so that it is fuzzed on any machine with AVX512-BF16 (without
// it, every input is skipped). Each input is an SFA call (decode_sfa); a call SfaPlan::create
// accepts on host memory runs through the emulated kernel table the way a backend entry runs it
// (validate, bind, cpu::sfa_run).
//
// Invariants (docs/testing.md): the run returns a documented status, 161002 exactly when the
// device data is bad; inputs are unchanged and nothing outside an output or the workspace is
// written; another thread count, and tile passes of 3 heads instead of 16, give the same bits; the
// outputs match the fp64 reference (check_sfa_run).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cpu/isa.hpp"
#include "cpu/sfa/sfa_kernel.hpp"
#include "fuzz_input.hpp"
#include "harness.hpp"
#include "kvflash/sfa.hpp"
#include "ops/sfa/sfa_bind.hpp"
#include "ops/sfa/sfa_problem.hpp"
#include "ops/sfa/sfa_validate.hpp"
#include "sfa_fuzz.hpp"
#include "support/sfa_emu_tiles.hpp"

namespace kvflash::fuzz {
namespace {

std::vector<std::byte> bytes_of(const TensorView& v) {
  const auto* p = static_cast<const std::byte*>(v.data);
  return {p, p + v.numel() * static_cast<int64_t>(dtype_size(v.dtype))};
}

void run_tiles(FuzzInput& in, SfaFuzzCase& f) {
  SfaArgs& a = f.args;
  std::vector<Slot> slots = f.slots();
  f.mem.snapshot(slots);
  std::unique_ptr<SfaPlan> plan;
  if (SfaPlan::create(a, &plan) != Status::kSuccess || a.query.device.type != DeviceType::kHost) {
    ++stats().refused;  // validation is the other targets' subject
    return;
  }
  core::SfaProblem p;
  if (sfa::validate(a, &p) != Status::kSuccess) violated("create accepted what validate refuses");
  const uint64_t ws_size = cpu::sfa_workspace_size(p);
  if (ws_size != plan->workspace_size()) violated("the tile kernels' workspace is not the plan's");
  if (!sfa_affordable(f, a, ws_size)) {
    ++stats().planned_only;
    return;
  }
  core::SfaData d;
  sfa::bind_data(p, a, &d);
  Guarded ws(static_cast<size_t>(ws_size), in.below(64));
  add_context("emulated tiles");
  core::RunContext ctx;
  ctx.num_threads = a.num_threads;
  ctx.workspace = ws.data();
  ctx.workspace_size = ws.size();
  const cpu::SfaKernels& k = testing::kSfaKernelsEmuTiles;
  const Status st = cpu::sfa_run(p, d, ctx, k);
  check_status(static_cast<int64_t>(st), last_error_message(), "sparse_flash_attention",
               sfa_names(), "tile run");
  f.mem.check_after(slots, true, "tile run");
  ws.check_guards("the workspace");
  if (in.flag()) {  // the same bits at another thread count (and pass width)
    const std::vector<std::byte> first = bytes_of(a.attention_out);
    ctx.num_threads = static_cast<int>(1 + (int64_t{a.num_threads} + 1 + in.below(3)) % 4);
    const cpu::SfaKernels& again = in.flag() ? testing::kSfaKernelsEmuTilesNarrow : k;
    if (cpu::sfa_run(p, d, ctx, again) != st) {
      violated("the second tile run returned another status");
    }
    if (bytes_of(a.attention_out) != first) {
      violated("the tile output differs at " + std::to_string(ctx.num_threads) + " threads" +
               (&again != &k ? " with passes of 3 heads" : ""));
    }
    ws.check_guards("the workspace (second run)");
  }
  check_sfa_run(f, a, static_cast<int64_t>(st), "tile run");
}

}  // namespace
}  // namespace kvflash::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kvflash;
  using namespace kvflash::fuzz;
  FuzzInput in(data, size);
  ++stats().inputs;
  // The emulated engine's vector parts are the avx512 kernel's (support/sfa_emu_tiles.hpp).
  if (cpu::detected_isa() < cpu::Isa::kAvx512Bf16) {
    ++stats().skipped;
    return 0;
  }
  SfaFuzzCase f;
  if (decode_sfa(in, /*sinks=*/true, /*extensions=*/true, &f)) run_tiles(in, f);
  return 0;
}
