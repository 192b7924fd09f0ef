// aclnnFusedInferAttentionScoreV3: a decode step (one query row per batch) in the BSH layout over
// a paged KV cache (blocks of 16 tokens in a shuffled block table, the cache's unused slots
// holding values that would show if read), grouped-query attention (8 query heads on 2 KV heads),
// per-batch KV lengths, and the softmax log-sum-exp output. Checks every output element and every
// LSE against a double-precision loop and exits non-zero on any mismatch.
//
//   g++ -std=c++11 fia_v3.cpp -I P/include -I P/include/aclnn -I P/include/aclnnop -L P/lib64
//       -lascendcl -lnnopbase -lopapi_math -lopapi_transformer -lc_sec   (CANN 8.5's line)
#include <cmath>
#include <cstdint>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_fused_infer_attention_score_v3.h"
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

  const int64_t B = 2, N = 8, KVN = 2, D = 64, H = KVN * D, G = N / KVN;
  const int64_t blockSize = 16, blockNum = 6, maxBlocks = 3;
  const std::vector<int64_t> kvLengths = {40, 17};
  // Batch 0 uses cache blocks 4, 0, 5; batch 1 uses 2 and 1 (its third entry is never read).
  const int32_t tableRows[] = {4, 0, 5, 2, 1, -1};
  std::vector<int32_t> blockTable(B * maxBlocks);
  CHECK_RET(memcpy_s(blockTable.data(), blockTable.size() * sizeof(int32_t), tableRows,
                     sizeof(tableRows)) == EOK,
            LOG_PRINT("memcpy_s blockTable failed\n"); return 1);
  auto slot = [&](int64_t b, int64_t j) {
    return blockTable[b * maxBlocks + j / blockSize] * blockSize + j % blockSize;
  };
  Lcg rng(404);
  std::vector<double> q = RandomFp16Values(&rng, B * N * D, -1.0, 1.0);
  std::vector<double> kCache(blockNum * blockSize * H, 100.0);
  std::vector<double> vCache(kCache.size(), 100.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < kvLengths[b]; ++j)
      for (int64_t c = 0; c < H; ++c) {
        kCache[slot(b, j) * H + c] = RoundToFp16(rng.Uniform(-1.0, 1.0));
        vCache[slot(b, j) * H + c] = RoundToFp16(rng.Uniform(-2.0, 2.0));
      }

  DeviceTensor query, key, value, tableT, out, lse;
  CHECK_RET(CreateAclTensor(ToFp16(q), {B, 1, N * D}, ACL_FLOAT16, &query) == 0, return 1);
  CHECK_RET(CreateAclTensor(ToFp16(kCache), {blockNum, blockSize, H}, ACL_FLOAT16, &key) == 0,
            return 1);
  CHECK_RET(CreateAclTensor(ToFp16(vCache), {blockNum, blockSize, H}, ACL_FLOAT16, &value) == 0,
            return 1);
  CHECK_RET(CreateAclTensor(blockTable, {B, maxBlocks}, ACL_INT32, &tableT) == 0, return 1);
  CHECK_RET(CreateAclTensor(std::vector<aclFloat16>(B * N * D, 0), {B, 1, N * D}, ACL_FLOAT16,
                            &out) == 0,
            return 1);
  CHECK_RET(CreateAclTensor(std::vector<float>(B * N, 0.0f), {B, N, 1, 1}, ACL_FLOAT, &lse) == 0,
            return 1);
  aclTensor* keys[] = {key.tensor};
  aclTensor* values[] = {value.tensor};
  aclTensorList* keyList = aclCreateTensorList(keys, 1);
  aclTensorList* valueList = aclCreateTensorList(values, 1);
  aclIntArray* actualSeqLengthsKv = aclCreateIntArray(kvLengths.data(), kvLengths.size());

  const double scaleValue = 1.0 / std::sqrt(static_cast<double>(D));
  char layout[16] = {0};
  CHECK_RET(strcpy_s(layout, sizeof(layout), "BSH") == EOK,
            LOG_PRINT("strcpy_s layout failed\n"); return 1);
  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  ret = aclnnFusedInferAttentionScoreV3GetWorkspaceSize(
      query.tensor, keyList, valueList, nullptr, nullptr, nullptr, actualSeqLengthsKv, nullptr,
      nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, tableT.tensor, nullptr, nullptr,
      nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, N,
      scaleValue, 2147483647, 2147483647, layout, KVN, /*sparseMode=*/0, /*innerPrecise=*/1,
      blockSize, /*antiquantMode=*/0, /*softmaxLseFlag=*/true, 0, 0, out.tensor, lse.tensor,
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
  ret = aclnnFusedInferAttentionScoreV3(workspace, workspaceSize, executor, stream);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("aclnnFusedInferAttentionScoreV3 failed. ERROR: %d %s\n", ret,
                      aclGetRecentErrMsg());
            return 1);
  ret = aclrtSynchronizeStream(stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d\n", ret);
            return 1);

  std::vector<aclFloat16> result(B * N * D, 0);
  std::vector<float> lseResult(B * N, 0.0f);
  ret = aclrtMemcpy(result.data(), result.size() * sizeof(result[0]), out.addr, out.bytes,
                    ACL_MEMCPY_DEVICE_TO_HOST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("copy result failed. ERROR: %d\n", ret); return 1);
  ret = aclrtMemcpy(lseResult.data(), lseResult.size() * sizeof(float), lse.addr, lse.bytes,
                    ACL_MEMCPY_DEVICE_TO_HOST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("copy lse failed. ERROR: %d\n", ret); return 1);
  int bad = 0;
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < N; ++h) {
      const int64_t kvh = h / G;
      auto at = [&](const std::vector<double>& cache) {
        return [&cache, &slot, b, kvh](int64_t j, int64_t d) {
          return cache[slot(b, j) * H + kvh * D + d];
        };
      };
      std::vector<double> qrow(q.begin() + (b * N + h) * D, q.begin() + (b * N + h + 1) * D);
      std::vector<int64_t> positions;
      std::vector<double> vals;
      for (int64_t j = 0; j < kvLengths[b]; ++j) {
        positions.push_back(j);
        for (int64_t d = 0; d < D; ++d) vals.push_back(at(vCache)(j, d));
      }
      double wantLse = 0;
      const std::vector<double> want = AttendRow(qrow, positions, at(kCache), at(vCache),
                                                 scaleValue, nullptr, nullptr, nullptr, &wantLse);
      char what[64];
      snprintf(what, sizeof(what), "b=%d h=%d", static_cast<int>(b), static_cast<int>(h));
      bad += CheckFp16Row(what, result.data() + (b * N + h) * D, want, AbsMax(vals));
      bad += CheckLse(what, lseResult[b * N + h], wantLse, bad);
    }
  }
  LOG_PRINT("fia_v3: %s (%d mismatches of %d outputs and %d LSEs)\n", bad == 0 ? "PASS" : "FAIL",
            bad, static_cast<int>(B * N * D), static_cast<int>(B * N));

  aclDestroyTensorList(keyList);
  aclDestroyTensorList(valueList);
  aclDestroyIntArray(actualSeqLengthsKv);
  DestroyDeviceTensor(&query);
  DestroyDeviceTensor(&key);
  DestroyDeviceTensor(&value);
  DestroyDeviceTensor(&tableT);
  DestroyDeviceTensor(&out);
  DestroyDeviceTensor(&lse);
  if (workspace != nullptr) aclrtFree(workspace);
  aclrtDestroyStream(stream);
  aclrtResetDevice(deviceId);
  aclFinalize();
  return bad == 0 ? 0 : 1;
}
