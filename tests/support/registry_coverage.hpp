// Whether a test file covers every operator of the registry (src/ops/operators.def): the tests a
// file writes per operator are named after it, so a new registry line without its test fails.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kvflash::testing {

/// An operator's names a test may carry: its type prefix (Op: "KvCache") and its plan class
/// without "Plan" ("ScatterPaKvCache"); a composite operator has the second only.
struct RegistryOperator {
  const char* op;
  std::string type_name;
  std::string plan_name;
};

inline std::vector<RegistryOperator> registry_operators(bool with_composites) {
  const auto base = [](std::string plan) { return plan.substr(0, plan.size() - 4); };
  std::vector<RegistryOperator> ops;
#define KVFLASH_OPERATOR(op, Op, Plan, Args) ops.push_back({#op, #Op, base(#Plan)});
#include "ops/operators.def"
  if (with_composites) {
#define KVFLASH_COMPOSITE(op, Plan, Args) ops.push_back({#op, "", base(#Plan)});
#include "ops/operators.def"
  }
  return ops;
}

/// The short names of the operators that no registered test (run or filtered out) matches:
/// matches(suite name, test name, name) for name each of the operator's names.
template <typename Matches>
std::vector<std::string> operators_without_test(bool with_composites, Matches matches) {
  const ::testing::UnitTest& unit = *::testing::UnitTest::GetInstance();
  std::vector<std::string> missing;
  for (const RegistryOperator& o : registry_operators(with_composites)) {
    bool found = false;
    for (int i = 0; i < unit.total_test_suite_count() && !found; ++i) {
      const ::testing::TestSuite& suite = *unit.GetTestSuite(i);
      for (int j = 0; j < suite.total_test_count() && !found; ++j) {
        for (const std::string& name : {o.type_name, o.plan_name}) {
          if (!name.empty() &&
              matches(std::string(suite.name()), std::string(suite.GetTestInfo(j)->name()), name))
            found = true;
        }
      }
    }
    if (!found) missing.push_back(o.op);
  }
  return missing;
}

}  // namespace kvflash::testing
