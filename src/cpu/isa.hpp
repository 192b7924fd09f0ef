// Run-time instruction-set selection. The library is compiled for plain x86-64; ISA-specific
// translation units (*_avx2.cpp, *_avx512.cpp) are only entered when the CPU and OS support them.
#pragma once

#include <optional>

namespace kvflash::cpu {

/// Ordered levels: each includes the ones below. kAvx512Bf16 runs the avx512 translation units
/// plus their AVX512-BF16 paths (vdpbf16ps); capping at kAvx512 keeps those paths off, so a
/// machine with BF16 also tests the plain AVX-512 code.
enum class Isa { kScalar = 0, kAvx2 = 1, kAvx512 = 2, kAvx512Bf16 = 3 };

const char* isa_name(Isa isa);
/// What this CPU and OS support (CPUID + XGETBV), ignoring any cap.
Isa detected_isa();
/// The ISA kernels use: min(detected, KVFLASH_MAX_ISA=avx512bf16|avx512|avx2|scalar, set_isa_cap()).
Isa active_isa();
/// Whether kernels of isa may run now (active_isa() >= isa). When not, and why is not null, *why
/// says whether the CPU (or OS) lacks it or a cap excludes it (a string with static storage).
bool isa_available(Isa isa, const char** why);
/// Programmatic cap for tests and benchmarks (nullopt removes it). Not thread-safe against
/// concurrent kernel calls; set it between calls.
void set_isa_cap(std::optional<Isa> cap);

}  // namespace kvflash::cpu
