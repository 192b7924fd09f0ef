// ISA detection and capping: names, the programmatic cap, the KVFLASH_MAX_ISA cap, and detection
// against the compiler's own CPU feature probe.
#include <gtest/gtest.h>

#include <cstdlib>
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
}

TEST_F(IsaTest, DetectionMatchesCompilerProbe) {
  // __builtin_cpu_supports reads CPUID only; on Linux the OS enables every state it reports.
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                    __builtin_cpu_supports("bmi2");
  const bool bf16 = avx512 && __builtin_cpu_supports("avx512bf16");
  const Isa expected = !avx2 ? Isa::kScalar
                       : !avx512 ? Isa::kAvx2
                       : bf16    ? Isa::kAvx512Bf16
                                 : Isa::kAvx512;
  EXPECT_EQ(detected_isa(), expected) << "detected " << isa_name(detected_isa());
  EXPECT_EQ(active_isa(), detected_isa());
}

TEST_F(IsaTest, ProgrammaticCap) {
  for (Isa cap : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512, Isa::kAvx512Bf16}) {
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
