// Run-time ISA detection. CPUID says what the CPU implements; XGETBV says whether the OS saves the
// wider register state on context switches. Both are needed: a CPU with AVX-512 under an OS that
// does not enable ZMM state faults on the first AVX-512 instruction. The matrix engine needs a
// third check: Linux enables the 8 KiB tile data state per process, on request (arch_prctl), so a
// process that never asks faults on its first tile load even when CPUID and XCR0 say yes.
#include "cpu/isa.hpp"

#include <cpuid.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#endif

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/backend.hpp"

namespace kvflash::cpu {
namespace {

// CPUID leaf 1, ECX.
constexpr uint32_t kFmaBit = 1u << 12;
constexpr uint32_t kOsxsaveBit = 1u << 27;
constexpr uint32_t kAvxBit = 1u << 28;
constexpr uint32_t kF16cBit = 1u << 29;
// CPUID leaf 7 subleaf 0, EBX.
constexpr uint32_t kAvx2Bit = 1u << 5;
constexpr uint32_t kBmi2Bit = 1u << 8;
constexpr uint32_t kAvx512FBit = 1u << 16;
constexpr uint32_t kAvx512DqBit = 1u << 17;
constexpr uint32_t kAvx512BwBit = 1u << 30;
constexpr uint32_t kAvx512VlBit = 1u << 31;
// CPUID leaf 7 subleaf 0, EDX.
constexpr uint32_t kAmxBf16Bit = 1u << 22;
constexpr uint32_t kAvx512Fp16Bit = 1u << 23;
constexpr uint32_t kAmxTileBit = 1u << 24;
constexpr uint32_t kAmxInt8Bit = 1u << 25;
// CPUID leaf 7 subleaf 1, EAX.
constexpr uint32_t kAvx512Bf16Bit = 1u << 5;
constexpr uint32_t kAmxFp16Bit = 1u << 21;
// XCR0: SSE + AVX (YMM upper halves) state; opmask + ZMM0-15 upper halves + ZMM16-31; XTILECFG
// (bit 17) + XTILEDATA (bit 18).
constexpr uint64_t kXcr0Ymm = 0x6;
constexpr uint64_t kXcr0Zmm = 0xe6;
constexpr uint64_t kXcr0Tile = 0x60000;
// Linux arch_prctl codes (asm/prctl.h, not in every libc's headers) and the tile data feature.
constexpr long kArchGetXcompPerm = 0x1022;
constexpr long kArchReqXcompPerm = 0x1023;
constexpr long kXfeatureXtiledata = 18;

// XGETBV through inline assembly: the library is built without -mxsave, so the intrinsic is not
// available in this translation unit. Only executed after CPUID reported OSXSAVE.
uint64_t read_xcr0() {
  uint32_t eax = 0, edx = 0;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (uint64_t{edx} << 32) | eax;
}

struct Detection {
  Isa isa = Isa::kScalar;
  CpuFeatures features;
  char amx_reason[160] = "";
};

void set_reason(Detection* d, const char* reason) {
  std::snprintf(d->amx_reason, sizeof d->amx_reason, "%s", reason);
}

// The tile checks, on a CPU that reached kAvx512Bf16: true when kAmx may be used. Each failure
// leaves its reason; the checks run in the order of their cost (the permission request last, as
// it changes the process: signal frames grow by the 8 KiB tile state).
bool detect_amx(Detection* d) {
  CpuFeatures& f = d->features;
  if (!f.amx_tile) return set_reason(d, "CPUID lacks AMX-TILE (leaf 7 EDX bit 24)"), false;
  if (!f.amx_bf16) return set_reason(d, "CPUID lacks AMX-BF16 (leaf 7 EDX bit 22)"), false;
  if (!f.amx_int8) return set_reason(d, "CPUID lacks AMX-INT8 (leaf 7 EDX bit 25)"), false;
  if (!f.xcr0_tile) {
    return set_reason(d, "the OS does not enable the tile state (XCR0 bits 17-18)"), false;
  }
  unsigned a = 0, b = 0, c = 0, e = 0;
  if (__get_cpuid_max(0, nullptr) < 0x1d) return set_reason(d, "CPUID has no tile leaf 0x1D"), false;
  __cpuid_count(0x1d, 0, a, b, c, e);
  if (a < 1) return set_reason(d, "CPUID leaf 0x1D lists no tile palette 1"), false;
  // Palette 1: EAX = bytes per tile << 16 | total bytes, EBX = max names << 16 | bytes per row,
  // ECX = max rows. The kernels (src/cpu/amx/amx_tile.hpp) are written for 8 x 16 x 64.
  __cpuid_count(0x1d, 1, a, b, c, e);
  f.palette_ok = (b & 0xffff) == 64 && (b >> 16) >= 8 && (c & 0xffff) >= 16;
  if (!f.palette_ok) {
    return set_reason(d, "tile palette 1 is not 8 tiles of 16 rows of 64 bytes (CPUID 0x1D.1)"),
           false;
  }
#if defined(__linux__)
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0) {
    char msg[160];
    std::snprintf(msg, sizeof msg, "arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA) refused: %s",
                  std::strerror(errno));
    return set_reason(d, msg), false;
  }
  unsigned long long perm = 0;
  if (syscall(SYS_arch_prctl, kArchGetXcompPerm, &perm) != 0 ||
      (perm & (1ull << kXfeatureXtiledata)) == 0) {
    return set_reason(d, "arch_prctl(ARCH_GET_XCOMP_PERM) does not confirm XTILEDATA"), false;
  }
  f.tile_permission = true;
  return true;
#else
  return set_reason(d, "no tile data permission request on this OS (Linux only)"), false;
#endif
}

Detection detect() {
  Detection d;
  set_reason(&d, "the CPU or OS lacks AVX512-BF16, which the amx level includes");
  unsigned a = 0, b = 0, c = 0, e = 0;
  if (__get_cpuid(0, &a, &b, &c, &e)) {
    // The vendor string is EBX, EDX, ECX: "Genu" "ineI" "ntel".
    d.features.intel = b == 0x756e6547u && e == 0x49656e69u && c == 0x6c65746eu;
  }
  if (!__get_cpuid(1, &a, &b, &c, &e)) return d;
  const uint32_t leaf1_ecx = c;
  if ((leaf1_ecx & kOsxsaveBit) == 0 || (leaf1_ecx & kAvxBit) == 0) return d;
  const uint64_t xcr0 = read_xcr0();
  d.features.xcr0 = xcr0;
  if ((xcr0 & kXcr0Ymm) != kXcr0Ymm) return d;
  if (__get_cpuid_max(0, nullptr) < 7) return d;
  __cpuid_count(7, 0, a, b, c, e);
  const uint32_t leaf7_ebx = b;
  const uint32_t leaf7_edx = e;
  __cpuid_count(7, 1, a, b, c, e);
  const uint32_t leaf7_1_eax = a;
  CpuFeatures& f = d.features;
  f.amx_tile = (leaf7_edx & kAmxTileBit) != 0;
  f.amx_bf16 = (leaf7_edx & kAmxBf16Bit) != 0;
  f.amx_int8 = (leaf7_edx & kAmxInt8Bit) != 0;
  f.avx512_fp16 = (leaf7_edx & kAvx512Fp16Bit) != 0;
  f.amx_fp16 = (leaf7_1_eax & kAmxFp16Bit) != 0;
  f.xcr0_tile = (xcr0 & kXcr0Tile) == kXcr0Tile;
  // The AVX2 translation units are compiled with -mavx2 -mfma -mf16c -mbmi2: all four must exist.
  const bool avx2 = (leaf7_ebx & kAvx2Bit) && (leaf7_ebx & kBmi2Bit) && (leaf1_ecx & kFmaBit) &&
                    (leaf1_ecx & kF16cBit);
  if (!avx2) return d;
  d.isa = Isa::kAvx2;
  const uint32_t avx512_bits = kAvx512FBit | kAvx512DqBit | kAvx512BwBit | kAvx512VlBit;
  if ((leaf7_ebx & avx512_bits) != avx512_bits || (xcr0 & kXcr0Zmm) != kXcr0Zmm) return d;
  d.isa = Isa::kAvx512;
  if ((leaf7_1_eax & kAvx512Bf16Bit) == 0) return d;
  d.isa = Isa::kAvx512Bf16;
  if (!detect_amx(&d)) return d;
  d.isa = Isa::kAmx;
  d.amx_reason[0] = '\0';
  return d;
}

// The once-per-process detection (a function-local static: thread-safe initialisation). Under
// KVFLASH_VERBOSE=dispatch (core::verbose_dispatch) it prints the level and why it is below amx
// to stderr, once; the per-plan dispatch lines (core/backend.hpp) give isa_available's reasons.
const Detection& detection() {
  static const Detection d = [] {
    Detection r = detect();
    if (core::verbose_dispatch()) {
      std::fprintf(stderr, "kvflash: detected isa %s%s%s\n", isa_name(r.isa),
                   r.amx_reason[0] != '\0' ? "; amx unavailable: " : "", r.amx_reason);
    }
    return r;
  }();
  return d;
}

constexpr int kNoCap = -1;
std::atomic<int> g_cap{kNoCap};

// KVFLASH_MAX_ISA, read on every call so a test or tool may set it before any kernel runs. An
// unknown value is ignored (no cap) rather than failing: this is a tuning knob, not an argument.
int env_cap() {
  const char* s = std::getenv("KVFLASH_MAX_ISA");
  if (s == nullptr) return kNoCap;
  const std::optional<Isa> isa = isa_from_name(s);
  return isa ? static_cast<int>(*isa) : kNoCap;
}

}  // namespace

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::kScalar:
      return "scalar";
    case Isa::kAvx2:
      return "avx2";
    case Isa::kAvx512:
      return "avx512";
    case Isa::kAvx512Bf16:
      return "avx512bf16";
    case Isa::kAmx:
      return "amx";
  }
  return "unknown";
}

std::optional<Isa> isa_from_name(const char* name) {
  if (name == nullptr) return std::nullopt;
  for (int i = 0; i <= static_cast<int>(kTopIsa); ++i) {
    if (std::strcmp(name, isa_name(static_cast<Isa>(i))) == 0) return static_cast<Isa>(i);
  }
  return std::nullopt;
}

Isa detected_isa() { return detection().isa; }

const CpuFeatures& cpu_features() { return detection().features; }

const char* amx_unavailable_reason() { return detection().amx_reason; }

Isa active_isa() {
  int isa = static_cast<int>(detected_isa());
  const int env = env_cap();
  if (env != kNoCap && env < isa) isa = env;
  const int cap = g_cap.load(std::memory_order_relaxed);
  if (cap != kNoCap && cap < isa) isa = cap;
  return static_cast<Isa>(isa);
}

bool isa_available(Isa isa, const char** why) {
  if (active_isa() >= isa) return true;
  if (why != nullptr) {
    const Isa detected = detected_isa();
    if (detected >= isa) {
      *why = "capped by KVFLASH_MAX_ISA or cpu::set_isa_cap";
    } else if (isa == Isa::kAmx && detected == Isa::kAvx512Bf16) {
      *why = amx_unavailable_reason();  // which of the tile checks failed
    } else {
      *why = "this CPU or OS does not support the instruction set";
    }
  }
  return false;
}

void set_isa_cap(std::optional<Isa> cap) {
  g_cap.store(cap ? static_cast<int>(*cap) : kNoCap, std::memory_order_relaxed);
}

}  // namespace kvflash::cpu
