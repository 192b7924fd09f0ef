// aclnnPromptFlashAttention (V1): prefill of 12 tokens in the BSH layout, grouped-query attention
// (4 query heads on 2 KV heads), and a full boolean mask (B, 1, S, S): causal, plus one key that
// batch 1 hides from every row. Checks every output element against a double-precision loop and
// exits non-zero on any mismatch.
//
//   g++ -std=c++11 pfa_v1.cpp -I P/include -I P/include/aclnn -I P/include/aclnnop -L P/lib64
//       -lascendcl -lnnopbase -lopapi_math -lopapi_transformer -lc_sec   (CANN 8.5's line)
#include <cmath>
#include <cstdint>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_prompt_flash_attention.h"
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

  const int64_t B = 2, S = 12, N = 4, KVN = 2, D = 32, G = N / KVN;
  Lcg rng(101);
  std::vector<double> q = RandomFp16Values(&rng, B * S * N * D, -1.0, 1.0);
  std::vector<double> k = RandomFp16Values(&rng, B * S * KVN * D, -1.0, 1.0);
  std::vector<double> v = RandomFp16Values(&rng, B * S * KVN * D, -2.0, 2.0);
  // 1 = masked: the future, and key 2 of batch 1 for every row after it.
  auto masked = [](int64_t b, int64_t i, int64_t j) {
    return j > i || (b == 1 && j == 2 && i > 2);
  };
  std::vector<uint8_t> mask(B * S * S);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < S; ++i)
      for (int64_t j = 0; j < S; ++j) mask[(b * S + i) * S + j] = masked(b, i, j) ? 1 : 0;

  DeviceTensor query, key, value, maskT, out;
  CHECK_RET(CreateAclTensor(ToFp16(q), {B, S, N * D}, ACL_FLOAT16, &query) == 0, return 1);
  CHECK_RET(CreateAclTensor(ToFp16(k), {B, S, KVN * D}, ACL_FLOAT16, &key) == 0, return 1);
  CHECK_RET(CreateAclTensor(ToFp16(v), {B, S, KVN * D}, ACL_FLOAT16, &value) == 0, return 1);
  CHECK_RET(CreateAclTensor(mask, {B, 1, S, S}, ACL_BOOL, &maskT) == 0, return 1);
  CHECK_RET(CreateAclTensor(std::vector<aclFloat16>(B * S * N * D, 0), {B, S, N * D}, ACL_FLOAT16,
                            &out) == 0,
            return 1);

  const double scaleValue = 1.0 / std::sqrt(static_cast<double>(D));
  char layout[16] = {0};
  CHECK_RET(strcpy_s(layout, sizeof(layout), "BSH") == EOK,
            LOG_PRINT("strcpy_s layout failed\n"); return 1);
  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  ret = aclnnPromptFlashAttentionGetWorkspaceSize(query.tensor, key.tensor, value.tensor, nullptr,
                                                  maskT.tensor, nullptr, N, scaleValue, 2147483647,
                                                  2147483647, layout, KVN, out.tensor,
                                                  &workspaceSize, &executor);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("GetWorkspaceSize failed. ERROR: %d %s\n", ret, aclGetRecentErrMsg());
            return 1);
  void* workspace = nullptr;
  if (workspaceSize > 0) {
    ret = aclrtMalloc(&workspace, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("allocate workspace failed. ERROR: %d\n", ret);
              return 1);
  }
  ret = aclnnPromptFlashAttention(workspace, workspaceSize, executor, stream);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("aclnnPromptFlashAttention failed. ERROR: %d %s\n", ret,
                      aclGetRecentErrMsg());
            return 1);
  ret = aclrtSynchronizeStream(stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d\n", ret);
            return 1);

  std::vector<aclFloat16> result(B * S * N * D, 0);
  ret = aclrtMemcpy(result.data(), result.size() * sizeof(result[0]), out.addr, out.bytes,
                    ACL_MEMCPY_DEVICE_TO_HOST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("copy result failed. ERROR: %d\n", ret); return 1);
  int bad = 0;
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t i = 0; i < S; ++i) {
      for (int64_t h = 0; h < N; ++h) {
        const int64_t kvh = h / G;
        const int64_t row = (b * S + i) * N + h;
        std::vector<double> qrow(q.begin() + row * D, q.begin() + (row + 1) * D);
        std::vector<int64_t> visible;
        for (int64_t j = 0; j < S; ++j)
          if (!masked(b, i, j)) visible.push_back(j);
        auto at = [&](const std::vector<double>& t) {
          return [&t, b, kvh](int64_t j, int64_t d) {
            return t[((b * S + j) * KVN + kvh) * D + d];
          };
        };
        std::vector<double> vals;
        for (size_t n = 0; n < visible.size(); ++n)
          for (int64_t d = 0; d < D; ++d) vals.push_back(at(v)(visible[n], d));
        const std::vector<double> want = AttendRow(qrow, visible, at(k), at(v), scaleValue);
        char what[64];
        snprintf(what, sizeof(what), "b=%d i=%d h=%d", static_cast<int>(b), static_cast<int>(i),
                 static_cast<int>(h));
        bad += CheckFp16Row(what, result.data() + row * D, want, AbsMax(vals));
      }
    }
  }
  LOG_PRINT("pfa_v1: %s (%d mismatches of %d)\n", bad == 0 ? "PASS" : "FAIL", bad,
            static_cast<int>(B * S * N * D));

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
