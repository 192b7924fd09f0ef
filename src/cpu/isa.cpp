// Run-time ISA detection. CPUID says what the CPU implements; XGETBV says whether the OS saves the
// wider register state on context switches. Both are needed: a CPU with AVX-512 under an OS that
// does not enable ZMM state faults on the first AVX-512 instruction.
#include "cpu/isa.hpp"

#include <cpuid.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>

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
// CPUID leaf 7 subleaf 1, EAX.
constexpr uint32_t kAvx512Bf16Bit = 1u << 5;
// XCR0: SSE + AVX (YMM upper halves) state; opmask + ZMM0-15 upper halves + ZMM16-31.
constexpr uint64_t kXcr0Ymm = 0x6;
constexpr uint64_t kXcr0Zmm = 0xe6;

// XGETBV through inline assembly: the library is built without -mxsave, so the intrinsic is not
// available in this translation unit. Only executed after CPUID reported OSXSAVE.
uint64_t read_xcr0() {
  uint32_t eax = 0, edx = 0;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (uint64_t{edx} << 32) | eax;
}

Isa detect() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return Isa::kScalar;
  const uint32_t leaf1_ecx = c;
  if ((leaf1_ecx & kOsxsaveBit) == 0 || (leaf1_ecx & kAvxBit) == 0) return Isa::kScalar;
  const uint64_t xcr0 = read_xcr0();
  if ((xcr0 & kXcr0Ymm) != kXcr0Ymm) return Isa::kScalar;
  if (__get_cpuid_max(0, nullptr) < 7) return Isa::kScalar;
  __cpuid_count(7, 0, a, b, c, d);
  const uint32_t leaf7_ebx = b;
  // The AVX2 translation units are compiled with -mavx2 -mfma -mf16c -mbmi2: all four must exist.
  const bool avx2 = (leaf7_ebx & kAvx2Bit) && (leaf7_ebx & kBmi2Bit) && (leaf1_ecx & kFmaBit) &&
                    (leaf1_ecx & kF16cBit);
  if (!avx2) return Isa::kScalar;
  const uint32_t avx512_bits = kAvx512FBit | kAvx512DqBit | kAvx512BwBit | kAvx512VlBit;
  if ((leaf7_ebx & avx512_bits) == avx512_bits && (xcr0 & kXcr0Zmm) == kXcr0Zmm) {
    __cpuid_count(7, 1, a, b, c, d);
    return (a & kAvx512Bf16Bit) ? Isa::kAvx512Bf16 : Isa::kAvx512;
  }
  return Isa::kAvx2;
}

constexpr int kNoCap = -1;
std::atomic<int> g_cap{kNoCap};

// KVFLASH_MAX_ISA, read on every call so a test or tool may set it before any kernel runs. An
// unknown value is ignored (no cap) rather than failing: this is a tuning knob, not an argument.
int env_cap() {
  const char* s = std::getenv("KVFLASH_MAX_ISA");
  if (s == nullptr) return kNoCap;
  if (std::strcmp(s, "scalar") == 0) return static_cast<int>(Isa::kScalar);
  if (std::strcmp(s, "avx2") == 0) return static_cast<int>(Isa::kAvx2);
  if (std::strcmp(s, "avx512") == 0) return static_cast<int>(Isa::kAvx512);
  if (std::strcmp(s, "avx512bf16") == 0) return static_cast<int>(Isa::kAvx512Bf16);
  return kNoCap;
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
  }
  return "unknown";
}

Isa detected_isa() {
  static const Isa detected = detect();
  return detected;
}

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
    *why = detected_isa() >= isa ? "capped by KVFLASH_MAX_ISA or cpu::set_isa_cap"
                                 : "this CPU or OS does not support the instruction set";
  }
  return false;
}

void set_isa_cap(std::optional<Isa> cap) {
  g_cap.store(cap ? static_cast<int>(*cap) : kNoCap, std::memory_order_relaxed);
}

}  // namespace kvflash::cpu
