// Fuzz target: the IFA kernel's matrix-engine body (src/cpu/ifa/ifa_tiles-inl.h), the code the
// cpu-amx backend entry runs on the CPU's tiles, here on the software model of the tiles
// (tests/support/ifa_emu_tiles.hpp) so that it is fuzzed on any machine with AVX512-BF16 (without
// it, every input is skipped). Each input is an IFA call (decode_ifa); a call IfaPlan::create
// accepts on host memory runs through one emulated kernel table (P·V on tiles or on the vector
// FMAs) the way a backend entry runs it (validate, bind, cpu::ifa_run).
//
// Invariants (docs/testing.md): the run returns a documented status, 161002 exactly when the
// device data is bad; inputs are unchanged and nothing outside an output or the workspace is
// written; another thread count, and tile passes of 3 heads instead of 16, give the same bits; the
// outputs match the fp64 reference (check_ifa_run).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cpu/ifa/ifa_kernel.hpp"
#include "cpu/isa.hpp"
#include "fuzz_input.hpp"
#include "harness.hpp"
#include "ifa_fuzz.hpp"
#include "kvflash/ifa.hpp"
#include "ops/ifa/ifa_bind.hpp"
#include "ops/ifa/ifa_problem.hpp"
#include "ops/ifa/ifa_validate.hpp"
#include "support/ifa_emu_tiles.hpp"

namespace kvflash::fuzz {
namespace {

std::vector<std::byte> bytes_of(const TensorView& v) {
  const auto* p = static_cast<const std::byte*>(v.data);
  return {p, p + v.numel() * static_cast<int64_t>(dtype_size(v.dtype))};
}

void run_tiles(FuzzInput& in, IfaFuzzCase& f) {
  IfaArgs& a = f.args;
  std::vector<Slot> slots = f.slots();
  f.mem.snapshot(slots);
  std::unique_ptr<IfaPlan> plan;
  if (IfaPlan::create(a, &plan) != Status::kSuccess || a.query.device.type != DeviceType::kHost) {
    ++stats().refused;  // validation is the other targets' subject
    return;
  }
  core::IfaProblem p;
  if (ifa::validate_ifa(a, &p) != Status::kSuccess)
    violated("create accepted what validate_ifa refuses");
  const uint64_t ws_size = cpu::ifa_workspace_size(p);
  if (ws_size != plan->workspace_size()) violated("the tile kernels' workspace is not the plan's");
  if (!ifa_affordable(f, a, ws_size)) {
    ++stats().planned_only;
    return;
  }
  core::IfaData d;
  ifa::bind_data(p, a, &d);
  Guarded ws(static_cast<size_t>(ws_size), in.below(64));
  const bool pv_tiles = in.flag();
  const cpu::IfaKernels& k =
      pv_tiles ? testing::kIfaKernelsEmuTiles : testing::kIfaKernelsEmuTilesPvFma;
  add_context(pv_tiles ? "emulated tiles, P·V on tiles" : "emulated tiles, P·V on FMAs");
  core::RunContext ctx;
  ctx.num_threads = a.num_threads;
  ctx.workspace = ws.data();
  ctx.workspace_size = ws.size();
  const Status st = cpu::ifa_run(p, d, ctx, k);
  check_status(static_cast<int64_t>(st), last_error_message(), "incre_flash_attention", ifa_names(),
               "tile run");
  f.mem.check_after(slots, true, "tile run");
  ws.check_guards("the workspace");
  if (in.flag()) {  // the same bits at another thread count (and pass width, P·V on tiles)
    const std::vector<std::byte> first = bytes_of(a.attention_out);
    ctx.num_threads = static_cast<int>(1 + (int64_t{a.num_threads} + 1 + in.below(3)) % 4);
    const cpu::IfaKernels& again = pv_tiles && in.flag() ? testing::kIfaKernelsEmuTilesNarrow : k;
    if (cpu::ifa_run(p, d, ctx, again) != st)
      violated("the second tile run returned another status");
    if (bytes_of(a.attention_out) != first) {
      violated("the tile output differs at " + std::to_string(ctx.num_threads) + " threads" +
               (&again != &k ? " with passes of 3 heads" : ""));
    }
    ws.check_guards("the workspace (second run)");
  }
  check_ifa_run(f, a, static_cast<int64_t>(st), "tile run");
}

}  // namespace
}  // namespace kvflash::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kvflash;
  using namespace kvflash::fuzz;
  FuzzInput in(data, size);
  ++stats().inputs;
  // The emulated engine's vector parts are the avx512 kernel's (support/ifa_emu_tiles.hpp).
  if (cpu::detected_isa() < cpu::Isa::kAvx512Bf16) {
    ++stats().skipped;
    return 0;
  }
  IfaFuzzCase f;
  if (decode_ifa(in, IfaFeatures{}, &f)) run_tiles(in, f);
  return 0;
}
