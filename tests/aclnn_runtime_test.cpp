// The ACL runtime and aclnn meta objects on the CPU (src/aclnn/): status codes of every misuse,
// memory, streams (order, concurrency, failure reporting), contexts, tensors, executors, fp16_t.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "aclnn/acl_objects.hpp"
#include "aclnn/freed_blocks.hpp"
#include "aclnn/opdev/fp16_t.h"
#include "core/error.hpp"
#include "hooks/aclnn_enqueue.hpp"

namespace {

using kvflash::Status;

std::string recent() { return aclGetRecentErrMsg(); }

// ---- init, device ------------------------------------------------------------------------------

TEST(AclRuntime, InitFinalizeRepeatCodes) {
  ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
  EXPECT_EQ(aclInit(nullptr), ACL_ERROR_REPEAT_INITIALIZE);
  EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
  EXPECT_EQ(aclFinalize(), ACL_ERROR_REPEAT_FINALIZE);
  ASSERT_EQ(aclInit(""), ACL_SUCCESS);  // "" = no configuration file
  EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
  EXPECT_EQ(aclInit("/nonexistent/acl.json"), ACL_ERROR_INVALID_FILE);
  EXPECT_NE(recent().find("/nonexistent/acl.json"), std::string::npos);
}

TEST(AclRuntime, DeviceZeroIsTheOnlyDevice) {
  uint32_t count = 0;
  ASSERT_EQ(aclrtGetDeviceCount(&count), ACL_SUCCESS);
  EXPECT_EQ(count, 1u);
  EXPECT_EQ(aclrtSetDevice(1), ACL_ERROR_INVALID_DEVICE);
  EXPECT_EQ(aclrtSetDevice(-1), ACL_ERROR_INVALID_DEVICE);
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  int32_t id = -1;
  ASSERT_EQ(aclrtGetDevice(&id), ACL_SUCCESS);
  EXPECT_EQ(id, 0);
  EXPECT_EQ(aclrtGetDevice(nullptr), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
  EXPECT_EQ(aclrtGetDevice(&id), ACL_ERROR_INVALID_DEVICE);
  aclrtRunMode mode = ACL_DEVICE;
  EXPECT_EQ(aclrtGetRunMode(&mode), ACL_SUCCESS);
  EXPECT_EQ(mode, ACL_HOST);
}

TEST(AclRuntime, DataTypeSizes) {
  EXPECT_EQ(aclDataTypeSize(ACL_FLOAT), 4u);
  EXPECT_EQ(aclDataTypeSize(ACL_FLOAT16), 2u);
  EXPECT_EQ(aclDataTypeSize(ACL_BF16), 2u);
  EXPECT_EQ(aclDataTypeSize(ACL_INT8), 1u);
  EXPECT_EQ(aclDataTypeSize(ACL_BOOL), 1u);
  EXPECT_EQ(aclDataTypeSize(ACL_INT32), 4u);
  EXPECT_EQ(aclDataTypeSize(ACL_INT64), 8u);
  EXPECT_EQ(aclDataTypeSize(ACL_UINT64), 8u);
  EXPECT_EQ(aclDataTypeSize(ACL_DOUBLE), 8u);
  EXPECT_EQ(aclDataTypeSize(ACL_COMPLEX128), 16u);
  EXPECT_EQ(aclDataTypeSize(ACL_COMPLEX32), 4u);
  EXPECT_EQ(aclDataTypeSize(ACL_HIFLOAT8), 1u);
  EXPECT_EQ(aclDataTypeSize(ACL_FLOAT8_E5M2), 1u);
  EXPECT_EQ(aclDataTypeSize(ACL_FLOAT8_E4M3FN), 1u);
  EXPECT_EQ(aclDataTypeSize(ACL_FLOAT8_E8M0), 1u);
  // Sub-byte types have no whole size.
  for (aclDataType t : {ACL_INT4, ACL_UINT1, ACL_FLOAT6_E3M2, ACL_FLOAT6_E2M3, ACL_FLOAT4_E2M1,
                        ACL_FLOAT4_E1M2, ACL_STRING})
    EXPECT_EQ(aclDataTypeSize(t), 0u) << t;
  EXPECT_EQ(aclDataTypeSize(ACL_DT_UNDEFINED), 0u);
  EXPECT_EQ(aclDataTypeSize(static_cast<aclDataType>(1234)), 0u);
}

TEST(AclRuntime, MemInfoIsTheMachinesMemory) {
  size_t free = 0, total = 0;
  for (aclrtMemAttr attr : {ACL_DDR_MEM, ACL_HBM_MEM, ACL_HBM_MEM_P2P_NORMAL}) {
    ASSERT_EQ(aclrtGetMemInfo(attr, &free, &total), ACL_SUCCESS) << recent();
    EXPECT_GT(total, size_t{64} << 20);  // this machine has more than 64 MiB
    EXPECT_LE(free, total);
  }
  EXPECT_EQ(aclrtGetMemInfo(static_cast<aclrtMemAttr>(10), &free, &total), ACL_ERROR_INVALID_PARAM);
  EXPECT_NE(recent().find("attr (10)"), std::string::npos);
  EXPECT_EQ(aclrtGetMemInfo(ACL_HBM_MEM, nullptr, &total), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtGetMemInfo(ACL_HBM_MEM, &free, nullptr), ACL_ERROR_INVALID_PARAM);
}

// ---- memory ------------------------------------------------------------------------------------

TEST(AclMemory, MallocIsAlignedAndFreeChecksThePointer) {
  void* p = nullptr;
  ASSERT_EQ(aclrtMalloc(&p, 100, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
  std::memset(p, 0x5a, 100);  // usable (ASan checks the extent)
  int local = 0;
  EXPECT_EQ(aclrtFree(&local), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtFreeHost(p), ACL_ERROR_INVALID_PARAM);  // device memory is not host memory
  EXPECT_EQ(aclrtFree(p), ACL_SUCCESS);
  EXPECT_EQ(aclrtFree(p), ACL_ERROR_INVALID_PARAM);  // double free refused, not undefined
  EXPECT_NE(recent().find("already freed"), std::string::npos);
  EXPECT_EQ(aclrtFree(nullptr), ACL_ERROR_INVALID_PARAM);
}

// A workspace allocated before each launch and freed after it gets the same block back, pages
// already mapped (aclnn/freed_blocks.hpp); a block kept is not handed out for another size, and
// freeing it twice is still refused.
TEST(AclMemory, FreedBlockComesBackForTheSameSize) {
  constexpr size_t kWorkspace = 272 * 1024 + 8;
  void* a = nullptr;
  ASSERT_EQ(aclrtMalloc(&a, kWorkspace, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  std::memset(a, 0x11, kWorkspace);
  ASSERT_EQ(aclrtFree(a), ACL_SUCCESS);
  EXPECT_EQ(aclrtFree(a), ACL_ERROR_INVALID_PARAM);  // kept, not live
  void* other = nullptr;
  ASSERT_EQ(aclrtMalloc(&other, kWorkspace + 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  EXPECT_NE(other, a);
  void* b = nullptr;
  ASSERT_EQ(aclrtMalloc(&b, kWorkspace, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  EXPECT_EQ(b, a);
  std::memset(b, 0x22, kWorkspace);  // usable again in full (ASan: unpoisoned)
  EXPECT_EQ(aclrtFree(other), ACL_SUCCESS);
  EXPECT_EQ(aclrtFree(b), ACL_SUCCESS);
  EXPECT_EQ(aclrtFree(b), ACL_ERROR_INVALID_PARAM);
}

TEST(FreedBlocks, KeepsWithinItsBoundsAndGivesTheNewestOfASize) {
  using kvflash::aclnn::FreedBlocks;
  using kvflash::aclnn::HostBlock;
  const auto block = [](size_t bytes) { return HostBlock(std::aligned_alloc(64, bytes)); };
  FreedBlocks kept;
  EXPECT_EQ(kept.take(64), nullptr);
  // Too large: handed straight back.
  HostBlock big = block(FreedBlocks::kMaxBlockBytes + 64);
  void* const big_ptr = big.get();
  std::vector<HostBlock> dropped = kept.keep(std::move(big), FreedBlocks::kMaxBlockBytes + 64);
  ASSERT_EQ(dropped.size(), 1u);
  EXPECT_EQ(dropped[0].get(), big_ptr);
  EXPECT_EQ(kept.blocks(), 0u);
  // The count bound: the oldest go first.
  std::vector<void*> order;
  for (size_t i = 0; i < FreedBlocks::kMaxBlocks + 3; ++i) {
    HostBlock b = block(4096);
    order.push_back(b.get());
    dropped = kept.keep(std::move(b), 4096);
    if (i < FreedBlocks::kMaxBlocks) {
      EXPECT_TRUE(dropped.empty()) << i;
    } else {
      ASSERT_EQ(dropped.size(), 1u) << i;
      EXPECT_EQ(dropped[0].get(), order[i - FreedBlocks::kMaxBlocks]) << i;
    }
  }
  EXPECT_EQ(kept.blocks(), FreedBlocks::kMaxBlocks);
  EXPECT_EQ(kept.bytes(), FreedBlocks::kMaxBlocks * 4096);
  HostBlock newest = kept.take(4096);
  EXPECT_EQ(newest.get(), order.back());
  EXPECT_EQ(kept.take(8192), nullptr);
  // The byte bound: 16 MiB blocks, at most kMaxBytes of them.
  constexpr size_t kBig = FreedBlocks::kMaxBlockBytes;
  for (int i = 0; i < 6; ++i) dropped = kept.keep(block(kBig), kBig);
  EXPECT_LE(kept.bytes(), FreedBlocks::kMaxBytes);
  EXPECT_LE(kept.blocks(), FreedBlocks::kMaxBlocks);
  EXPECT_NE(kept.take(kBig), nullptr);
  dropped = kept.clear();
  EXPECT_EQ(kept.blocks(), 0u);
  EXPECT_EQ(kept.bytes(), 0u);
  EXPECT_FALSE(dropped.empty());
}

TEST(AclMemory, MallocRejectsBadArguments) {
  void* p = reinterpret_cast<void*>(0x1);
  EXPECT_EQ(aclrtMalloc(&p, 0, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(p, nullptr);
  EXPECT_EQ(aclrtMalloc(nullptr, 16, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtMalloc(&p, 16, static_cast<aclrtMemMallocPolicy>(7)), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtMalloc(&p, std::numeric_limits<size_t>::max(), ACL_MEM_MALLOC_HUGE_FIRST),
            ACL_ERROR_BAD_ALLOC);
  EXPECT_EQ(p, nullptr);
}

TEST(AclMemory, MallocTakesEveryPolicy) {
  // The P2P policies are the plain ones on a single device.
  for (aclrtMemMallocPolicy policy :
       {ACL_MEM_MALLOC_HUGE_FIRST, ACL_MEM_MALLOC_HUGE_ONLY, ACL_MEM_MALLOC_NORMAL_ONLY,
        ACL_MEM_MALLOC_HUGE_FIRST_P2P, ACL_MEM_MALLOC_HUGE_ONLY_P2P,
        ACL_MEM_MALLOC_NORMAL_ONLY_P2P}) {
    void* p = nullptr;
    ASSERT_EQ(aclrtMalloc(&p, 32, policy), ACL_SUCCESS) << policy;
    EXPECT_EQ(aclrtFree(p), ACL_SUCCESS);
  }
  void* p = nullptr;
  EXPECT_EQ(aclrtMalloc(&p, 32, static_cast<aclrtMemMallocPolicy>(6)), ACL_ERROR_INVALID_PARAM);
}

TEST(AclMemory, HostMallocAndFree) {
  void* h = nullptr;
  ASSERT_EQ(aclrtMallocHost(&h, 64), ACL_SUCCESS);
  EXPECT_EQ(aclrtFree(h), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtFreeHost(h), ACL_SUCCESS);
  EXPECT_EQ(aclrtFreeHost(h), ACL_ERROR_INVALID_PARAM);
}

TEST(AclMemory, MemcpyRefusesCountAboveDestMax) {
  std::vector<uint8_t> src(32, 7), dst(16, 0);
  EXPECT_EQ(aclrtMemcpy(dst.data(), dst.size(), src.data(), src.size(), ACL_MEMCPY_HOST_TO_DEVICE),
            ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(dst, std::vector<uint8_t>(16, 0));  // nothing written
  EXPECT_NE(recent().find("destMax"), std::string::npos);
  ASSERT_EQ(aclrtMemcpy(dst.data(), dst.size(), src.data(), 16, ACL_MEMCPY_DEVICE_TO_HOST),
            ACL_SUCCESS);
  EXPECT_EQ(dst, std::vector<uint8_t>(16, 7));
  EXPECT_EQ(aclrtMemcpy(dst.data(), 16, nullptr, 4, ACL_MEMCPY_HOST_TO_HOST),
            ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtMemcpy(dst.data(), 16, src.data(), 4, static_cast<aclrtMemcpyKind>(9)),
            ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtMemcpy(nullptr, 0, nullptr, 0, ACL_MEMCPY_HOST_TO_HOST), ACL_SUCCESS);
}

TEST(AclMemory, MemsetRefusesCountAboveMaxCount) {
  std::vector<uint8_t> buf(8, 0);
  EXPECT_EQ(aclrtMemset(buf.data(), 4, 1, 8), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(buf, std::vector<uint8_t>(8, 0));
  ASSERT_EQ(aclrtMemset(buf.data(), 8, 3, 8), ACL_SUCCESS);
  EXPECT_EQ(buf, std::vector<uint8_t>(8, 3));
}

// ---- streams -----------------------------------------------------------------------------------

TEST(AclStream, CreateDestroyAndDeadHandles) {
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(s), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtSynchronizeStream(s), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtCreateStream(nullptr), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);  // the default stream
}

TEST(AclStream, AsyncCopiesRunInOrder) {
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
  std::vector<uint8_t> a(4096, 0), b(4096, 0);
  for (int round = 1; round <= 20; ++round) {
    // a := round; b := a; a := round + 100. In order, b ends as round and a as round + 100.
    ASSERT_EQ(aclrtMemsetAsync(a.data(), a.size(), round, a.size(), s), ACL_SUCCESS);
    ASSERT_EQ(
        aclrtMemcpyAsync(b.data(), b.size(), a.data(), a.size(), ACL_MEMCPY_DEVICE_TO_DEVICE, s),
        ACL_SUCCESS);
    ASSERT_EQ(aclrtMemsetAsync(a.data(), a.size(), round + 100, a.size(), s), ACL_SUCCESS);
    ASSERT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
    EXPECT_EQ(b, std::vector<uint8_t>(4096, static_cast<uint8_t>(round)));
    EXPECT_EQ(a, std::vector<uint8_t>(4096, static_cast<uint8_t>(round + 100)));
  }
  EXPECT_EQ(aclrtMemcpyAsync(b.data(), 1, a.data(), 2, ACL_MEMCPY_DEVICE_TO_DEVICE, s),
            ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
}

TEST(AclStream, EnqueuedWorkRunsInSubmissionOrderAndAsynchronously) {
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  std::vector<int> order;
  // The first task blocks until the test releases it: enqueue must not wait for it.
  ASSERT_EQ(kvflash::aclnn::enqueue("test", s,
                                    [&] {
                                      std::unique_lock<std::mutex> lock(mu);
                                      cv.wait(lock, [&] { return release; });
                                      order.push_back(0);
                                      return Status::kSuccess;
                                    }),
            Status::kSuccess);
  for (int i = 1; i < 50; ++i) {
    ASSERT_EQ(kvflash::aclnn::enqueue("test", s,
                                      [&, i] {
                                        std::lock_guard<std::mutex> lock(mu);
                                        order.push_back(i);
                                        return Status::kSuccess;
                                      }),
              Status::kSuccess);
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_TRUE(order.empty());
    release = true;
  }
  cv.notify_all();
  ASSERT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
  ASSERT_EQ(order.size(), 50u);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(order[i], i);
  EXPECT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
}

// Queues a task on s and waits (up to 10 s, making no runtime call) for it to run: whether the
// stream's worker starts it by itself.
bool queued_task_runs_unaided(aclrtStream s) {
  std::atomic<bool> ran{false};
  if (kvflash::aclnn::enqueue("test", s, [&] {
        ran.store(true, std::memory_order_release);
        return Status::kSuccess;
      }) != Status::kSuccess)
    return false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!ran.load(std::memory_order_acquire) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  const bool unaided = ran.load(std::memory_order_acquire);
  if (!unaided) aclrtSynchronizeStream(s);  // the task must not outlive `ran`
  return unaided;
}

// A launch may leave a waiting worker asleep and owe it the wake-up (src/aclnn/stream.cpp): the
// task must still start while the program makes no runtime call at all (the worker looks by
// itself), in every round, whether the worker was in a timed wait, awake, or just woken.
TEST(AclStream, QueuedTaskStartsWithoutAnyFurtherCall) {
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
  for (int round = 0; round < 20; ++round) {
    ASSERT_TRUE(queued_task_runs_unaided(s)) << "round " << round;
    ASSERT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
    // Alternate: the worker waiting long (asleep) or just back from the last task.
    if (round % 2 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
}

// A launch after a pause that leaves the stream in use (under the second of stream.cpp's
// kPollWindow, far over the 5 ms waits) owes its wake-up: the worker, which has looked and found
// nothing some sixty times, must still find the task by itself. (Round 0's launch is the stream's
// first, which wakes the worker at once; rounds 1 and 2 follow a pause after a task.)
TEST(AclStream, QueuedTaskStartsAfterAPause) {
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
  for (int round = 0; round < 3; ++round) {
    ASSERT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
    if (round > 0) std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ASSERT_TRUE(queued_task_runs_unaided(s)) << "round " << round;
  }
  EXPECT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
}

// A synchronize on one stream pays the wake-ups owed to the others: a task of stream b that waits
// for an event stream a records must see a's record run, while this thread runs b's queue.
TEST(AclStream, SynchronizeStartsOtherStreamsQueuedWork) {
  aclrtStream a = nullptr, b = nullptr;
  ASSERT_EQ(aclrtCreateStream(&a), ACL_SUCCESS);
  ASSERT_EQ(aclrtCreateStream(&b), ACL_SUCCESS);
  aclrtEvent e = nullptr;
  ASSERT_EQ(aclrtCreateEvent(&e), ACL_SUCCESS);
  std::vector<uint8_t> buf(64, 0);
  for (int round = 0; round < 20; ++round) {
    ASSERT_EQ(aclrtMemsetAsync(buf.data(), buf.size(), round, buf.size(), a), ACL_SUCCESS);
    ASSERT_EQ(aclrtRecordEvent(e, a), ACL_SUCCESS);
    ASSERT_EQ(aclrtStreamWaitEvent(b, e), ACL_SUCCESS);
    ASSERT_EQ(aclrtSynchronizeStream(b), ACL_SUCCESS);
    EXPECT_EQ(buf[63], round);  // a's memset ran before its record, which b waited for
    ASSERT_EQ(aclrtSynchronizeStream(a), ACL_SUCCESS);
  }
  EXPECT_EQ(aclrtDestroyEvent(e), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(a), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(b), ACL_SUCCESS);
}

TEST(AclStream, TwoStreamsRunConcurrently) {
  aclrtStream s1 = nullptr, s2 = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s1), ACL_SUCCESS);
  ASSERT_EQ(aclrtCreateStream(&s2), ACL_SUCCESS);
  std::atomic<bool> flag{false};
  // s1 waits (bounded) for a flag that only s2's task sets: it succeeds only if both run at once.
  ASSERT_EQ(kvflash::aclnn::enqueue(
                "test", s1,
                [&] {
                  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
                  while (!flag.load()) {
                    if (std::chrono::steady_clock::now() > deadline)
                      return kvflash::core::fail(Status::kRuntime, "test", "stream 2 never ran");
                    std::this_thread::sleep_for(std::chrono::milliseconds(1));
                  }
                  return Status::kSuccess;
                }),
            Status::kSuccess);
  ASSERT_EQ(kvflash::aclnn::enqueue("test", s2,
                                    [&] {
                                      flag = true;
                                      return Status::kSuccess;
                                    }),
            Status::kSuccess);
  EXPECT_EQ(aclrtSynchronizeStream(s1), ACL_SUCCESS) << recent();
  EXPECT_EQ(aclrtSynchronizeStream(s2), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(s1), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(s2), ACL_SUCCESS);
}

TEST(AclStream, TaskFailureIsReportedBySynchronizeOnce) {
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
  int after = 0;
  ASSERT_EQ(kvflash::aclnn::enqueue("test", s,
                                    [] {
                                      return kvflash::core::fail(Status::kInvalid, "test_op",
                                                                 "block id 99 is out of range");
                                    }),
            Status::kSuccess);
  ASSERT_EQ(kvflash::aclnn::enqueue("test", s,
                                    [&] {
                                      after = 1;  // later independent work still runs
                                      return Status::kSuccess;
                                    }),
            Status::kSuccess);
  // kInvalid from a task is an operator that found bad device data: a kernel fault.
  EXPECT_EQ(aclrtSynchronizeStream(s), ACL_ERROR_RT_AICORE_EXCEPTION);
  EXPECT_NE(recent().find("block id 99 is out of range"), std::string::npos) << recent();
  EXPECT_NE(recent().find("161002"), std::string::npos) << recent();
  EXPECT_EQ(after, 1);
  EXPECT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);  // reported once
  EXPECT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
}

TEST(AclStream, DestroyRunsQueuedWorkFirst) {
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
  std::atomic<int> ran{0};
  for (int i = 0; i < 10; ++i) {
    ASSERT_EQ(kvflash::aclnn::enqueue("test", s,
                                      [&] {
                                        std::this_thread::sleep_for(std::chrono::milliseconds(2));
                                        ++ran;
                                        return Status::kSuccess;
                                      }),
              Status::kSuccess);
  }
  EXPECT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
  EXPECT_EQ(ran.load(), 10);
  EXPECT_EQ(kvflash::aclnn::enqueue("test", s, [] { return Status::kSuccess; }), Status::kInvalid);
}

TEST(AclStream, SynchronizeDeviceWaitsForEveryStream) {
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
  std::vector<uint8_t> a(64, 0), b(64, 0);
  ASSERT_EQ(aclrtMemsetAsync(a.data(), 64, 9, 64, s), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemsetAsync(b.data(), 64, 8, 64, nullptr), ACL_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeDevice(), ACL_SUCCESS);
  EXPECT_EQ(a, std::vector<uint8_t>(64, 9));
  EXPECT_EQ(b, std::vector<uint8_t>(64, 8));
  EXPECT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
}

// ---- contexts ----------------------------------------------------------------------------------

TEST(AclContext, CreateSetGetDestroy) {
  aclrtContext c = nullptr, cur = nullptr;
  EXPECT_EQ(aclrtCreateContext(&c, 3), ACL_ERROR_INVALID_DEVICE);
  ASSERT_EQ(aclrtCreateContext(&c, 0), ACL_SUCCESS);
  ASSERT_EQ(aclrtGetCurrentContext(&cur), ACL_SUCCESS);
  EXPECT_EQ(cur, c);
  EXPECT_EQ(aclrtSetCurrentContext(c), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyContext(c), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyContext(c), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtSetCurrentContext(c), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtGetCurrentContext(&cur), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtCreateContext(nullptr, 0), ACL_ERROR_INVALID_PARAM);
}

// ---- tensors, lists, arrays --------------------------------------------------------------------

TEST(AclMeta, CreateTensorChecksItsDescription) {
  std::vector<uint16_t> buf(24);
  const int64_t dims[] = {2, 3, 4}, strides[] = {12, 4, 1};
  aclTensor* t =
      aclCreateTensor(dims, 3, ACL_FLOAT16, strides, 0, ACL_FORMAT_ND, dims, 3, buf.data());
  ASSERT_NE(t, nullptr);
  aclDataType dt = ACL_DT_UNDEFINED;
  aclFormat fmt = ACL_FORMAT_UNDEFINED;
  EXPECT_EQ(aclGetDataType(t, &dt), ACLNN_SUCCESS);
  EXPECT_EQ(dt, ACL_FLOAT16);
  EXPECT_EQ(aclGetFormat(t, &fmt), ACLNN_SUCCESS);
  EXPECT_EQ(fmt, ACL_FORMAT_ND);
  EXPECT_EQ(aclDestroyTensor(t), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyTensor(t), ACLNN_ERR_PARAM_INVALID);  // double destroy: a code, not UB
  EXPECT_EQ(aclGetDataType(t, &dt), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(aclDestroyTensor(nullptr), ACLNN_SUCCESS);

  // The view must lie inside the storage: offset 1 pushes the last element out.
  EXPECT_EQ(aclCreateTensor(dims, 3, ACL_FLOAT16, strides, 1, ACL_FORMAT_ND, dims, 3, buf.data()),
            nullptr);
  EXPECT_NE(recent().find("storageDims"), std::string::npos) << recent();
  const int64_t neg[] = {2, -3, 4};
  EXPECT_EQ(aclCreateTensor(neg, 3, ACL_FLOAT16, strides, 0, ACL_FORMAT_ND, dims, 3, buf.data()),
            nullptr);
  const int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  EXPECT_EQ(aclCreateTensor(nine, 9, ACL_FLOAT16, nine, 0, ACL_FORMAT_ND, nine, 9, buf.data()),
            nullptr);
  EXPECT_EQ(aclCreateTensor(dims, 3, ACL_FLOAT16, nullptr, 0, ACL_FORMAT_ND, dims, 3, buf.data()),
            nullptr);
  EXPECT_EQ(aclCreateTensor(dims, 3, ACL_FLOAT16, strides, 0, ACL_FORMAT_ND, dims, 3, nullptr),
            nullptr);
  // A strided view of a bigger buffer is fine; an empty tensor needs no data.
  const int64_t vdims[] = {2, 2}, vstrides[] = {12, 2}, storage[] = {24};
  aclTensor* v =
      aclCreateTensor(vdims, 2, ACL_FLOAT16, vstrides, 5, ACL_FORMAT_ND, storage, 1, buf.data());
  EXPECT_NE(v, nullptr) << recent();
  EXPECT_EQ(aclDestroyTensor(v), ACLNN_SUCCESS);
  const int64_t empty[] = {0, 4}, estr[] = {4, 1};
  aclTensor* e = aclCreateTensor(empty, 2, ACL_FLOAT16, estr, 0, ACL_FORMAT_ND, empty, 2, nullptr);
  EXPECT_NE(e, nullptr);
  EXPECT_EQ(aclDestroyTensor(e), ACLNN_SUCCESS);
}

TEST(AclMeta, TensorListCopiesItsTensors) {
  std::vector<uint16_t> buf(8);
  const int64_t dims[] = {8}, strides[] = {1};
  aclTensor* a =
      aclCreateTensor(dims, 1, ACL_FLOAT16, strides, 0, ACL_FORMAT_ND, dims, 1, buf.data());
  aclTensor* b = aclCreateTensor(dims, 1, ACL_BF16, strides, 0, ACL_FORMAT_ND, dims, 1, buf.data());
  aclTensor* items[] = {a, nullptr, b};
  aclTensorList* list = aclCreateTensorList(items, 3);
  ASSERT_NE(list, nullptr);
  // Destroying the tensors does not invalidate the list (it holds copies).
  EXPECT_EQ(aclDestroyTensor(a), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyTensor(b), ACLNN_SUCCESS);
  uint64_t n = 0;
  EXPECT_EQ(aclGetTensorListSize(list, &n), ACLNN_SUCCESS);
  EXPECT_EQ(n, 3u);
  std::vector<kvflash::TensorView> views;
  EXPECT_EQ(kvflash::aclnn::tensor_list_views("op", "key", list, &views), Status::kNullPtr);
  EXPECT_NE(recent().find("key[1]"), std::string::npos) << recent();
  aclTensor* dead[] = {a};
  EXPECT_EQ(aclCreateTensorList(dead, 1), nullptr);  // a destroyed tensor cannot be listed
  EXPECT_EQ(aclDestroyTensorList(list), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyTensorList(list), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(aclCreateTensorList(nullptr, 2), nullptr);
}

TEST(AclMeta, IntArrayCopiesItsValues) {
  std::vector<int64_t> values = {5, 6, 7};
  aclIntArray* arr = aclCreateIntArray(values.data(), values.size());
  ASSERT_NE(arr, nullptr);
  values.assign(3, -1);
  std::optional<std::vector<int64_t>> got;
  ASSERT_EQ(kvflash::aclnn::optional_int_array("op", "lens", arr, &got), Status::kSuccess);
  EXPECT_EQ(got, std::optional<std::vector<int64_t>>(std::vector<int64_t>{5, 6, 7}));
  uint64_t n = 0;
  EXPECT_EQ(aclGetIntArraySize(arr, &n), ACLNN_SUCCESS);
  EXPECT_EQ(n, 3u);
  EXPECT_EQ(aclDestroyIntArray(arr), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyIntArray(arr), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(kvflash::aclnn::optional_int_array("op", "lens", arr, &got), Status::kInvalid);
  EXPECT_EQ(aclCreateIntArray(nullptr, 1), nullptr);
  aclIntArray* empty = aclCreateIntArray(nullptr, 0);
  ASSERT_NE(empty, nullptr);
  EXPECT_EQ(aclDestroyIntArray(empty), ACLNN_SUCCESS);
}

TEST(AclMeta, TensorViewConversionRejectsUnknownDtypes) {
  uint64_t buf[2] = {};
  const int64_t dims[] = {2}, strides[] = {1};
  aclTensor* t = aclCreateTensor(dims, 1, ACL_UINT64, strides, 0, ACL_FORMAT_ND, dims, 1, buf);
  ASSERT_NE(t, nullptr);
  kvflash::TensorView v;
  EXPECT_EQ(kvflash::aclnn::tensor_view("op", "dequantScale1", t, &v), Status::kInvalid);
  EXPECT_NE(recent().find("dequantScale1"), std::string::npos);
  EXPECT_EQ(kvflash::aclnn::tensor_view("op", "query", nullptr, &v), Status::kNullPtr);
  EXPECT_EQ(aclDestroyTensor(t), ACLNN_SUCCESS);
  EXPECT_EQ(kvflash::aclnn::tensor_view("op", "query", t, &v), Status::kInvalid);  // dead handle
}

// ---- executors ---------------------------------------------------------------------------------

struct Counter {
  std::atomic<int> runs{0};
};

aclOpExecutor* counting_executor(Counter* c, uint64_t ws, Status run_result = Status::kSuccess) {
  kvflash::aclnn::ExecutorWork w;
  w.op = "test_op";
  w.workspace_size = ws;
  w.run = [c, run_result](void*, uint64_t, void*) {
    ++c->runs;
    return run_result == Status::kSuccess
               ? Status::kSuccess
               : kvflash::core::fail(run_result, "test_op", "the run found bad device data");
  };
  return kvflash::aclnn::make_executor(std::move(w));
}

TEST(AclExecutor, PhaseTwoCodesAndSingleUse) {
  using kvflash::aclnn::launch;
  Counter c;
  std::vector<uint8_t> ws(128);
  aclOpExecutor* e = counting_executor(&c, 128);
  EXPECT_EQ(launch("test_op", ws.data(), 128, nullptr, nullptr), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(launch("test_op", ws.data(), 127, e, nullptr), ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(recent().find("workspaceSize (127)"), std::string::npos) << recent();
  EXPECT_EQ(launch("test_op", nullptr, 128, e, nullptr), ACLNN_ERR_PARAM_NULLPTR);
  int not_a_stream = 0;
  EXPECT_EQ(launch("test_op", ws.data(), 128, e, &not_a_stream), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(launch("other_op", ws.data(), 128, e, nullptr), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(c.runs.load(), 0);
  // Rejected calls left it usable.
  EXPECT_EQ(launch("test_op", ws.data(), 128, e, nullptr), ACLNN_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);
  EXPECT_EQ(c.runs.load(), 1);
  // Consumed: a second phase 2 is refused without touching freed memory.
  EXPECT_EQ(launch("test_op", ws.data(), 128, e, nullptr), ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(recent().find("consumed"), std::string::npos) << recent();
  EXPECT_EQ(aclDestroyAclOpExecutor(e), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);
  EXPECT_EQ(c.runs.load(), 1);
  // Handles are never reissued: a fresh executor gets a different handle.
  aclOpExecutor* e2 = counting_executor(&c, 0);
  EXPECT_NE(e2, e);
  EXPECT_EQ(aclDestroyAclOpExecutor(e2), ACLNN_SUCCESS);
  EXPECT_EQ(launch("test_op", nullptr, 0, e2, nullptr), ACLNN_ERR_PARAM_INVALID);
}

// Phase 2 reads no device data: a failure found by the run itself (in stream order) is reported
// by the next synchronisation of the stream, with the run's message.
TEST(AclExecutor, RunFailureIsReportedAtSynchronize) {
  Counter c;
  aclOpExecutor* e = counting_executor(&c, 0, Status::kInvalid);
  EXPECT_EQ(kvflash::aclnn::launch("test_op", nullptr, 0, e, nullptr), ACLNN_SUCCESS);
  EXPECT_NE(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);
  EXPECT_NE(recent().find("the run found bad device data"), std::string::npos) << recent();
  EXPECT_EQ(c.runs.load(), 1);
  EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);  // reported once
}

TEST(AclExecutor, RepeatableExecutorRunsUntilDestroyed) {
  Counter c;
  aclOpExecutor* e = counting_executor(&c, 0);
  ASSERT_EQ(aclSetAclOpExecutorRepeatable(e), ACLNN_SUCCESS);
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(kvflash::aclnn::launch("test_op", nullptr, 0, e, nullptr), ACLNN_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);
  EXPECT_EQ(c.runs.load(), 3);
  EXPECT_EQ(aclDestroyAclOpExecutor(e), ACLNN_SUCCESS);
  EXPECT_EQ(kvflash::aclnn::launch("test_op", nullptr, 0, e, nullptr), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(aclSetAclOpExecutorRepeatable(nullptr), ACLNN_ERR_PARAM_NULLPTR);
}

TEST(AclExecutor, ConcurrentLaunchesOfOneExecutorRunItOnce) {
  Counter c;
  aclOpExecutor* e = counting_executor(&c, 0);
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&] {
      if (kvflash::aclnn::launch("test_op", nullptr, 0, e, nullptr) == ACLNN_SUCCESS) ++ok;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);
  EXPECT_EQ(ok.load(), 1);
  EXPECT_EQ(c.runs.load(), 1);
}

// ---- op::fp16_t --------------------------------------------------------------------------------

TEST(Fp16T, RoundsToNearestEvenFromEveryType) {
  EXPECT_EQ(op::fp16_t(1.0).val, 0x3c00);
  EXPECT_EQ(op::fp16_t(1).val, 0x3c00);
  EXPECT_EQ(op::fp16_t(-2.0f).val, 0xc000);
  EXPECT_EQ(op::fp16_t(0).val, 0x0000);
  EXPECT_EQ(op::fp16_t(-0.0).val, 0x8000);
  EXPECT_EQ(op::fp16_t(65504.0).val, 0x7bff);
  EXPECT_EQ(op::fp16_t(65519.99).val, 0x7bff);
  EXPECT_EQ(op::fp16_t(65520.0).val, 0x7c00);  // halfway to the next binade: inf
  EXPECT_EQ(op::fp16_t(-1e9).val, 0xfc00);
  EXPECT_EQ(op::fp16_t(2049).val, op::fp16_t(2048).val);        // tie -> even
  EXPECT_EQ(op::fp16_t(2051).val, op::fp16_t(2052).val);        // tie -> even
  EXPECT_EQ(op::fp16_t(std::ldexp(1.0, -24)).val, 0x0001);      // smallest subnormal
  EXPECT_EQ(op::fp16_t(std::ldexp(1.0, -25)).val, 0x0000);      // tie -> even (0)
  EXPECT_EQ(op::fp16_t(3 * std::ldexp(1.0, -25)).val, 0x0002);  // tie -> even (2)
  EXPECT_EQ(op::fp16_t(std::ldexp(1.0, -14)).val, 0x0400);      // smallest normal
  // One rounding from double: via float this would round twice and land on 1.0.
  EXPECT_EQ(op::fp16_t(1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40)).val, 0x3c01);
  EXPECT_TRUE(std::isnan(static_cast<float>(op::fp16_t(std::nan("")))));
  EXPECT_TRUE(std::isinf(static_cast<float>(op::fp16_t(INFINITY))));
}

TEST(Fp16T, WidensExactlyAndFillsVectors) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    const auto h = op::fp16_t::from_bits(static_cast<uint16_t>(bits));
    const float f = static_cast<float>(h);
    if (std::isnan(f)) continue;
    ASSERT_EQ(op::fp16_t(f).val, bits) << bits;  // round trip is exact
  }
  std::vector<op::fp16_t> zeros(5, 0), ones(5, 1.0);
  EXPECT_EQ(sizeof(zeros[0]), 2u);
  for (auto z : zeros) EXPECT_EQ(static_cast<float>(z), 0.0f);
  for (auto o : ones) EXPECT_EQ(static_cast<float>(o), 1.0f);
  // The seed's quirk: float 1.0f read as two fp16 values is [0, 1.875].
  const float one = 1.0f;
  uint16_t halves[2];
  std::memcpy(halves, &one, sizeof(one));
  EXPECT_EQ(static_cast<float>(op::fp16_t::from_bits(halves[0])), 0.0f);
  EXPECT_EQ(static_cast<float>(op::fp16_t::from_bits(halves[1])), 1.875f);
}

}  // namespace
