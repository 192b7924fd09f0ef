// ISA detection and capping: names, the programmatic cap, the KVFLASH_MAX_ISA cap, and detection
// against the compiler's own CPU feature probe.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "cpu/isa.hpp"

namespace kvflash::cpu {
namespace {

Isa min_isa(Isa a, Isa b) { return static_cast<int>(a) < static_cast<int>(b) ? a : b; }

class IsaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const char* env = std::getenv("KVFLASH_MAX_ISA")) saved_env_ = env, had_env_ = true;
    unsetenv("KVFLASH_MAX_ISA");
    set_isa_cap(std::nullopt);
  }
  void TearDown() override {
    set_isa_cap(std::nullopt);
    if (had_env_) {
      setenv("KVFLASH_MAX_ISA", saved_env_.c_str(), 1);
    } else {
      unsetenv("KVFLASH_MAX_ISA");
    }
  }
  std::string saved_env_;
  bool had_env_ = false;
};

TEST_F(IsaTest, Names) {
  EXPECT_STREQ(isa_name(Isa::kScalar), "scalar");
  EXPECT_STREQ(isa_name(Isa::kAvx2), "avx2");
  EXPECT_STREQ(isa_name(Isa::kAvx512), "avx512");
  EXPECT_STREQ(isa_name(Isa::kAvx512Bf16), "avx512bf16");
  EXPECT_STREQ(isa_name(Isa::kAmx), "amx");
  for (int i = 0; i <= static_cast<int>(kTopIsa); ++i) {
    const Isa isa = static_cast<Isa>(i);
    EXPECT_EQ(isa_from_name(isa_name(isa)), isa);
  }
  EXPECT_EQ(isa_from_name("avx512amx"), std::nullopt);
  EXPECT_EQ(isa_from_name(nullptr), std::nullopt);
}

TEST_F(IsaTest, DetectionMatchesCompilerProbe) {
  // __builtin_cpu_supports reads CPUID only; on Linux the OS enables every state it reports.
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                    __builtin_cpu_supports("bmi2");
  const bool bf16 = avx512 && __builtin_cpu_supports("avx512bf16");
  // The amx level also needs the OS (XCR0) and the permission, which the probe does not see:
  // kAvx512Bf16 and kAmx are both right for a CPU with AVX512-BF16, told apart by the features.
  const CpuFeatures& f = cpu_features();
  const bool amx = bf16 && f.amx_tile && f.amx_bf16 && f.amx_int8 && f.xcr0_tile &&
                   f.palette_ok && f.tile_permission;
  const Isa expected = !avx2 ? Isa::kScalar
                       : !avx512 ? Isa::kAvx2
                       : amx     ? Isa::kAmx
                       : bf16    ? Isa::kAvx512Bf16
                                 : Isa::kAvx512;
  EXPECT_EQ(detected_isa(), expected) << "detected " << isa_name(detected_isa())
                                      << "; amx: " << amx_unavailable_reason();
  EXPECT_EQ(active_isa(), detected_isa());
}

// The reason is empty exactly when amx was detected, and names the first missing piece otherwise.
TEST_F(IsaTest, AmxReason) {
  const std::string reason = amx_unavailable_reason();
  if (detected_isa() == Isa::kAmx) {
    EXPECT_EQ(reason, "");
    EXPECT_TRUE(cpu_features().tile_permission);
  } else {
    EXPECT_NE(reason, "");
    EXPECT_FALSE(cpu_features().tile_permission) << reason;
  }
  std::printf("detected %s; amx: %s\n", isa_name(detected_isa()),
              reason.empty() ? "available" : reason.c_str());
}

// CPUID's AMX bits against the flags Linux lists in /proc/cpuinfo (the kernel lists amx_tile,
// amx_bf16 and amx_int8 when it supports them; a kernel without AMX support hides them, so only
// "listed implies detected" is checked).
TEST_F(IsaTest, AmxBitsMatchProcCpuinfo) {
  std::ifstream in("/proc/cpuinfo");
  if (!in) GTEST_SKIP() << "no /proc/cpuinfo";
  std::string line, flags;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) == 0) {
      flags = " " + line.substr(line.find(':') + 1) + " ";
      break;
    }
  }
  if (flags.empty()) GTEST_SKIP() << "no flags line in /proc/cpuinfo";
  const auto listed = [&](const char* flag) {
    return flags.find(std::string(" ") + flag + " ") != std::string::npos;
  };
  const CpuFeatures& f = cpu_features();
  EXPECT_TRUE(!listed("amx_tile") || f.amx_tile);
  EXPECT_TRUE(!listed("amx_bf16") || f.amx_bf16);
  EXPECT_TRUE(!listed("amx_int8") || f.amx_int8);
  EXPECT_TRUE(!listed("avx512_fp16") || f.avx512_fp16);
}

TEST_F(IsaTest, ProgrammaticCap) {
  for (Isa cap : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512, Isa::kAvx512Bf16, Isa::kAmx}) {
    set_isa_cap(cap);
    EXPECT_EQ(active_isa(), min_isa(cap, detected_isa())) << isa_name(cap);
  }
  set_isa_cap(std::nullopt);
  EXPECT_EQ(active_isa(), detected_isa());
}

TEST_F(IsaTest, EnvironmentCap) {
  setenv("KVFLASH_MAX_ISA", "scalar", 1);
  EXPECT_EQ(active_isa(), Isa::kScalar);
  setenv("KVFLASH_MAX_ISA", "avx2", 1);
  EXPECT_EQ(active_isa(), min_isa(Isa::kAvx2, detected_isa()));
  setenv("KVFLASH_MAX_ISA", "avx512", 1);
  EXPECT_EQ(active_isa(), min_isa(Isa::kAvx512, detected_isa()));
  setenv("KVFLASH_MAX_ISA", "avx512bf16", 1);
  EXPECT_EQ(active_isa(), min_isa(Isa::kAvx512Bf16, detected_isa()));
  setenv("KVFLASH_MAX_ISA", "amx", 1);
  EXPECT_EQ(active_isa(), detected_isa());
  setenv("KVFLASH_MAX_ISA", "sse9", 1);  // unknown: ignored
  EXPECT_EQ(active_isa(), detected_isa());
}

TEST_F(IsaTest, CapsCombineToTheLowest) {
  setenv("KVFLASH_MAX_ISA", "avx2", 1);
  set_isa_cap(Isa::kScalar);
  EXPECT_EQ(active_isa(), Isa::kScalar);
  setenv("KVFLASH_MAX_ISA", "scalar", 1);
  set_isa_cap(Isa::kAvx512);
  EXPECT_EQ(active_isa(), Isa::kScalar);
}

}  // namespace
}  // namespace kvflash::cpu
