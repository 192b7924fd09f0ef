#include "support/ifa_run.hpp"

#include <cstddef>
#include <memory>

#include "core/backend.hpp"
#include "ops/ifa/ifa_bind.hpp"
#include "ops/ifa/ifa_problem.hpp"
#include "ops/ifa/ifa_validate.hpp"
#include "support/ifa_emu_tiles.hpp"
#include "support/workspace_buffer.hpp"

namespace kvflash::testing {

std::vector<cpu::Isa> isas_to_test() {
  std::vector<cpu::Isa> isas;
  const int top = static_cast<int>(cpu::detected_isa());
  for (int i = 0; i <= top; ++i) isas.push_back(static_cast<cpu::Isa>(i));
  return isas;
}

::testing::AssertionResult run_ifa(const IfaArgs& args) {
  std::unique_ptr<IfaPlan> plan;
  const Status created = IfaPlan::create(args, &plan);
  if (created != Status::kSuccess || !plan) {
    return ::testing::AssertionFailure() << "IfaPlan::create returned " << static_cast<int>(created)
                                         << ": " << last_error_message();
  }
  WorkspaceBuffer ws(plan->workspace_size());
  const Status ran = plan->run(args, ws.data(), ws.size());
  if (ran != Status::kSuccess) {
    return ::testing::AssertionFailure()
           << "IfaPlan::run returned " << static_cast<int>(ran) << ": " << last_error_message();
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult run_ifa_kernels(const IfaArgs& args, const cpu::IfaKernels& k) {
  core::IfaProblem p;
  if (const Status s = ifa::validate_ifa(args, &p); s != Status::kSuccess) {
    return ::testing::AssertionFailure()
           << "validate_ifa returned " << static_cast<int>(s) << ": " << last_error_message();
  }
  core::IfaData d;
  ifa::bind_data(p, args, &d);
  WorkspaceBuffer ws(cpu::ifa_workspace_size(p));
  core::RunContext ctx;
  ctx.num_threads = args.num_threads;
  ctx.workspace = ws.data();
  ctx.workspace_size = ws.size();
  if (const Status s = cpu::ifa_run(p, d, ctx, k); s != Status::kSuccess) {
    return ::testing::AssertionFailure()
           << "ifa_run returned " << static_cast<int>(s) << ": " << last_error_message();
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult IfaPath::run(const IfaArgs& args) const {
  if (kernels != nullptr) return run_ifa_kernels(args, *kernels);
  ScopedIsaCap cap(*isa);
  return run_ifa(args);
}

std::vector<IfaPath> ifa_paths() {
  std::vector<IfaPath> paths;
  for (cpu::Isa isa : isas_to_test()) paths.push_back({cpu::isa_name(isa), isa, nullptr});
  // The emulated engines' vector parts are the avx512 kernel's, with AVX512-BF16 flags.
  if (cpu::detected_isa() >= cpu::Isa::kAvx512Bf16) {
    paths.push_back({"emulated-amx", std::nullopt, &kIfaKernelsEmuTiles});
    paths.push_back({"emulated-amx-pv-fma", std::nullopt, &kIfaKernelsEmuTilesPvFma});
  }
  return paths;
}

}  // namespace kvflash::testing
