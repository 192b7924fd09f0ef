#include "support/ifa_run.hpp"

#include <cstddef>
#include <memory>

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

}  // namespace kvflash::testing
