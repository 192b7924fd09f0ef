// The choice of ACL runtime (KVFLASH_ACL_BACKEND, src/aclnn/acl_backend.hpp) and the allocation
// table: the parts of the CUDA runtime that run without a GPU (the device-fault records it decodes
// are tests/device_fault_test.cpp's). The variable is read once per process, so each end-to-end
// case runs in a child process (a death test that re-executes this binary: "threadsafe" style) that
// sets it first.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "acl/acl.h"
#include "aclnn/acl_backend.hpp"
#include "aclnn/acl_objects.hpp"
#include "aclnn/allocation_table.hpp"
#include "core/error.hpp"
#include "cuda/device.hpp"

namespace {

using kvflash::Status;
using kvflash::aclnn::AclBackend;
using kvflash::aclnn::decide_acl_backend;
using kvflash::aclnn::parse_acl_backend;

TEST(AclBackendChoice, ParsesTheTwoRuntimesAndRejectsAnythingElse) {
  AclBackend b = AclBackend::kCuda;
  std::string error;
  EXPECT_TRUE(parse_acl_backend(nullptr, &b, &error));
  EXPECT_EQ(b, AclBackend::kCpu);
  b = AclBackend::kCuda;
  EXPECT_TRUE(parse_acl_backend("", &b, &error));
  EXPECT_EQ(b, AclBackend::kCpu);
  EXPECT_TRUE(parse_acl_backend("cpu", &b, &error));
  EXPECT_EQ(b, AclBackend::kCpu);
  EXPECT_TRUE(parse_acl_backend("cuda", &b, &error));
  EXPECT_EQ(b, AclBackend::kCuda);
  EXPECT_TRUE(error.empty());
  for (const char* bad : {"CUDA", "Cpu", "gpu", "cuda ", " cpu", "npu", "cuda:0", "1"}) {
    error.clear();
    EXPECT_FALSE(parse_acl_backend(bad, &b, &error)) << bad;
    EXPECT_NE(error.find(std::string("KVFLASH_ACL_BACKEND='") + bad + "'"), std::string::npos)
        << error;
    EXPECT_NE(error.find("'cpu'"), std::string::npos) << error;
    EXPECT_NE(error.find("'cuda'"), std::string::npos) << error;
  }
}

TEST(AclBackendChoice, CpuIsAlwaysUsable) {
  for (const char* v : {static_cast<const char*>(nullptr), "", "cpu"}) {
    const auto c = decide_acl_backend(v);
    EXPECT_EQ(c.error, ACL_SUCCESS);
    EXPECT_EQ(c.backend, AclBackend::kCpu);
    EXPECT_TRUE(c.message.empty());
  }
}

TEST(AclBackendChoice, UnknownValueIsInvalidParam) {
  const auto c = decide_acl_backend("vulkan");
  EXPECT_EQ(c.error, ACL_ERROR_INVALID_PARAM);
  EXPECT_NE(c.message.find("'vulkan'"), std::string::npos) << c.message;
}

// "cuda" is usable exactly when this build has CUDA and the process sees a device; otherwise the
// code says which of the two is missing and the message carries CUDA's own reason.
TEST(AclBackendChoice, CudaNeedsTheBuildAndADevice) {
  const auto c = decide_acl_backend("cuda");
  EXPECT_EQ(c.backend, AclBackend::kCuda);
#if defined(KVFLASH_HAVE_CUDA)
  if (kvflash::cuda::device_present()) {
    EXPECT_EQ(c.error, ACL_SUCCESS) << c.message;
  } else {
    EXPECT_EQ(c.error, ACL_ERROR_INVALID_DEVICE);
    EXPECT_NE(c.message.find(kvflash::cuda::device_info().reason), std::string::npos) << c.message;
    EXPECT_NE(c.message.find("KVFLASH_ACL_BACKEND=cuda"), std::string::npos) << c.message;
  }
#else
  EXPECT_EQ(c.error, ACL_ERROR_API_NOT_SUPPORT);
  EXPECT_NE(c.message.find("built without CUDA"), std::string::npos) << c.message;
#endif
}

// ---- end to end: the variable as a CANN program's process sees it ----------------------------

// In a child process: sets the variable, then exits 0 only when fn() holds (fn prints why not).
template <typename F>
void expect_in_child(const char* value, F fn) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("KVFLASH_ACL_BACKEND", value, 1);
        std::exit(fn() ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

bool says(const char* what) {
  const std::string msg = aclGetRecentErrMsg();
  if (msg.find(what) != std::string::npos) return true;
  std::fprintf(stderr, "message lacks '%s': %s\n", what, msg.c_str());
  return false;
}

TEST(AclBackendEnv, InvalidValueFailsInitSetDeviceAndMemory) {
  expect_in_child("gpu", [] {
    bool ok = aclInit(nullptr) == ACL_ERROR_INVALID_PARAM && says("aclInit: ") &&
              says("KVFLASH_ACL_BACKEND='gpu'");
    ok = ok && aclrtSetDevice(0) == ACL_ERROR_INVALID_PARAM && says("aclrtSetDevice: ");
    void* p = reinterpret_cast<void*>(1);
    ok = ok && aclrtMalloc(&p, 64, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_ERROR_INVALID_PARAM &&
         p == nullptr;
    aclrtStream s = nullptr;
    ok = ok && aclrtCreateStream(&s) == ACL_ERROR_INVALID_PARAM && s == nullptr;
    ok = ok && aclrtSynchronizeStream(nullptr) == ACL_ERROR_INVALID_PARAM;
    return ok;
  });
}

TEST(AclBackendEnv, CudaWithoutAUsableDeviceFailsInitAndSetDevice) {
  if (kvflash::cuda::device_present()) {
    // The other branch of the same contract: on a GPU machine the CUDA runtime starts.
    expect_in_child("cuda", [] {
      return aclInit(nullptr) == ACL_SUCCESS && aclrtSetDevice(0) == ACL_SUCCESS &&
             aclrtResetDevice(0) == ACL_SUCCESS && aclFinalize() == ACL_SUCCESS;
    });
    return;
  }
  expect_in_child("cuda", [] {
#if defined(KVFLASH_HAVE_CUDA)
    const aclError want = ACL_ERROR_INVALID_DEVICE;
    const std::string reason = kvflash::cuda::device_info().reason;
#else
    const aclError want = ACL_ERROR_API_NOT_SUPPORT;
    const std::string reason = "built without CUDA";
#endif
    bool ok = aclInit(nullptr) == want && says("aclInit: ") && says(reason.c_str());
    ok = ok && aclrtSetDevice(0) == want && says("aclrtSetDevice: ") && says(reason.c_str());
    uint32_t count = 7;
    ok = ok && aclrtGetDeviceCount(&count) == want;
    void* p = nullptr;
    ok = ok && aclrtMalloc(&p, 64, ACL_MEM_MALLOC_HUGE_FIRST) == want && p == nullptr;
    return ok;
  });
}

TEST(AclBackendEnv, ExplicitCpuIsTheDefaultRuntime) {
  expect_in_child("cpu", [] {
    void* p = nullptr;
    bool ok = aclInit(nullptr) == ACL_SUCCESS && aclrtSetDevice(0) == ACL_SUCCESS;
    ok = ok && aclrtMalloc(&p, 64, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_SUCCESS;
    aclTensor* t = nullptr;
    if (ok) {
      const int64_t dims[] = {4, 4};
      const int64_t strides[] = {4, 1};
      t = aclCreateTensor(dims, 2, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, dims, 2, p);
      // The CPU runtime's "device" memory is host memory: host tensors.
      ok = t != nullptr && t->view.device.type == kvflash::DeviceType::kHost;
    }
    return ok && aclDestroyTensor(t) == ACLNN_SUCCESS && aclrtFree(p) == ACL_SUCCESS &&
           aclFinalize() == ACL_SUCCESS;
  });
}

// ---- the CUDA runtime's allocation table (its copy checks) ---------------------------------------

TEST(AclAllocationTable, RangesLieWithinOneAllocation) {
  kvflash::aclnn::AllocationTable t;
  static char buffer[1024];
  char* const a = buffer + 64;  // [a, a + 100) and [b, b + 256), with room around them
  char* const b = buffer + 512;
  t.add(a, 100);
  t.add(b, 256);
  EXPECT_EQ(t.size(), 2u);
  EXPECT_TRUE(t.contains(a, 100));
  EXPECT_TRUE(t.contains(a + 99, 1));
  EXPECT_FALSE(t.contains(a + 99, 2));  // one byte past the end
  EXPECT_FALSE(t.contains(a, 101));
  EXPECT_TRUE(t.contains(a + 100, 0));  // the end itself, nothing read
  EXPECT_FALSE(t.contains(a + 101, 0));
  EXPECT_FALSE(t.contains(a - 1, 1));   // before the first allocation
  EXPECT_TRUE(t.contains(b + 128, 128));
  EXPECT_FALSE(t.contains(b + 128, 129));
  EXPECT_FALSE(t.contains(b + 1, SIZE_MAX));  // no overflow in the check
  EXPECT_TRUE(t.points_into(a));
  EXPECT_TRUE(t.points_into(a + 99));
  EXPECT_FALSE(t.points_into(a + 100));
  EXPECT_FALSE(t.points_into(a + 200));
  EXPECT_FALSE(t.remove(a + 1));  // only the base removes it
  EXPECT_TRUE(t.remove(a));
  EXPECT_FALSE(t.remove(a));
  EXPECT_FALSE(t.contains(a, 1));
  EXPECT_FALSE(t.points_into(a + 10));
  EXPECT_TRUE(t.points_into(b + 255));
  EXPECT_EQ(t.size(), 1u);
}

}  // namespace
