#include "support/fia_run.hpp"

#include "core/backend.hpp"
#include "cpu/fia/fia_entry.hpp"
#include "cpu/ifa/ifa_kernel_isa.hpp"
#include "ops/fia/fia_bind.hpp"
#include "ops/fia/fia_validate.hpp"
#include "support/workspace_buffer.hpp"

namespace kvflash::testing {

::testing::AssertionResult run_fia_kernels(const FiaArgs& args, const cpu::FiaKernels& k) {
  core::FiaProblem p;
  if (const Status s = fia::validate(args, &p); s != Status::kSuccess) {
    return ::testing::AssertionFailure()
           << "validate returned " << static_cast<int>(s) << ": " << last_error_message();
  }
  core::FiaData d;
  fia::bind_data(p, args, &d);
  WorkspaceBuffer ws(cpu::fia_entry_workspace_size(p));
  core::RunContext ctx;
  ctx.num_threads = args.num_threads;
  ctx.workspace = ws.data();
  ctx.workspace_size = ws.size();
  if (const Status s = cpu::fia_entry_run(p, d, ctx, k, cpu::avx512::kIfaKernelsBf16);
      s != Status::kSuccess) {
    return ::testing::AssertionFailure()
           << "fia_entry_run returned " << static_cast<int>(s) << ": " << last_error_message();
  }
  return ::testing::AssertionSuccess();
}

}  // namespace kvflash::testing
