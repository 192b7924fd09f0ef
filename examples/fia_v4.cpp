// aclnnFusedInferAttentionScoreV4: prefill of 6 query rows over 10 keys in the BNSD layout, sparse
// mode 3 (causal from the bottom right, CANN's compressed mask), a learnable sink per head (V4's
// learnableSinkOptional: it joins each row's softmax denominator) and the softmax log-sum-exp
// output. Checks every output element and every LSE against a double-precision loop and exits
// non-zero on any mismatch.
//
//   g++ -std=c++11 fia_v4.cpp -I P/include -I P/include/aclnn -I P/include/aclnnop -L P/lib64
//       -lascendcl -lnnopbase -lopapi_math -lopapi_transformer -lc_sec   (CANN 8.5's line)
#include <cmath>
#include <cstdint>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_fused_infer_attention_score_v4.h"
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

  const int64_t B = 2, N = 4, KVN = 4, D = 32, S1 = 6, S2 = 10;
  Lcg rng(505);
  std::vector<double> q = RandomFp16Values(&rng, B * N * S1 * D, -1.0, 1.0);
  std::vector<double> k = RandomFp16Values(&rng, B * KVN * S2 * D, -1.0, 1.0);
  std::vector<double> v = RandomFp16Values(&rng, B * KVN * S2 * D, -2.0, 2.0);
  const std::vector<float> sinks = {-1.0f, 0.5f, 2.0f, 4.0f};  // one per head, fp32

  DeviceTensor query, key, value, maskT, sinkT, out, lse;
  CHECK_RET(CreateAclTensor(ToFp16(q), {B, N, S1, D}, ACL_FLOAT16, &query) == 0, return 1);
  CHECK_RET(CreateAclTensor(ToFp16(k), {B, KVN, S2, D}, ACL_FLOAT16, &key) == 0, return 1);
  CHECK_RET(CreateAclTensor(ToFp16(v), {B, KVN, S2, D}, ACL_FLOAT16, &value) == 0, return 1);
  CHECK_RET(CreateAclTensor(CompressedCausalMask(), {2048, 2048}, ACL_BOOL, &maskT) == 0, return 1);
  CHECK_RET(CreateAclTensor(sinks, {N}, ACL_FLOAT, &sinkT) == 0, return 1);
  CHECK_RET(CreateAclTensor(std::vector<aclFloat16>(B * N * S1 * D, 0), {B, N, S1, D}, ACL_FLOAT16,
                            &out) == 0,
            return 1);
  CHECK_RET(
      CreateAclTensor(std::vector<float>(B * N * S1, 0.0f), {B, N, S1, 1}, ACL_FLOAT, &lse) == 0,
      return 1);
  aclTensor* keys[] = {key.tensor};
  aclTensor* values[] = {value.tensor};
  aclTensorList* keyList = aclCreateTensorList(keys, 1);
  aclTensorList* valueList = aclCreateTensorList(values, 1);

  const double scaleValue = 1.0 / std::sqrt(static_cast<double>(D));
  char layout[16] = {0};
  CHECK_RET(strcpy_s(layout, sizeof(layout), "BNSD") == EOK,
            LOG_PRINT("strcpy_s layout failed\n"); return 1);
  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  ret = aclnnFusedInferAttentionScoreV4GetWorkspaceSize(
      query.tensor, keyList, valueList, nullptr, maskT.tensor, nullptr, nullptr, nullptr, nullptr,
      nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
      nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
      sinkT.tensor, N, scaleValue, 2147483647, 0, layout, KVN, /*sparseMode=*/3,
      /*innerPrecise=*/0, /*blockSize=*/0, /*antiquantMode=*/0, /*softmaxLseFlag=*/true, 0, 0,
      /*queryQuantMode=*/0, out.tensor, lse.tensor, &workspaceSize, &executor);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("GetWorkspaceSize failed. ERROR: %d %s\n", ret, aclGetRecentErrMsg());
            return 1);
  void* workspace = nullptr;
  if (workspaceSize > 0) {
    ret = aclrtMalloc(&workspace, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("allocate workspace failed. ERROR: %d\n", ret);
              return 1);
  }
  ret = aclnnFusedInferAttentionScoreV4(workspace, workspaceSize, executor, stream);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("aclnnFusedInferAttentionScoreV4 failed. ERROR: %d %s\n", ret,
                      aclGetRecentErrMsg());
            return 1);
  ret = aclrtSynchronizeStream(stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d\n", ret);
            return 1);

  std::vector<aclFloat16> result(B * N * S1 * D, 0);
  std::vector<float> lseResult(B * N * S1, 0.0f);
  ret = aclrtMemcpy(result.data(), result.size() * sizeof(result[0]), out.addr, out.bytes,
                    ACL_MEMCPY_DEVICE_TO_HOST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("copy result failed. ERROR: %d\n", ret); return 1);
  ret = aclrtMemcpy(lseResult.data(), lseResult.size() * sizeof(float), lse.addr, lse.bytes,
                    ACL_MEMCPY_DEVICE_TO_HOST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("copy lse failed. ERROR: %d\n", ret); return 1);
  int bad = 0;
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < N; ++h) {
      const int64_t kvh = h / (N / KVN);
      auto at = [&](const std::vector<double>& t) {
        return [&t, b, kvh](int64_t j, int64_t d) { return t[((b * KVN + kvh) * S2 + j) * D + d]; };
      };
      const double sink = sinks[h];
      for (int64_t i = 0; i < S1; ++i) {
        const int64_t row = (b * N + h) * S1 + i;
        std::vector<double> qrow(q.begin() + row * D, q.begin() + (row + 1) * D);
        std::vector<int64_t> visible;  // sparse mode 3: keys j <= i + S2 - S1
        std::vector<double> vals;
        for (int64_t j = 0; j <= i + S2 - S1; ++j) {
          visible.push_back(j);
          for (int64_t d = 0; d < D; ++d) vals.push_back(at(v)(j, d));
        }
        double wantLse = 0;
        const std::vector<double> want = AttendRow(qrow, visible, at(k), at(v), scaleValue, nullptr,
                                                   nullptr, &sink, &wantLse);
        char what[64];
        snprintf(what, sizeof(what), "b=%d h=%d i=%d", static_cast<int>(b), static_cast<int>(h),
                 static_cast<int>(i));
        bad += CheckFp16Row(what, result.data() + row * D, want, AbsMax(vals));
        bad += CheckLse(what, lseResult[row], wantLse, bad);
      }
    }
  }
  LOG_PRINT("fia_v4: %s (%d mismatches of %d outputs and %d LSEs)\n", bad == 0 ? "PASS" : "FAIL",
            bad, static_cast<int>(B * N * S1 * D), static_cast<int>(B * N * S1));

  aclDestroyTensorList(keyList);
  aclDestroyTensorList(valueList);
  DestroyDeviceTensor(&query);
  DestroyDeviceTensor(&key);
  DestroyDeviceTensor(&value);
  DestroyDeviceTensor(&maskT);
  DestroyDeviceTensor(&sinkT);
  DestroyDeviceTensor(&out);
  DestroyDeviceTensor(&lse);
  if (workspace != nullptr) aclrtFree(workspace);
  aclrtDestroyStream(stream);
  aclrtResetDevice(deviceId);
  aclFinalize();
  return bad == 0 ? 0 : 1;
}
