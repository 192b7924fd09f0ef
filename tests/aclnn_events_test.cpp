// ACL events on the CPU runtime (src/aclnn/events.cpp): codes of misuse, host waits, one stream
// waiting for another, elapsed time. (tests/cuda_aclnn_test.cpp runs the same flow on CUDA.)
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "support/stream_gate.hpp"

namespace {

std::string recent() { return aclGetRecentErrMsg(); }

TEST(AclEvents, MisuseCodes) {
  EXPECT_EQ(aclrtCreateEvent(nullptr), ACL_ERROR_INVALID_PARAM);
  int not_an_event = 0;
  EXPECT_EQ(aclrtDestroyEvent(&not_an_event), ACL_ERROR_INVALID_PARAM);
  EXPECT_NE(recent().find("is not a live event"), std::string::npos) << recent();
  EXPECT_EQ(aclrtSynchronizeEvent(&not_an_event), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtRecordEvent(&not_an_event, nullptr), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtStreamWaitEvent(nullptr, &not_an_event), ACL_ERROR_INVALID_PARAM);

  aclrtEvent e = nullptr;
  ASSERT_EQ(aclrtCreateEvent(&e), ACL_SUCCESS);
  ASSERT_NE(e, nullptr);
  int not_a_stream = 0;
  EXPECT_EQ(aclrtRecordEvent(e, &not_a_stream), ACL_ERROR_INVALID_PARAM);
  EXPECT_NE(recent().find("is not a live stream"), std::string::npos) << recent();
  EXPECT_EQ(aclrtStreamWaitEvent(&not_a_stream, e), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtQueryEvent(e, nullptr), ACL_ERROR_INVALID_PARAM);
  float ms = -1;
  EXPECT_EQ(aclrtEventElapsedTime(nullptr, e, e), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtEventElapsedTime(&ms, e, e), ACL_ERROR_INVALID_PARAM);
  EXPECT_NE(recent().find("never recorded"), std::string::npos) << recent();
  EXPECT_EQ(aclrtDestroyEvent(e), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyEvent(e), ACL_ERROR_INVALID_PARAM);  // twice
}

// An event never recorded is complete: waiting for it returns at once (as with CUDA events).
TEST(AclEvents, UnrecordedEventIsComplete) {
  aclrtEvent e = nullptr;
  ASSERT_EQ(aclrtCreateEvent(&e), ACL_SUCCESS);
  aclrtEventStatus status = ACL_EVENT_STATUS_RESERVED;
  EXPECT_EQ(aclrtQueryEvent(e, &status), ACL_SUCCESS);
  EXPECT_EQ(status, ACL_EVENT_STATUS_COMPLETE);
  EXPECT_EQ(aclrtSynchronizeEvent(e), ACL_SUCCESS);
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
  EXPECT_EQ(aclrtStreamWaitEvent(s, e), ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyEvent(e), ACL_SUCCESS);
}

// Stream b waits for an event recorded on stream a after a write that a's gate holds back: b's
// copy must see the write, and the event is not complete until the gate opens.
TEST(AclEvents, StreamWaitsForAnotherStreamsRecord) {
  aclrtStream a = nullptr, b = nullptr;
  ASSERT_EQ(aclrtCreateStream(&a), ACL_SUCCESS);
  ASSERT_EQ(aclrtCreateStream(&b), ACL_SUCCESS);
  aclrtEvent start = nullptr, written = nullptr;
  ASSERT_EQ(aclrtCreateEvent(&start), ACL_SUCCESS);
  ASSERT_EQ(aclrtCreateEvent(&written), ACL_SUCCESS);
  const size_t n = 4096;
  void *src = nullptr, *mid = nullptr, *dst = nullptr;
  ASSERT_EQ(aclrtMalloc(&src, n, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  ASSERT_EQ(aclrtMalloc(&mid, n, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  ASSERT_EQ(aclrtMalloc(&dst, n, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemset(src, n, 0x3c, n), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemset(mid, n, 0, n), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemset(dst, n, 0, n), ACL_SUCCESS);
  {
    kvflash::testing::StreamGate gate(a);
    ASSERT_EQ(aclrtRecordEvent(start, a), ACL_SUCCESS);
    ASSERT_EQ(aclrtMemcpyAsync(mid, n, src, n, ACL_MEMCPY_DEVICE_TO_DEVICE, a), ACL_SUCCESS);
    ASSERT_EQ(aclrtRecordEvent(written, a), ACL_SUCCESS);
    ASSERT_EQ(aclrtStreamWaitEvent(b, written), ACL_SUCCESS);
    ASSERT_EQ(aclrtMemcpyAsync(dst, n, mid, n, ACL_MEMCPY_DEVICE_TO_DEVICE, b), ACL_SUCCESS);
    aclrtEventStatus status = ACL_EVENT_STATUS_RESERVED;
    EXPECT_EQ(aclrtQueryEvent(written, &status), ACL_SUCCESS);
    EXPECT_EQ(status, ACL_EVENT_STATUS_NOT_READY);
    float ms = 0;
    EXPECT_EQ(aclrtEventElapsedTime(&ms, start, written), ACL_ERROR_INVALID_PARAM);
    EXPECT_NE(recent().find("has not completed"), std::string::npos) << recent();
    EXPECT_EQ(static_cast<const uint8_t*>(dst)[0], 0);  // b is still waiting
    gate.release();
    ASSERT_EQ(aclrtSynchronizeStream(b), ACL_SUCCESS);  // b alone: its wait ends by a's record
  }
  std::vector<uint8_t> want(n, 0x3c);
  EXPECT_EQ(std::memcmp(dst, want.data(), n), 0);
  ASSERT_EQ(aclrtSynchronizeEvent(written), ACL_SUCCESS);
  aclrtEventStatus status = ACL_EVENT_STATUS_RESERVED;
  EXPECT_EQ(aclrtQueryEvent(written, &status), ACL_SUCCESS);
  EXPECT_EQ(status, ACL_EVENT_STATUS_COMPLETE);
  float ms = -1;
  ASSERT_EQ(aclrtEventElapsedTime(&ms, start, written), ACL_SUCCESS);
  EXPECT_GE(ms, 0.0f);
  EXPECT_EQ(aclrtDestroyEvent(start), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyEvent(written), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(a), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(b), ACL_SUCCESS);
  EXPECT_EQ(aclrtFree(src), ACL_SUCCESS);
  EXPECT_EQ(aclrtFree(mid), ACL_SUCCESS);
  EXPECT_EQ(aclrtFree(dst), ACL_SUCCESS);
}

// Destroying an event with a record still queued is safe: the record runs on its own reference.
TEST(AclEvents, DestroyWithARecordQueued) {
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
  aclrtEvent e = nullptr;
  ASSERT_EQ(aclrtCreateEvent(&e), ACL_SUCCESS);
  {
    kvflash::testing::StreamGate gate(s);
    ASSERT_EQ(aclrtRecordEvent(e, s), ACL_SUCCESS);
    EXPECT_EQ(aclrtDestroyEvent(e), ACL_SUCCESS);
  }
  EXPECT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
}

}  // namespace
