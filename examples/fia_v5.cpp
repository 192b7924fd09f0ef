// aclnnFusedInferAttentionScoreV5: a chunk of 3 query rows per request (BSH) over a paged int8 KV
// cache (BnBsH: blocks of 32 tokens handed out by a block table, the unused slots holding values
// that would show if read), per-batch KV lengths, split per-channel antiquant (keyAntiquantScale /
// keyAntiquantOffset and valueAntiquantScale / valueAntiquantOffset, KV_N*D values each;
// dequant(x) = (x + offset) * scale), a positional bias through pseShiftOptional with V5's
// pseType 0 (the bias is added after the scaling: softmax(scale * q.k + pse)), and the softmax
// log-sum-exp output. V5's qStartIdxOptional / kvStartIdxOptional are left null (docs/api.md: they
// must be null or empty). Checks every output element and every LSE against a double-precision
// loop and exits non-zero on any mismatch.
//
//   g++ -std=c++11 fia_v5.cpp -I P/include -I P/include/aclnn -I P/include/aclnnop -L P/lib64
//       -lascendcl -lnnopbase -lopapi_math -lopapi_transformer -lc_sec   (CANN 8.5's line)
#include <cmath>
#include <cstdint>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_fused_infer_attention_score_v5.h"
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

  const int64_t B = 2, N = 4, KVN = 2, D = 64, H = KVN * D, G = N / KVN, S1 = 3;
  const int64_t blockSize = 32, blockNum = 4, maxBlocks = 2, S2 = maxBlocks * blockSize;
  const std::vector<int64_t> kvLengths = {50, 21};
  // Batch 0 uses cache blocks 3 and 0; batch 1 uses block 1 (its second entry is never read).
  const int32_t tableRows[] = {3, 0, 1, -1};
  std::vector<int32_t> blockTable(B * maxBlocks);
  CHECK_RET(memcpy_s(blockTable.data(), blockTable.size() * sizeof(int32_t), tableRows,
                     sizeof(tableRows)) == EOK,
            LOG_PRINT("memcpy_s blockTable failed\n");
            return 1);
  auto slot = [&](int64_t b, int64_t j) {
    return blockTable[b * maxBlocks + j / blockSize] * blockSize + j % blockSize;
  };
  Lcg rng(303);
  std::vector<double> q = RandomFp16Values(&rng, B * S1 * N * D, -1.0, 1.0);
  std::vector<int8_t> kCache(blockNum * blockSize * H, 127), vCache(kCache.size(), 127);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < kvLengths[b]; ++j)
      for (int64_t c = 0; c < H; ++c) {
        kCache[slot(b, j) * H + c] = static_cast<int8_t>(std::lround(rng.Uniform(-100, 100)));
        vCache[slot(b, j) * H + c] = static_cast<int8_t>(std::lround(rng.Uniform(-100, 100)));
      }
  // Per-channel antiquant (1, KV_N*D), fp16: the key's and the value's own.
  const std::vector<double> kScale = RandomFp16Values(&rng, H, 0.005, 0.02);
  const std::vector<double> vScale = RandomFp16Values(&rng, H, 0.005, 0.02);
  std::vector<double> kOffset(H), vOffset(H);
  for (int64_t c = 0; c < H; ++c) {
    kOffset[c] = std::round(rng.Uniform(-6, 6));
    vOffset[c] = std::round(rng.Uniform(-6, 6));
  }
  // pseShift (1, N, S1, S2): one bias per head, query row and key position (the paged capacity).
  const std::vector<double> pse = RandomFp16Values(&rng, N * S1 * S2, -2.0, 2.0);

  DeviceTensor query, key, value, kScaleT, kOffsetT, vScaleT, vOffsetT, tableT, pseT, out, lse;
  CHECK_RET(CreateAclTensor(ToFp16(q), {B, S1, N * D}, ACL_FLOAT16, &query) == 0, return 1);
  CHECK_RET(CreateAclTensor(kCache, {blockNum, blockSize, H}, ACL_INT8, &key) == 0, return 1);
  CHECK_RET(CreateAclTensor(vCache, {blockNum, blockSize, H}, ACL_INT8, &value) == 0, return 1);
  CHECK_RET(CreateAclTensor(ToFp16(kScale), {1, H}, ACL_FLOAT16, &kScaleT) == 0, return 1);
  CHECK_RET(CreateAclTensor(ToFp16(kOffset), {1, H}, ACL_FLOAT16, &kOffsetT) == 0, return 1);
  CHECK_RET(CreateAclTensor(ToFp16(vScale), {1, H}, ACL_FLOAT16, &vScaleT) == 0, return 1);
  CHECK_RET(CreateAclTensor(ToFp16(vOffset), {1, H}, ACL_FLOAT16, &vOffsetT) == 0, return 1);
  CHECK_RET(CreateAclTensor(blockTable, {B, maxBlocks}, ACL_INT32, &tableT) == 0, return 1);
  CHECK_RET(CreateAclTensor(ToFp16(pse), {1, N, S1, S2}, ACL_FLOAT16, &pseT) == 0, return 1);
  CHECK_RET(CreateAclTensor(std::vector<aclFloat16>(B * S1 * N * D, 0), {B, S1, N * D}, ACL_FLOAT16,
                            &out) == 0,
            return 1);
  CHECK_RET(
      CreateAclTensor(std::vector<float>(B * N * S1, 0.0f), {B, N, S1, 1}, ACL_FLOAT, &lse) == 0,
      return 1);
  aclTensor* keys[] = {key.tensor};
  aclTensor* values[] = {value.tensor};
  aclTensorList* keyList = aclCreateTensorList(keys, 1);
  aclTensorList* valueList = aclCreateTensorList(values, 1);
  aclIntArray* actualSeqLengthsKv = aclCreateIntArray(kvLengths.data(), kvLengths.size());

  const double scaleValue = 1.0 / std::sqrt(static_cast<double>(D));
  char layout[16] = {0};
  CHECK_RET(strcpy_s(layout, sizeof(layout), "BSH") == EOK, LOG_PRINT("strcpy_s layout failed\n");
            return 1);
  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  ret = aclnnFusedInferAttentionScoreV5GetWorkspaceSize(
      query.tensor, keyList, valueList, pseT.tensor, /*attenMask=*/nullptr, nullptr,
      actualSeqLengthsKv, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
      tableT.tensor, nullptr, nullptr, kScaleT.tensor, kOffsetT.tensor, vScaleT.tensor,
      vOffsetT.tensor, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
      /*qStartIdx=*/nullptr, /*kvStartIdx=*/nullptr, N, scaleValue, 2147483647, 2147483647, layout,
      KVN, /*sparseMode=*/0, /*innerPrecise=*/0, blockSize, /*antiquantMode=*/0,
      /*softmaxLseFlag=*/true, /*keyAntiquantMode=*/0, /*valueAntiquantMode=*/0,
      /*queryQuantMode=*/0, /*pseType=*/0, out.tensor, lse.tensor, &workspaceSize, &executor);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("GetWorkspaceSize failed. ERROR: %d %s\n", ret, aclGetRecentErrMsg());
            return 1);
  void* workspace = nullptr;
  if (workspaceSize > 0) {
    ret = aclrtMalloc(&workspace, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("allocate workspace failed. ERROR: %d\n", ret);
              return 1);
  }
  ret = aclnnFusedInferAttentionScoreV5(workspace, workspaceSize, executor, stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnFusedInferAttentionScoreV5 failed. ERROR: %d %s\n",
                                          ret, aclGetRecentErrMsg());
            return 1);
  ret = aclrtSynchronizeStream(stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d\n", ret);
            return 1);

  std::vector<aclFloat16> result(B * S1 * N * D, 0);
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
      const int64_t kvh = h / G;
      auto at = [&](const std::vector<int8_t>& cache, const std::vector<double>& scale,
                    const std::vector<double>& offset) {
        return [&cache, &scale, &offset, &slot, b, kvh](int64_t j, int64_t d) {
          const int64_t c = kvh * D + d;
          return (cache[slot(b, j) * H + c] + offset[c]) * scale[c];
        };
      };
      for (int64_t i = 0; i < S1; ++i) {
        std::vector<double> qrow(q.begin() + ((b * S1 + i) * N + h) * D,
                                 q.begin() + ((b * S1 + i) * N + h + 1) * D);
        std::vector<int64_t> positions;  // sparse mode 0 without a mask: the whole KV length
        std::vector<double> vals;
        for (int64_t j = 0; j < kvLengths[b]; ++j) {
          positions.push_back(j);
          for (int64_t d = 0; d < D; ++d) vals.push_back(at(vCache, vScale, vOffset)(j, d));
        }
        auto bias = [&pse, h, i](int64_t j) { return pse[(h * S1 + i) * S2 + j]; };
        double wantLse = 0;
        const std::vector<double> want =
            AttendRow(qrow, positions, at(kCache, kScale, kOffset), at(vCache, vScale, vOffset),
                      scaleValue, nullptr, bias, nullptr, &wantLse);
        char what[64];
        snprintf(what, sizeof(what), "b=%d h=%d i=%d", static_cast<int>(b), static_cast<int>(h),
                 static_cast<int>(i));
        bad += CheckFp16Row(what, result.data() + ((b * S1 + i) * N + h) * D, want, AbsMax(vals));
        bad += CheckLse(what, lseResult[(b * N + h) * S1 + i], wantLse, bad);
      }
    }
  }
  LOG_PRINT("fia_v5: %s (%d mismatches of %d outputs and %d LSEs)\n", bad == 0 ? "PASS" : "FAIL",
            bad, static_cast<int>(B * S1 * N * D), static_cast<int>(B * N * S1));

  aclDestroyTensorList(keyList);
  aclDestroyTensorList(valueList);
  aclDestroyIntArray(actualSeqLengthsKv);
  DestroyDeviceTensor(&query);
  DestroyDeviceTensor(&key);
  DestroyDeviceTensor(&value);
  DestroyDeviceTensor(&kScaleT);
  DestroyDeviceTensor(&kOffsetT);
  DestroyDeviceTensor(&vScaleT);
  DestroyDeviceTensor(&vOffsetT);
  DestroyDeviceTensor(&tableT);
  DestroyDeviceTensor(&pseT);
  DestroyDeviceTensor(&out);
  DestroyDeviceTensor(&lse);
  if (workspace != nullptr) aclrtFree(workspace);
  aclrtDestroyStream(stream);
  aclrtResetDevice(deviceId);
  aclFinalize();
  return bad == 0 ? 0 : 1;
}
