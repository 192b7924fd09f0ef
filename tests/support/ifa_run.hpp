// Running one IFA call through the public API (IfaPlan::create + run) for the kernel sweeps, the
// ISAs a test should cover on this machine, and the kernel tables tests run directly (the
// matrix-engine body on the software model of the tiles).
#pragma once

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "cpu/ifa/ifa_kernel.hpp"
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

/// Validates and binds args as a plan does, then runs kernel table k on them (cpu::ifa_run) with a
/// fresh workspace: a backend entry's run with the kernels chosen by the test.
::testing::AssertionResult run_ifa_kernels(const IfaArgs& args, const cpu::IfaKernels& k);

/// One way a test runs IFA here: the public API at one ISA cap, or a kernel table run directly.
struct IfaPath {
  std::string name;                          ///< the ISA's name, or the kernel table's
  std::optional<cpu::Isa> isa;               ///< the cap of a public-API path
  const cpu::IfaKernels* kernels = nullptr;  ///< the kernels of a direct path
  ::testing::AssertionResult run(const IfaArgs& args) const;
};
/// isas_to_test() through the public API, then the matrix-engine body on the software model of
/// the tiles (support/ifa_emu_tiles.hpp: P·V on tiles, and on FMAs) where this machine can run it.
std::vector<IfaPath> ifa_paths();

}  // namespace kvflash::testing
