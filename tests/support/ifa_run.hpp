// Running one IFA call through the public API (IfaPlan::create + run) for the kernel sweeps, and
// the ISAs a test should cover on this machine.
#pragma once

#include <gtest/gtest.h>

#include <vector>

#include "cpu/isa.hpp"
#include "kvflash/ifa.hpp"

namespace kvflash::testing {

/// Every ISA from scalar up to what this CPU supports (ignoring KVFLASH_MAX_ISA and caps).
std::vector<cpu::Isa> isas_to_test();

/// Sets the ISA cap for the lifetime of the object and removes it afterwards.
class ScopedIsaCap {
 public:
  explicit ScopedIsaCap(cpu::Isa isa) { cpu::set_isa_cap(isa); }
  ~ScopedIsaCap() { cpu::set_isa_cap(std::nullopt); }
  ScopedIsaCap(const ScopedIsaCap&) = delete;
  ScopedIsaCap& operator=(const ScopedIsaCap&) = delete;
};

/// create + run with a fresh workspace; a failure names the status and last_error_message().
::testing::AssertionResult run_ifa(const IfaArgs& args);

}  // namespace kvflash::testing
