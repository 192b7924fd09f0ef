// A FiaCase reduced to the CPU prefill kernel's FiaParams / FiaPointers (src/cpu/fia/fia_kernel.hpp)
// the way the operator's binding will (issue 18's recipe): per-batch rows, offsets and the
// visibility band of D3/D4, pse / mask columns, antiquant and post-quant parameters, the shared
// prefix and tensor lists. Shared by tests/fia_kernel_test.cpp and tests/no_alloc_test.cpp.
#pragma once

#include <vector>

#include "cpu/fia/fia_kernel.hpp"
#include "fia_reference.hpp"
#include "support/fia_cases.hpp"

namespace kvflash::testing {

struct FiaBound {
  cpu::FiaParams p;
  cpu::FiaPointers d;
  std::vector<cpu::FiaBatch> batches;
  std::vector<cpu::FiaPadRow> pad;
  std::vector<const void*> k_list, v_list;
};

/// Binds case c (its data: a) for the kernel. The result points into a's buffers and its own
/// vectors (copy it only before taking p.batches apart, as the determinism test does).
FiaBound bind(const FiaCase& c, const reference::FiaCall& a);

/// Whether the kernel covers c (value D a multiple of 16).
inline bool fia_kernel_covers(const FiaCase& c) { return c.dv() % 16 == 0; }

}  // namespace kvflash::testing
