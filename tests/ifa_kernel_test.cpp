// Kernel vs reference: every case of the tier (KVFLASH_TEST_TIER), every ISA this CPU supports,
// a few thread counts, through the public API; every output element checked.
#include <gtest/gtest.h>

#include "ifa_reference.hpp"
#include "support/compare.hpp"
#include "support/ifa_cases.hpp"
#include "support/ifa_run.hpp"

namespace kvflash::testing {
namespace {

constexpr int kThreadCounts[] = {1, 2, 5};

class IfaKernelTest : public ::testing::TestWithParam<IfaCase> {};

TEST_P(IfaKernelTest, MatchesReference) {
  const IfaCase& c = GetParam();
  IfaCaseData data(c);
  const reference::IfaReference ref = reference::ifa_reference(data.args());
  IfaCompareOptions options;
  options.allow_mostly_empty = c.expect_mostly_empty;
  for (cpu::Isa isa : isas_to_test()) {
    ScopedIsaCap cap(isa);
    for (int threads : kThreadCounts) {
      SCOPED_TRACE(std::string("isa=") + cpu::isa_name(isa) +
                   " threads=" + std::to_string(threads));
      data.poison_outputs();
      data.mutable_args().num_threads = threads;
      ASSERT_TRUE(run_ifa(data.args())) << c.name();
      ASSERT_TRUE(compare_ifa_output(c.name(), data.args(), ref, options));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, IfaKernelTest, ::testing::ValuesIn(ifa_cases_for_run()),
                         [](const ::testing::TestParamInfo<IfaCase>& info) {
                           return info.param.test_name();
                         });

}  // namespace
}  // namespace kvflash::testing
