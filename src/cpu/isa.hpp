// Run-time instruction-set selection. The library is compiled for plain x86-64; ISA-specific
// translation units (*_avx2.cpp, *_avx512.cpp) are only entered when the CPU and OS support them.
#pragma once

#include <optional>

namespace kvflash::cpu {

enum class Isa { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };

const char* isa_name(Isa isa);
/// What this CPU and OS support (CPUID + XGETBV), ignoring any cap.
Isa detected_isa();
/// The ISA kernels use: min(detected, KVFLASH_MAX_ISA=avx512|avx2|scalar, set_isa_cap()).
Isa active_isa();
/// Programmatic cap for tests and benchmarks (nullopt removes it). Not thread-safe against
/// concurrent kernel calls; set it between calls.
void set_isa_cap(std::optional<Isa> cap);

}  // namespace kvflash::cpu
