// Every SFA case of the shared list, on every ISA this CPU has, checked element by element against
// the double-precision reference.
#include <gtest/gtest.h>

#include <cstddef>
#include <memory>
#include <vector>

#include "cpu/isa.hpp"
#include "kvflash/sfa.hpp"
#include "sfa_reference.hpp"
#include "support/sfa_cases.hpp"
#include "support/sfa_compare.hpp"

namespace kvflash::testing {
namespace {

class SfaKernelTest : public ::testing::TestWithParam<SfaCase> {
 protected:
  void TearDown() override { cpu::set_isa_cap(std::nullopt); }
};

TEST_P(SfaKernelTest, MatchesReferenceOnEveryIsa) {
  const SfaCase& c = GetParam();
  SfaCaseData data(c);
  const reference::SfaReference ref = reference::sfa_reference(data.args());
  for (int isa = 0; isa <= static_cast<int>(cpu::detected_isa()); ++isa) {
    cpu::set_isa_cap(static_cast<cpu::Isa>(isa));
    SCOPED_TRACE(cpu::isa_name(cpu::active_isa()));
    data.poison_outputs();
    std::unique_ptr<SfaPlan> plan;
    ASSERT_EQ(SfaPlan::create(data.args(), &plan), Status::kSuccess) << last_error_message();
    std::vector<std::byte> ws(plan->workspace_size());
    ASSERT_EQ(plan->run(data.args(), ws.data(), ws.size()), Status::kSuccess)
        << last_error_message();
    EXPECT_TRUE(compare_sfa_output(c.name(), data.args(), ref, c.expect_mostly_empty));
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, SfaKernelTest, ::testing::ValuesIn(sfa_cases_for_run()),
                         [](const ::testing::TestParamInfo<SfaCase>& info) {
                           return std::to_string(info.index) + "_" + info.param.test_name();
                         });

}  // namespace
}  // namespace kvflash::testing
