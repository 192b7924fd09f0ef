#include "support/sfa_run.hpp"

#include <cstddef>
#include <vector>

#include "core/backend.hpp"
#include "ops/sfa/sfa_bind.hpp"
#include "ops/sfa/sfa_problem.hpp"
#include "ops/sfa/sfa_validate.hpp"

namespace kvflash::testing {

::testing::AssertionResult run_sfa_kernels(const SfaArgs& args, const cpu::SfaKernels& k) {
  core::SfaProblem p;
  if (const Status s = sfa::validate(args, &p); s != Status::kSuccess) {
    return ::testing::AssertionFailure()
           << "sfa::validate returned " << static_cast<int>(s) << ": " << last_error_message();
  }
  core::SfaData d;
  sfa::bind_data(p, args, &d);
  std::vector<std::byte> ws(cpu::sfa_workspace_size(p));
  core::RunContext ctx;
  ctx.num_threads = args.num_threads;
  ctx.workspace = ws.data();
  ctx.workspace_size = ws.size();
  if (const Status s = cpu::sfa_run(p, d, ctx, k); s != Status::kSuccess) {
    return ::testing::AssertionFailure()
           << "sfa_run returned " << static_cast<int>(s) << ": " << last_error_message();
  }
  return ::testing::AssertionSuccess();
}

}  // namespace kvflash::testing
