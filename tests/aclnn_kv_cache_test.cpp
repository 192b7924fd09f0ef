// aclnnScatterPaKvCache through the C API: every case of the shared list (support/kv_cache_cases)
// against the oracle's exact bytes, the wrapper facts (null modes mean "Norm" / "None", a 0-D
// value pair writes the key only, null value handles are 161001), the refusals by name with
// *executor = nullptr, and slot_mapping read in stream order: slots written on the stream before
// the call are honoured, a bad one is reported at synchronisation with the caches unchanged.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_scatter_pa_kv_cache.h"
#include "kv_cache_reference.hpp"
#include "support/acl_tensors.hpp"
#include "support/kv_cache_cases.hpp"
#include "support/stream_gate.hpp"

namespace {

using kvflash::ScatterPaKvCacheArgs;
using kvflash::TensorView;
using kvflash::testing::AclTensors;
using kvflash::testing::KvCacheCase;
using kvflash::testing::KvCacheCaseData;

aclOpExecutor* const kSentinel = reinterpret_cast<aclOpExecutor*>(uintptr_t{0xdead0});
std::string recent() { return aclGetRecentErrMsg(); }

struct Call {
  explicit Call(const ScatterPaKvCacheArgs& a) {
    key = t.make(a.key);
    key_cache = t.make(a.key_cache);
    slots = t.make(a.slot_mapping);
    if (a.value) {
      value = t.make(*a.value);
      value_cache = t.make(*a.value_cache);
    } else {  // upstream's key-only form: 0-D value handles
      value = t.make(TensorView::contiguous(a.key.data, a.key.dtype, {}));
      value_cache = t.make(TensorView::contiguous(a.key_cache.data, a.key.dtype, {}));
    }
  }
  aclnnStatus phase1(uint64_t* ws, aclOpExecutor** ex) {
    return aclnnScatterPaKvCacheGetWorkspaceSize(key, key_cache, slots, value, value_cache,
                                                 compress, nullptr, nullptr, cache_mode,
                                                 scatter_mode, strides, offsets, ws, ex);
  }
  aclnnStatus enqueue(aclrtStream stream, std::vector<std::byte>* ws) {
    uint64_t size = 0;
    aclOpExecutor* ex = nullptr;
    const aclnnStatus s = phase1(&size, &ex);
    if (s != ACLNN_SUCCESS) return s;
    ws->resize(size);
    return aclnnScatterPaKvCache(ws->data(), size, ex, stream);
  }
  aclError run() {
    std::vector<std::byte> ws;
    const aclnnStatus s = enqueue(nullptr, &ws);
    if (s != ACLNN_SUCCESS) return s;
    return aclrtSynchronizeStream(nullptr);
  }

  AclTensors t;
  aclTensor *key, *key_cache, *slots, *value, *value_cache, *compress = nullptr;
  char* cache_mode = nullptr;
  char* scatter_mode = nullptr;
  aclIntArray* strides = nullptr;
  aclIntArray* offsets = nullptr;
};

bool same_caches(const ScatterPaKvCacheArgs& a, const kvflash::reference::KvCacheReference& ref) {
  return kvflash::reference::element_bytes(a.key_cache) == ref.key_cache &&
         (!a.value_cache || kvflash::reference::element_bytes(*a.value_cache) == ref.value_cache);
}

TEST(AclnnKvCache, EveryCaseMatchesTheReference) {
  uint32_t seed = 1;
  for (const KvCacheCase& c : kvflash::testing::kv_cache_cases()) {
    KvCacheCaseData d;
    fill_kv_cache_case(c, &d, seed++);
    const auto ref = kvflash::reference::kv_cache_reference(d.args);
    Call call(d.args);
    ASSERT_EQ(call.run(), ACL_SUCCESS) << c.name() << ": " << recent();
    EXPECT_TRUE(same_caches(d.args, ref)) << c.name();
  }
}

// Upstream's spellings of the defaults, and op-plugin's strides / offsets, are accepted.
TEST(AclnnKvCache, ExplicitModesAndOpPluginsStrides) {
  KvCacheCaseData d;
  fill_kv_cache_case(KvCacheCase{}, &d, 3);
  const auto ref = kvflash::reference::kv_cache_reference(d.args);
  Call call(d.args);
  char norm[] = "Norm", none[] = "None";
  call.cache_mode = norm, call.scatter_mode = none;
  call.strides = call.t.array(std::vector<int64_t>{1, 1});
  call.offsets = call.t.array(std::vector<int64_t>{0, 0});
  ASSERT_EQ(call.run(), ACL_SUCCESS) << recent();
  EXPECT_TRUE(same_caches(d.args, ref));
}

TEST(AclnnKvCache, RefusalsLeaveNoExecutor) {
  KvCacheCaseData d;
  fill_kv_cache_case(KvCacheCase{}, &d, 4);
  struct Bad {
    const char* what;
    void (*set)(Call&);
    aclnnStatus status;
    const char* message;
  };
  static char pa_nz[] = "PA_NZ", nct[] = "Nct";
  const Bad bads[] = {
      {"PA_NZ", [](Call& c) { c.cache_mode = pa_nz; }, ACLNN_ERR_PARAM_INVALID,
       "cache_mode \"PA_NZ\" (a FRACTAL_NZ cache"},
      {"Nct", [](Call& c) { c.scatter_mode = nct; }, ACLNN_ERR_PARAM_INVALID,
       "scatter_mode \"Nct\" is not supported"},
      {"compress", [](Call& c) { c.compress = c.slots; }, ACLNN_ERR_PARAM_INVALID, "compress_lens"},
      {"null key", [](Call& c) { c.key = nullptr; }, ACLNN_ERR_PARAM_NULLPTR, "key"},
      {"null value", [](Call& c) { c.value = nullptr; }, ACLNN_ERR_PARAM_NULLPTR, "value"},
      {"null value cache", [](Call& c) { c.value_cache = nullptr; }, ACLNN_ERR_PARAM_NULLPTR,
       "valueCacheRef"},
      {"null slots", [](Call& c) { c.slots = nullptr; }, ACLNN_ERR_PARAM_NULLPTR, "slotMapping"},
  };
  for (const Bad& b : bads) {
    Call call(d.args);
    b.set(call);
    uint64_t ws = 0;
    aclOpExecutor* ex = kSentinel;
    EXPECT_EQ(call.phase1(&ws, &ex), b.status) << b.what;
    EXPECT_EQ(ex, nullptr) << b.what;
    EXPECT_NE(recent().find(b.message), std::string::npos) << b.what << ": " << recent();
  }
}

void copy_async(const TensorView& v, const std::vector<int32_t>& host, aclrtStream stream) {
  const size_t bytes = host.size() * sizeof(int32_t);
  ASSERT_EQ(aclrtMemcpyAsync(v.data, bytes, host.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE, stream),
            ACL_SUCCESS);
}

// slot_mapping is device data read in stream order: garbage when phase 2 is called, made valid by
// a copy queued before it on the same stream, the run writes the valid slots.
TEST(AclnnKvCache, SlotsWrittenOnTheStreamBeforeTheCallAreHonoured) {
  KvCacheCase c;
  c.tokens = 6, c.skip_every = 0;
  KvCacheCaseData d;
  fill_kv_cache_case(c, &d, 5);
  const auto* s = reinterpret_cast<const int32_t*>(d.slots.data());
  const std::vector<int32_t> slots(s, s + c.tokens);
  const auto ref = kvflash::reference::kv_cache_reference(d.args);
  for (int64_t t = 0; t < c.tokens; ++t) d.set_slot(t, 1 << 30);
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  {
    Call call(d.args);
    std::vector<std::byte> ws;
    kvflash::testing::StreamGate gate(stream);
    copy_async(d.args.slot_mapping, slots, stream);
    ASSERT_EQ(call.enqueue(stream, &ws), ACLNN_SUCCESS) << recent();
    gate.release();
    ASSERT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS) << recent();
  }
  EXPECT_TRUE(same_caches(d.args, ref));
  EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
}

// A slot past the cache: phase 2 queues the write, the stream's synchronisation reports 507015
// naming the entry, and nothing was written.
TEST(AclnnKvCache, BadSlotIsReportedAtSynchronizeAndNothingIsWritten) {
  KvCacheCase c;
  c.tokens = 6, c.skip_every = 0;
  KvCacheCaseData d;
  fill_kv_cache_case(c, &d, 6);
  d.set_slot(4, c.num_blocks * c.block_size + 3);
  const std::vector<uint8_t> before = kvflash::reference::element_bytes(d.args.key_cache);
  Call call(d.args);
  EXPECT_EQ(call.run(), ACL_ERROR_RT_AICORE_EXCEPTION);
  EXPECT_NE(recent().find("slot_mapping[4] (35) is outside the cache"), std::string::npos)
      << recent();
  EXPECT_EQ(kvflash::reference::element_bytes(d.args.key_cache), before);
}

}  // namespace
