// Run-time instruction-set selection. The library is compiled for plain x86-64; ISA-specific
// translation units (*_avx2.cpp, *_avx512.cpp, *_amx.cpp) are only entered when the CPU and OS
// support them.
#pragma once

#include <optional>

namespace kvflash::cpu {

/// Ordered levels: each includes the ones below. kAvx512Bf16 runs the avx512 translation units
/// plus their AVX512-BF16 paths (vdpbf16ps); capping at kAvx512 keeps those paths off, so a
/// machine with BF16 also tests the plain AVX-512 code. kAmx adds the matrix engine (AMX-TILE,
/// AMX-BF16 and AMX-INT8 tiles, src/cpu/amx/): detected only when the CPU has the three, the OS
/// enables the tile state in XCR0 and Linux grants this process the tile data permission; a
/// level a kernel has no code of its own for runs the kernel of the level below.
enum class Isa { kScalar = 0, kAvx2 = 1, kAvx512 = 2, kAvx512Bf16 = 3, kAmx = 4 };

/// The highest level; loops over levels run from kScalar to min(detected_isa(), kTopIsa).
inline constexpr Isa kTopIsa = Isa::kAmx;

const char* isa_name(Isa isa);
/// The level of a name isa_name() gives ("scalar", "avx2", "avx512", "avx512bf16", "amx"), nullopt
/// for any other string. KVFLASH_MAX_ISA takes the same names.
std::optional<Isa> isa_from_name(const char* name);
/// What this CPU and OS support (CPUID + XGETBV, and for kAmx the Linux permission request),
/// ignoring any cap. The first call detects (thread-safe, once per process).
Isa detected_isa();
/// The ISA kernels use: min(detected, KVFLASH_MAX_ISA=amx|avx512bf16|avx512|avx2|scalar,
/// set_isa_cap()).
Isa active_isa();
/// Whether kernels of isa may run now (active_isa() >= isa). When not, and why is not null, *why
/// says whether the CPU (or OS) lacks it or a cap excludes it (a string with static storage).
bool isa_available(Isa isa, const char** why);
/// Programmatic cap for tests and benchmarks (nullopt removes it). Not thread-safe against
/// concurrent kernel calls; set it between calls.
void set_isa_cap(std::optional<Isa> cap);

/// What detection found about the matrix engine and the other AVX-512 extensions beyond
/// detected_isa(), for `kvflash info`, the dispatch printer and the AMX tests.
struct CpuFeatures {
  bool amx_tile = false;     // CPUID.(7,0):EDX[24]
  bool amx_bf16 = false;     // CPUID.(7,0):EDX[22]
  bool amx_int8 = false;     // CPUID.(7,0):EDX[25]
  bool amx_fp16 = false;     // CPUID.(7,1):EAX[21] (recorded only: no kernel needs it)
  bool avx512_fp16 = false;  // CPUID.(7,0):EDX[23] (recorded only)
  bool xcr0_tile = false;    // XCR0 bits 17 (XTILECFG) and 18 (XTILEDATA) both set
  bool palette_ok = false;   // CPUID.(0x1D,1): palette 1 has 8 tiles of 16 rows of 64 bytes
  bool tile_permission = false;  // arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA) granted
  bool intel = false;  // CPUID leaf 0 vendor "GenuineIntel" (kernels that stream memory tune by it)
  unsigned long long xcr0 = 0;
};
/// The features of this CPU and OS (detected with detected_isa(), same once-per-process run).
const CpuFeatures& cpu_features();
/// Why detected_isa() is below kAmx, e.g. "CPUID lacks AMX-TILE (leaf 7 EDX bit 24)" or
/// "arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA) refused: ..."; an empty string when kAmx was
/// detected. Caps (KVFLASH_MAX_ISA, set_isa_cap) are not reasons: they are reported by
/// active_isa() alone.
const char* amx_unavailable_reason();

}  // namespace kvflash::cpu
