// aclnnPromptFlashAttentionV2: prefill in the BNSD layout with sparse mode 2 (causal from the top
// left, with CANN's 2048 x 2048 compressed mask) and per-batch KV lengths (actualSeqLengthsKv:
// batch 1 has 7 of its 10 keys), so the rows past the 7th key see only those 7. Checks every output
// element against a double-precision loop and exits non-zero on any mismatch.
//
//   g++ -std=c++11 pfa_v2.cpp -I P/include -I P/include/aclnn -I P/include/aclnnop -L P/lib64
//       -lascendcl -lnnopbase -lopapi_math -lopapi_transformer -lc_sec   (CANN 8.5's line)
#include <cmath>
#include <cstdint>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_prompt_flash_attention_v2.h"
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

  const int64_t B = 2, S = 10, N = 2, KVN = 2, D = 64, G = N / KVN;
  const std::vector<int64_t> kvLengths = {10, 7};
  Lcg rng(202);
  std::vector<double> q = RandomFp16Values(&rng, B * N * S * D, -1.0, 1.0);
  std::vector<double> k = RandomFp16Values(&rng, B * KVN * S * D, -1.0, 1.0);
  std::vector<double> v = RandomFp16Values(&rng, B * KVN * S * D, -2.0, 2.0);
  // Sparse mode 2: row i attends keys j <= i (and j below the batch's KV length).
  auto visibleKey = [&](int64_t b, int64_t i, int64_t j) { return j <= i && j < kvLengths[b]; };

  DeviceTensor query, key, value, maskT, out;
  CHECK_RET(CreateAclTensor(ToFp16(q), {B, N, S, D}, ACL_FLOAT16, &query) == 0, return 1);
  CHECK_RET(CreateAclTensor(ToFp16(k), {B, KVN, S, D}, ACL_FLOAT16, &key) == 0, return 1);
  CHECK_RET(CreateAclTensor(ToFp16(v), {B, KVN, S, D}, ACL_FLOAT16, &value) == 0, return 1);
  CHECK_RET(CreateAclTensor(CompressedCausalMask(), {2048, 2048}, ACL_BOOL, &maskT) == 0, return 1);
  CHECK_RET(CreateAclTensor(std::vector<aclFloat16>(B * N * S * D, 0), {B, N, S, D}, ACL_FLOAT16,
                            &out) == 0,
            return 1);
  aclIntArray* actualSeqLengthsKv = aclCreateIntArray(kvLengths.data(), kvLengths.size());

  const double scaleValue = 1.0 / std::sqrt(static_cast<double>(D));
  char layout[16] = {0};
  CHECK_RET(strcpy_s(layout, sizeof(layout), "BNSD") == EOK,
            LOG_PRINT("strcpy_s layout failed\n"); return 1);
  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  ret = aclnnPromptFlashAttentionV2GetWorkspaceSize(
      query.tensor, key.tensor, value.tensor, nullptr, maskT.tensor, nullptr, actualSeqLengthsKv,
      nullptr, nullptr, nullptr, nullptr, nullptr, N, scaleValue, 2147483647, 0, layout, KVN,
      /*sparseMode=*/2, out.tensor, &workspaceSize, &executor);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("GetWorkspaceSize failed. ERROR: %d %s\n", ret, aclGetRecentErrMsg());
            return 1);
  void* workspace = nullptr;
  if (workspaceSize > 0) {
    ret = aclrtMalloc(&workspace, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("allocate workspace failed. ERROR: %d\n", ret);
              return 1);
  }
  ret = aclnnPromptFlashAttentionV2(workspace, workspaceSize, executor, stream);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("aclnnPromptFlashAttentionV2 failed. ERROR: %d %s\n", ret,
                      aclGetRecentErrMsg());
            return 1);
  ret = aclrtSynchronizeStream(stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d\n", ret);
            return 1);

  std::vector<aclFloat16> result(B * N * S * D, 0);
  ret = aclrtMemcpy(result.data(), result.size() * sizeof(result[0]), out.addr, out.bytes,
                    ACL_MEMCPY_DEVICE_TO_HOST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("copy result failed. ERROR: %d\n", ret); return 1);
  int bad = 0;
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < N; ++h) {
      const int64_t kvh = h / G;
      auto at = [&](const std::vector<double>& t) {
        return [&t, b, kvh](int64_t j, int64_t d) { return t[((b * KVN + kvh) * S + j) * D + d]; };
      };
      for (int64_t i = 0; i < S; ++i) {
        const int64_t row = (b * N + h) * S + i;
        std::vector<double> qrow(q.begin() + row * D, q.begin() + (row + 1) * D);
        std::vector<int64_t> visible;
        std::vector<double> vals;
        for (int64_t j = 0; j < S; ++j) {
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
  LOG_PRINT("pfa_v2: %s (%d mismatches of %d)\n", bad == 0 ? "PASS" : "FAIL", bad,
            static_cast<int>(B * N * S * D));

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
