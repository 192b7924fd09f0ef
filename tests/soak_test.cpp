// Soak: many small calls through the aclnn API, as an inference engine makes them (tensors made
// and destroyed per call, phase 1, phase 2, synchronisation), alternating IFA V4 and SFA V2 on
// tiny problems, with the resident set size read from /proc/self/statm after 10% of the calls and
// at the end: it must stay constant within a small bound (no per-call growth), and the results
// must stay right. In the ASan pass LeakSanitizer checks the same loop for leaks at exit.
//
// KVFLASH_SOAK_CALLS sets the number of calls (default 20000; 2000 under sanitizers). The full
// soak of docs/testing.md is KVFLASH_SOAK_CALLS=1000000 build/release/tests/soak_test.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "aclnnop/aclnn_incre_flash_attention_v4.h"
#include "aclnnop/aclnn_sparse_flash_attention_v2.h"
#include "kvflash/ifa.hpp"
#include "kvflash/sfa.hpp"
#include "support/ifa_cases.hpp"
#include "support/sfa_cases.hpp"

namespace kvflash::testing {
namespace {

int64_t resident_bytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return -1;
  long size = 0, resident = 0;
  const int n = std::fscanf(f, "%ld %ld", &size, &resident);
  std::fclose(f);
  return n == 2 ? static_cast<int64_t>(resident) * sysconf(_SC_PAGESIZE) : -1;
}

aclTensor* tensor_of(const TensorView& v, void* data) {
  return aclCreateTensor(v.shape.data(), static_cast<uint64_t>(v.rank),
                         static_cast<aclDataType>(v.dtype), v.strides.data(), v.offset,
                         ACL_FORMAT_ND, nullptr, 0, data);
}
aclTensor* tensor_of(const TensorView& v) { return tensor_of(v, v.data); }

std::vector<std::byte> bytes_of(const TensorView& v) {
  const auto* p = static_cast<const std::byte*>(v.data);
  return {p, p + v.numel() * static_cast<int64_t>(dtype_size(v.dtype))};
}

IfaCase tiny_ifa() {
  IfaCase c;
  c.num_heads = 2;
  c.num_kv_heads = 1;
  c.head_dim = 16;
  c.kv_lens = {4};
  c.mask = MaskShape::kBS;
  c.tag = "soak";
  return c;
}

SfaCase tiny_sfa() {
  SfaCase c;
  c.num_heads = 1;
  c.sparse_size = 2;
  c.kv_lens = {3};
  c.tag = "soak";
  return c;
}

// One IFA V4 call, everything made and released inside.
bool ifa_call(const IfaArgs& a, aclrtStream stream, std::vector<std::byte>& ws) {
  aclTensor* q = tensor_of(a.query);
  aclTensor* k = tensor_of(a.key[0]);
  aclTensor* v = tensor_of(a.value[0]);
  aclTensor* mask = tensor_of(*a.atten_mask);
  aclTensor* out = tensor_of(a.attention_out);
  aclTensorList* keys = aclCreateTensorList(&k, 1);
  aclTensorList* values = aclCreateTensorList(&v, 1);
  aclIntArray* lens = aclCreateIntArray(a.actual_seq_lengths->data(), a.actual_seq_lengths->size());
  char layout[] = "BSH";
  uint64_t ws_size = 0;
  aclOpExecutor* exec = nullptr;
  bool ok = aclnnIncreFlashAttentionV4GetWorkspaceSize(
                q, keys, values, nullptr, mask, lens, nullptr, nullptr, nullptr, nullptr, nullptr,
                nullptr, nullptr, nullptr, nullptr, a.num_heads, a.scale_value, layout,
                a.num_key_value_heads, 0, 1, out, &ws_size, &exec) == ACLNN_SUCCESS;
  if (ok && ws.size() < ws_size) ws.resize(ws_size);
  ok = ok && aclnnIncreFlashAttentionV4(ws.data(), ws_size, exec, stream) == ACLNN_SUCCESS;
  ok = ok && aclrtSynchronizeStream(stream) == ACL_SUCCESS;
  for (aclTensor* t : {q, k, v, mask, out}) aclDestroyTensor(t);
  aclDestroyTensorList(keys);
  aclDestroyTensorList(values);
  aclDestroyIntArray(lens);
  return ok;
}

bool sfa_call(const SfaArgs& a, aclrtStream stream, std::vector<std::byte>& ws) {
  aclTensor *q = tensor_of(a.query), *k = tensor_of(a.key), *si = tensor_of(a.sparse_indices),
            *qr = tensor_of(a.query_rope), *kr = tensor_of(a.key_rope),
            *out = tensor_of(a.attention_out);
  aclTensor* lkv = a.actual_seq_lengths_kv ? tensor_of(*a.actual_seq_lengths_kv) : nullptr;
  char lq[] = "BSND", lk[] = "BSND";
  uint64_t ws_size = 0;
  aclOpExecutor* exec = nullptr;
  bool ok = aclnnSparseFlashAttentionV2GetWorkspaceSize(
                q, k, nullptr, si, nullptr, nullptr, lkv, qr, kr, nullptr, a.scale_value,
                a.sparse_block_size, lq, lk, a.sparse_mode, a.pre_tokens, a.next_tokens,
                a.attention_mode, false, out, nullptr, nullptr, &ws_size, &exec) == ACLNN_SUCCESS;
  if (ok && ws.size() < ws_size) ws.resize(ws_size);
  ok = ok && aclnnSparseFlashAttentionV2(ws.data(), ws_size, exec, stream) == ACLNN_SUCCESS;
  ok = ok && aclrtSynchronizeStream(stream) == ACL_SUCCESS;
  for (aclTensor* t : {q, k, si, qr, kr, out, lkv}) aclDestroyTensor(t);
  return ok;
}

TEST(Soak, ConstantMemoryOverManyCalls) {
  const char* env = std::getenv("KVFLASH_SOAK_CALLS");
  const int64_t calls = env ? std::atoll(env) : (under_sanitizer() ? 2000 : 20000);
  IfaCaseData ifa(tiny_ifa());
  SfaCaseData sfa(tiny_sfa());
  IfaArgs ia = ifa.args();
  SfaArgs sa = sfa.args();
  ASSERT_EQ(incre_flash_attention(ia), Status::kSuccess);
  ASSERT_EQ(sparse_flash_attention(sa), Status::kSuccess);
  const std::vector<std::byte> ifa_want = bytes_of(ia.attention_out);
  const std::vector<std::byte> sfa_want = bytes_of(sa.attention_out);

  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  std::vector<std::byte> ws;
  int64_t rss_warm = 0;
  for (int64_t i = 0; i < calls; ++i) {
    if (i == calls / 10) rss_warm = resident_bytes();
    const bool is_sfa = i % 4 == 3;
    if (is_sfa) {
      ASSERT_TRUE(sfa_call(sa, stream, ws)) << "call " << i << ": " << aclGetRecentErrMsg();
    } else {
      ASSERT_TRUE(ifa_call(ia, stream, ws)) << "call " << i << ": " << aclGetRecentErrMsg();
    }
    if (i % 997 == 0) {  // the results stay right
      ASSERT_TRUE(is_sfa ? bytes_of(sa.attention_out) == sfa_want
                         : bytes_of(ia.attention_out) == ifa_want)
          << "call " << i;
    }
  }
  const int64_t rss_end = resident_bytes();
  ASSERT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
  std::printf("soak: %lld calls, resident %.2f MiB after 10%%, %.2f MiB at the end (%+.3f MiB)\n",
              static_cast<long long>(calls), rss_warm / 1048576.0, rss_end / 1048576.0,
              (rss_end - rss_warm) / 1048576.0);
  // Sanitizers keep freed memory in quarantine, so the resident size grows for another reason;
  // their pass checks leaks instead.
  if (!under_sanitizer()) {
    EXPECT_LE(rss_end - rss_warm, int64_t{2} << 20);
  }
}

}  // namespace
}  // namespace kvflash::testing
