// aclnnLightningIndexer: the top-16 keys of each query row of a DeepSeek-V3.2-like indexer step
// (BSND query of 2 rows x 4 heads, one key head, D = 128), fp32 head weights, sparse mode 3
// (causal from the bottom right), per-batch key lengths as a device tensor (batch 1 has 9 keys, so
// its rows have fewer than 16 candidates and end in -1), and the selected scores (returnValues).
// The program scores every key in double precision and checks that each row's indices are the
// top-k (by score, within the tolerance of docs/lightning_indexer.md) in descending order, that
// the values are those scores rounded to fp16, and that the empty slots hold -1; exits non-zero on
// any mismatch.
//
//   g++ -std=c++11 li_basic.cpp -I P/include -I P/include/aclnn -I P/include/aclnnop -L P/lib64
//       -lascendcl -lnnopbase -lopapi_math -lopapi_transformer -lc_sec   (CANN 8.5's line)
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_lightning_indexer.h"
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

  const int64_t B = 2, S1 = 2, N1 = 4, D = 128, S2 = 48, K = 16;
  const std::vector<int32_t> keyLengths = {48, 9};
  Lcg rng(606);
  std::vector<double> q = RandomFp16Values(&rng, B * S1 * N1 * D, -1.0, 1.0);
  std::vector<double> k = RandomFp16Values(&rng, B * S2 * D, -1.0, 1.0);
  std::vector<float> w(B * S1 * N1);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(rng.Uniform(0.1, 1.0));

  DeviceTensor query, key, weights, lengths, indices, values;
  CHECK_RET(CreateAclTensor(ToFp16(q), {B, S1, N1, D}, ACL_FLOAT16, &query) == 0, return 1);
  CHECK_RET(CreateAclTensor(ToFp16(k), {B, S2, 1, D}, ACL_FLOAT16, &key) == 0, return 1);
  CHECK_RET(CreateAclTensor(w, {B, S1, N1}, ACL_FLOAT, &weights) == 0, return 1);
  CHECK_RET(CreateAclTensor(keyLengths, {B}, ACL_INT32, &lengths) == 0, return 1);
  CHECK_RET(CreateAclTensor(std::vector<int32_t>(B * S1 * K, 7), {B, S1, 1, K}, ACL_INT32,
                            &indices) == 0,
            return 1);
  CHECK_RET(CreateAclTensor(std::vector<aclFloat16>(B * S1 * K, 0), {B, S1, 1, K}, ACL_FLOAT16,
                            &values) == 0,
            return 1);

  char layoutQuery[16] = {0}, layoutKey[16] = {0};
  CHECK_RET(strcpy_s(layoutQuery, sizeof(layoutQuery), "BSND") == EOK &&
                strcpy_s(layoutKey, sizeof(layoutKey), "BSND") == EOK,
            LOG_PRINT("strcpy_s layout failed\n"); return 1);
  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  ret = aclnnLightningIndexerGetWorkspaceSize(
      query.tensor, key.tensor, weights.tensor, nullptr, lengths.tensor, nullptr, layoutQuery,
      layoutKey, K, /*sparseMode=*/3, INT64_MAX, INT64_MAX, /*returnValues=*/true, indices.tensor,
      values.tensor, &workspaceSize, &executor);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("GetWorkspaceSize failed. ERROR: %d %s\n", ret, aclGetRecentErrMsg());
            return 1);
  void* workspace = nullptr;
  if (workspaceSize > 0) {
    ret = aclrtMalloc(&workspace, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("allocate workspace failed. ERROR: %d\n", ret);
              return 1);
  }
  ret = aclnnLightningIndexer(workspace, workspaceSize, executor, stream);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("aclnnLightningIndexer failed. ERROR: %d %s\n", ret, aclGetRecentErrMsg());
            return 1);
  ret = aclrtSynchronizeStream(stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d\n", ret);
            return 1);

  std::vector<int32_t> gotIndices(B * S1 * K);
  std::vector<aclFloat16> gotValues(B * S1 * K);
  ret = aclrtMemcpy(gotIndices.data(), gotIndices.size() * sizeof(int32_t), indices.addr,
                    indices.bytes, ACL_MEMCPY_DEVICE_TO_HOST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("copy indices failed. ERROR: %d\n", ret); return 1);
  ret = aclrtMemcpy(gotValues.data(), gotValues.size() * sizeof(aclFloat16), values.addr,
                    values.bytes, ACL_MEMCPY_DEVICE_TO_HOST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("copy values failed. ERROR: %d\n", ret); return 1);

  int bad = 0;
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t i = 0; i < S1; ++i) {
      const int64_t row = b * S1 + i;
      // Sparse mode 3: keys j < length - S1 + i + 1.
      const int64_t valid = std::min<int64_t>(keyLengths[b], keyLengths[b] - S1 + i + 1);
      std::vector<double> score(valid, 0.0);
      double scoreMax = 0;
      for (int64_t j = 0; j < valid; ++j) {
        for (int64_t h = 0; h < N1; ++h) {
          double dot = 0;
          for (int64_t d = 0; d < D; ++d)
            dot += q[(row * N1 + h) * D + d] * k[(b * S2 + j) * D + d];
          score[j] += w[row * N1 + h] * std::max(dot, 0.0);
        }
        scoreMax = std::max(scoreMax, std::fabs(score[j]));
      }
      std::vector<double> sorted = score;
      std::sort(sorted.begin(), sorted.end(), std::greater<double>());
      const double tol = 1e-3 * (1.0 + scoreMax);  // fp32 accumulation against exact scores
      std::vector<bool> seen(valid, false);
      for (int64_t r = 0; r < K; ++r) {
        const int32_t idx = gotIndices[row * K + r];
        const double value = aclFloat16ToFloat(gotValues[row * K + r]);
        if (r >= valid) {  // fewer candidates than K: -1 and -inf
          if (idx != -1 || !(std::isinf(value) && value < 0)) {
            if (bad++ < 5) LOG_PRINT("MISMATCH row %d slot %d: %d / %f, expected -1 / -inf\n",
                                     static_cast<int>(row), static_cast<int>(r), idx, value);
          }
          continue;
        }
        const bool ok = idx >= 0 && idx < valid && !seen[idx] &&
                        std::fabs(score[idx] - sorted[r]) <= tol &&
                        std::fabs(value - score[idx]) <= tol + std::fabs(score[idx]) / 1024;
        if (idx >= 0 && idx < valid) seen[idx] = true;
        if (!ok && bad++ < 5)
          LOG_PRINT("MISMATCH row %d slot %d: index %d value %f, rank score %f\n",
                    static_cast<int>(row), static_cast<int>(r), idx, value, sorted[r]);
      }
    }
  }
  LOG_PRINT("li_basic: %s (%d mismatches of %d slots)\n", bad == 0 ? "PASS" : "FAIL", bad,
            static_cast<int>(B * S1 * K));

  DestroyDeviceTensor(&query);
  DestroyDeviceTensor(&key);
  DestroyDeviceTensor(&weights);
  DestroyDeviceTensor(&lengths);
  DestroyDeviceTensor(&indices);
  DestroyDeviceTensor(&values);
  if (workspace != nullptr) aclrtFree(workspace);
  aclrtDestroyStream(stream);
  aclrtResetDevice(deviceId);
  aclFinalize();
  return bad == 0 ? 0 : 1;
}
