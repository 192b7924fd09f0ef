// aclnnFusedInferAttentionScoreV2: a varlen prefill in the TND layout. actualSeqLengths and
// actualSeqLengthsKv hold cumulative lengths (three requests of 3, 5 and 4 query rows over 7, 6
// and 2 keys), sparse mode 3 (causal from each request's bottom right) with the compressed mask
// shaped (1, 2048, 2048), grouped-query attention (4 query heads on 2 KV heads), an int8 key and
// value with V2's split antiquant parameters (keyAntiquantScale / keyAntiquantOffset and
// valueAntiquantScale / valueAntiquantOffset, one per tensor, keyAntiquantMode =
// valueAntiquantMode = 0; dequant(x) = (x + offset) * scale) and the softmax log-sum-exp output.
// The third request has fewer keys than query rows, so its first two rows see nothing (output 0,
// LSE +inf), as does the query's last row, past the last cumulative length. Checks every output
// element and every LSE against a double-precision loop and exits non-zero on any mismatch.
//
//   g++ -std=c++11 fia_v2.cpp -I P/include -I P/include/aclnn -I P/include/aclnnop -L P/lib64
//       -lascendcl -lnnopbase -lopapi_math -lopapi_transformer -lc_sec   (CANN 8.5's line)
#include <cmath>
#include <cstdint>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_fused_infer_attention_score_v2.h"
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

  const int64_t N = 4, KVN = 2, D = 64, G = N / KVN;
  // Cumulative lengths: request b's query rows are [qEnd[b-1], qEnd[b]) of the T dim, its keys
  // [kvEnd[b-1], kvEnd[b]) of T2. T is one row longer than the last query length.
  const std::vector<int64_t> qEnd = {3, 8, 12}, kvEnd = {7, 13, 15};
  const int64_t B = static_cast<int64_t>(qEnd.size()), T = 13, T2 = 15;
  Lcg rng(202);
  std::vector<double> q = RandomFp16Values(&rng, T * N * D, -1.0, 1.0);
  std::vector<int8_t> k(T2 * KVN * D), v(T2 * KVN * D);
  for (size_t i = 0; i < k.size(); ++i) {
    k[i] = static_cast<int8_t>(std::lround(rng.Uniform(-100, 100)));
    v[i] = static_cast<int8_t>(std::lround(rng.Uniform(-100, 100)));
  }
  // Per-tensor split antiquant, fp16: the key's scale and offset, then the value's. (The key's
  // offset moves all of a row's scores alike, so only the LSE shows it.)
  const double kScale = RoundToFp16(0.0125), kOffset = 3, vScale = RoundToFp16(0.02), vOffset = -5;
  const double aqValues[4] = {kScale, kOffset, vScale, vOffset};

  DeviceTensor query, key, value, maskT, aq[4], out, lse;
  CHECK_RET(CreateAclTensor(ToFp16(q), {T, N, D}, ACL_FLOAT16, &query) == 0, return 1);
  CHECK_RET(CreateAclTensor(k, {T2, KVN, D}, ACL_INT8, &key) == 0, return 1);
  CHECK_RET(CreateAclTensor(v, {T2, KVN, D}, ACL_INT8, &value) == 0, return 1);
  CHECK_RET(CreateAclTensor(CompressedCausalMask(), {1, 2048, 2048}, ACL_BOOL, &maskT) == 0,
            return 1);
  for (int i = 0; i < 4; ++i) {
    CHECK_RET(
        CreateAclTensor(ToFp16(std::vector<double>(1, aqValues[i])), {1}, ACL_FLOAT16, &aq[i]) == 0,
        return 1);
  }
  // Outputs start as NaN, so a row the operator did not write shows.
  CHECK_RET(CreateAclTensor(std::vector<aclFloat16>(T * N * D, aclFloatToFloat16(NAN)), {T, N, D},
                            ACL_FLOAT16, &out) == 0,
            return 1);
  CHECK_RET(CreateAclTensor(std::vector<float>(T * N, NAN), {T, N, 1}, ACL_FLOAT, &lse) == 0,
            return 1);
  aclTensor* keys[] = {key.tensor};
  aclTensor* values[] = {value.tensor};
  aclTensorList* keyList = aclCreateTensorList(keys, 1);
  aclTensorList* valueList = aclCreateTensorList(values, 1);
  aclIntArray* actualSeqLengths = aclCreateIntArray(qEnd.data(), qEnd.size());
  aclIntArray* actualSeqLengthsKv = aclCreateIntArray(kvEnd.data(), kvEnd.size());

  const double scaleValue = 1.0 / std::sqrt(static_cast<double>(D));
  char layout[16] = {0};
  CHECK_RET(strcpy_s(layout, sizeof(layout), "TND") == EOK, LOG_PRINT("strcpy_s layout failed\n");
            return 1);
  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  ret = aclnnFusedInferAttentionScoreV2GetWorkspaceSize(
      query.tensor, keyList, valueList, nullptr, maskT.tensor, actualSeqLengths, actualSeqLengthsKv,
      nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
      aq[0].tensor, aq[1].tensor, aq[2].tensor, aq[3].tensor, nullptr, nullptr, nullptr, N,
      scaleValue, 2147483647, 0, layout, KVN, /*sparseMode=*/3, /*innerPrecise=*/0,
      /*blockSize=*/0, /*antiquantMode=*/0, /*softmaxLseFlag=*/true, /*keyAntiquantMode=*/0,
      /*valueAntiquantMode=*/0, out.tensor, lse.tensor, &workspaceSize, &executor);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("GetWorkspaceSize failed. ERROR: %d %s\n", ret, aclGetRecentErrMsg());
            return 1);
  void* workspace = nullptr;
  if (workspaceSize > 0) {
    ret = aclrtMalloc(&workspace, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("allocate workspace failed. ERROR: %d\n", ret);
              return 1);
  }
  ret = aclnnFusedInferAttentionScoreV2(workspace, workspaceSize, executor, stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnFusedInferAttentionScoreV2 failed. ERROR: %d %s\n",
                                          ret, aclGetRecentErrMsg());
            return 1);
  ret = aclrtSynchronizeStream(stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d\n", ret);
            return 1);

  std::vector<aclFloat16> result(T * N * D, 0);
  std::vector<float> lseResult(T * N, 0.0f);
  ret = aclrtMemcpy(result.data(), result.size() * sizeof(result[0]), out.addr, out.bytes,
                    ACL_MEMCPY_DEVICE_TO_HOST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("copy result failed. ERROR: %d\n", ret); return 1);
  ret = aclrtMemcpy(lseResult.data(), lseResult.size() * sizeof(float), lse.addr, lse.bytes,
                    ACL_MEMCPY_DEVICE_TO_HOST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("copy lse failed. ERROR: %d\n", ret); return 1);
  int bad = 0;
  for (int64_t t = 0; t < T; ++t) {
    // The request of row t (B for the row past the last cumulative length) and its bounds.
    int64_t b = 0;
    while (b < B && t >= qEnd[b]) ++b;
    const int64_t q0 = b == 0 ? 0 : qEnd[b - 1], kv0 = b == 0 ? 0 : kvEnd[b - 1];
    const int64_t s1 = b < B ? qEnd[b] - q0 : 0, s2 = b < B ? kvEnd[b] - kv0 : 0;
    for (int64_t h = 0; h < N; ++h) {
      const int64_t kvh = h / G;
      auto at = [&](const std::vector<int8_t>& x, double scale, double offset) {
        return [&x, scale, offset, kv0, kvh](int64_t j, int64_t d) {
          return (x[((kv0 + j) * KVN + kvh) * D + d] + offset) * scale;
        };
      };
      std::vector<double> qrow(q.begin() + (t * N + h) * D, q.begin() + (t * N + h + 1) * D);
      std::vector<int64_t> visible;  // sparse mode 3: keys j <= i + S2 - S1 of the request
      std::vector<double> vals;
      for (int64_t j = 0; b < B && j < s2 && j <= (t - q0) + s2 - s1; ++j) {
        visible.push_back(j);
        for (int64_t d = 0; d < D; ++d) vals.push_back(at(v, vScale, vOffset)(j, d));
      }
      double wantLse = 0;
      const std::vector<double> want =
          AttendRow(qrow, visible, at(k, kScale, kOffset), at(v, vScale, vOffset), scaleValue,
                    nullptr, nullptr, nullptr, &wantLse);
      char what[64];
      snprintf(what, sizeof(what), "t=%d h=%d", static_cast<int>(t), static_cast<int>(h));
      bad += CheckFp16Row(what, result.data() + (t * N + h) * D, want, AbsMax(vals));
      bad += CheckLse(what, lseResult[t * N + h], wantLse, bad);
    }
  }
  LOG_PRINT("fia_v2: %s (%d mismatches of %d outputs and %d LSEs)\n", bad == 0 ? "PASS" : "FAIL",
            bad, static_cast<int>(T * N * D), static_cast<int>(T * N));

  aclDestroyTensorList(keyList);
  aclDestroyTensorList(valueList);
  aclDestroyIntArray(actualSeqLengths);
  aclDestroyIntArray(actualSeqLengthsKv);
  DestroyDeviceTensor(&query);
  DestroyDeviceTensor(&key);
  DestroyDeviceTensor(&value);
  DestroyDeviceTensor(&maskT);
  for (int i = 0; i < 4; ++i) DestroyDeviceTensor(&aq[i]);
  DestroyDeviceTensor(&out);
  DestroyDeviceTensor(&lse);
  if (workspace != nullptr) aclrtFree(workspace);
  aclrtDestroyStream(stream);
  aclrtResetDevice(deviceId);
  aclFinalize();
  return bad == 0 ? 0 : 1;
}
