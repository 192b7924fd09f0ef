// aclnnPromptFlashAttentionV3: a prefill chunk over a longer KV cache in the BSND layout: 4 query
// rows against 9 keys, sparse mode 3 (causal from the bottom right, CANN's compressed mask), one KV
// head for 4 query heads, innerPrecise 1, and per-batch lengths: batch 1 has 3 query rows (its 4th
// row is padding, written as zeros) and 6 keys. Checks every output element against a
// double-precision loop and exits non-zero on any mismatch.
//
//   g++ -std=c++11 pfa_v3.cpp -I P/include -I P/include/aclnn -I P/include/aclnnop -L P/lib64
//       -lascendcl -lnnopbase -lopapi_math -lopapi_transformer -lc_sec   (CANN 8.5's line)
#include <cmath>
#include <cstdint>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_prompt_flash_attention_v3.h"
#include "attention_example_util.h"

int main() {
  int32_t deviceId = 0;
  aclrtStream stream = nullptr;
  auto ret = aclInit(nullptr);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclInit failed. ERROR: %d\n", ret); return 1);
  ret = aclrtSetDevice(deviceId);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSetDevice failed. ERROR: %d\n", ret); return 1);
  ret = aclrtCreateStream(&stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtCreateStream failed. ERROR: %d\n", ret); return 1);

  const int64_t B = 2, S1 = 4, S2 = 9, N = 4, KVN = 1, D = 32, G = N / KVN;
  const std::vector<int64_t> qLengths = {4, 3}, kvLengths = {9, 6};
  Lcg rng(303);
  std::vector<double> q = RandomFp16Values(&rng, B * S1 * N * D, -1.0, 1.0);
  std::vector<double> k = RandomFp16Values(&rng, B * S2 * KVN * D, -1.0, 1.0);
  std::vector<double> v = RandomFp16Values(&rng, B * S2 * KVN * D, -2.0, 2.0);
  // Sparse mode 3: query row i of a batch with q rows and kv keys attends keys j <= i + kv - q.
  auto visibleKey = [&](int64_t b, int64_t i, int64_t j) {
    return j <= i + kvLengths[b] - qLengths[b] && j < kvLengths[b];
  };

  DeviceTensor query, key, value, maskT, out;
  CHECK_RET(CreateAclTensor(ToFp16(q), {B, S1, N, D}, ACL_FLOAT16, &query) == 0, return 1);
  CHECK_RET(CreateAclTensor(ToFp16(k), {B, S2, KVN, D}, ACL_FLOAT16, &key) == 0, return 1);
  CHECK_RET(CreateAclTensor(ToFp16(v), {B, S2, KVN, D}, ACL_FLOAT16, &value) == 0, return 1);
  CHECK_RET(CreateAclTensor(CompressedCausalMask(), {2048, 2048}, ACL_BOOL, &maskT) == 0, return 1);
  // The output starts as ones, so the padding row's zeros are written by the operator.
  CHECK_RET(CreateAclTensor(std::vector<aclFloat16>(B * S1 * N * D, aclFloatToFloat16(1.0f)),
                            {B, S1, N, D}, ACL_FLOAT16, &out) == 0,
            return 1);
  aclIntArray* actualSeqLengths = aclCreateIntArray(qLengths.data(), qLengths.size());
  aclIntArray* actualSeqLengthsKv = aclCreateIntArray(kvLengths.data(), kvLengths.size());

  const double scaleValue = 1.0 / std::sqrt(static_cast<double>(D));
  char layout[16] = {0};
  CHECK_RET(strcpy_s(layout, sizeof(layout), "BSND") == EOK,
            LOG_PRINT("strcpy_s layout failed\n"); return 1);
  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  ret = aclnnPromptFlashAttentionV3GetWorkspaceSize(
      query.tensor, key.tensor, value.tensor, nullptr, maskT.tensor, actualSeqLengths,
      actualSeqLengthsKv, nullptr, nullptr, nullptr, nullptr, nullptr, N, scaleValue, 2147483647,
      0, layout, KVN, /*sparseMode=*/3, /*innerPrecise=*/1, out.tensor, &workspaceSize, &executor);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("GetWorkspaceSize failed. ERROR: %d %s\n", ret, aclGetRecentErrMsg());
            return 1);
  void* workspace = nullptr;
  if (workspaceSize > 0) {
    ret = aclrtMalloc(&workspace, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("allocate workspace failed. ERROR: %d\n", ret);
              return 1);
  }
  ret = aclnnPromptFlashAttentionV3(workspace, workspaceSize, executor, stream);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("aclnnPromptFlashAttentionV3 failed. ERROR: %d %s\n", ret,
                      aclGetRecentErrMsg());
            return 1);
  ret = aclrtSynchronizeStream(stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d\n", ret);
            return 1);

  std::vector<aclFloat16> result(B * S1 * N * D, 0);
  ret = aclrtMemcpy(result.data(), result.size() * sizeof(result[0]), out.addr, out.bytes,
                    ACL_MEMCPY_DEVICE_TO_HOST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("copy result failed. ERROR: %d\n", ret); return 1);
  int bad = 0;
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < N; ++h) {
      const int64_t kvh = h / G;
      auto at = [&](const std::vector<double>& t) {
        return [&t, b, kvh](int64_t j, int64_t d) { return t[((b * S2 + j) * KVN + kvh) * D + d]; };
      };
      for (int64_t i = 0; i < S1; ++i) {
        const int64_t row = (b * S1 + i) * N + h;
        std::vector<double> qrow(q.begin() + row * D, q.begin() + (row + 1) * D);
        std::vector<int64_t> visible;
        std::vector<double> vals;
        for (int64_t j = 0; i < qLengths[b] && j < S2; ++j) {  // padding rows see nothing: zeros
          if (!visibleKey(b, i, j)) continue;
          visible.push_back(j);
          for (int64_t d = 0; d < D; ++d) vals.push_back(at(v)(j, d));
        }
        const std::vector<double> want = AttendRow(qrow, visible, at(k), at(v), scaleValue);
        char what[64];
        snprintf(what, sizeof(what), "b=%d h=%d i=%d", static_cast<int>(b), static_cast<int>(h),
                 static_cast<int>(i));
        bad += CheckFp16Row(what, result.data() + row * D, want, AbsMax(vals));
      }
    }
  }
  LOG_PRINT("pfa_v3: %s (%d mismatches of %d)\n", bad == 0 ? "PASS" : "FAIL", bad,
            static_cast<int>(B * S1 * N * D));

  aclDestroyIntArray(actualSeqLengths);
  aclDestroyIntArray(actualSeqLengthsKv);
  DestroyDeviceTensor(&query);
  DestroyDeviceTensor(&key);
  DestroyDeviceTensor(&value);
  DestroyDeviceTensor(&maskT);
  DestroyDeviceTensor(&out);
  if (workspace != nullptr) aclrtFree(workspace);
  aclrtDestroyStream(stream);
  aclrtResetDevice(deviceId);
  aclFinalize();
  return bad == 0 ? 0 : 1;
}
