// aclnnIncreFlashAttentionV3: page attention over an INT8 KV cache with per-channel antiquant
// (dequant(x) = (x + offset) * scale) and INT8 output (y = round(o * quantScale2 + quantOffset2),
// saturated). BSH layout, 4 query heads on 1 KV head, cache (blocknum, blockSize, KV_N*D), blocks
// handed out in shuffled order. Checks every output element (within 1 LSB) against a
// double-precision loop and exits non-zero on any mismatch.
//
//   g++ -std=c++11 ifa_v3_paged_int8.cpp -I P/include -L P/lib -lkvflash -Wl,-rpath,P/lib
#include <cmath>
#include <cstring>
#include <iostream>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_incre_flash_attention_v3.h"
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

  const int64_t B = 2, N = 4, KVN = 1, D = 32, H = KVN * D;
  const int64_t blockSize = 32, blockNum = 6, maxBlocksPerSeq = 3;
  const std::vector<int64_t> lengths = {70, 33};
  // Logical block i of batch b lives in cache block blockTable[b][i]; -1 = never read.
  const int32_t tableRows[] = {4, 1, 5, 0, 3, -1};
  std::vector<int32_t> blockTable(B * maxBlocksPerSeq);
  CHECK_RET(memcpy_s(blockTable.data(), blockTable.size() * sizeof(int32_t), tableRows,
                     sizeof(tableRows)) == EOK,
            LOG_PRINT("memcpy_s blockTable failed\n"); return 1);
  Lcg rng(33);

  std::vector<double> q = RandomFp16Values(&rng, B * N * D, -1.0, 1.0);
  // Cache slots that no sequence uses hold 127, which would show in the output if read.
  std::vector<int8_t> kCache(blockNum * blockSize * H, 127), vCache(blockNum * blockSize * H, 127);
  auto slot = [&](int64_t b, int64_t t, int64_t c) {
    return (blockTable[b * maxBlocksPerSeq + t / blockSize] * blockSize + t % blockSize) * H + c;
  };
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < lengths[b]; ++t)
      for (int64_t c = 0; c < H; ++c) {
        kCache[slot(b, t, c)] = static_cast<int8_t>(std::lround(rng.Uniform(-100, 100)));
        vCache[slot(b, t, c)] = static_cast<int8_t>(std::lround(rng.Uniform(-100, 100)));
      }
  // antiquant (2, KV_N*D): row 0 for key, row 1 for value.
  std::vector<double> aqScale = RandomFp16Values(&rng, 2 * H, 0.005, 0.02);
  std::vector<double> aqOffset(2 * H);
  for (auto& x : aqOffset) x = std::round(rng.Uniform(-6, 6));
  const float quantScale2 = 20.0f, quantOffset2 = 3.0f;

  DeviceTensor query, key, value, scaleT, offsetT, tableT, qs2, qo2, out;
  CHECK_RET(CreateAclTensor(ToFp16(q), {B, 1, N * D}, ACL_FLOAT16, &query) == 0, return 1);
  CHECK_RET(CreateAclTensor(kCache, {blockNum, blockSize, H}, ACL_INT8, &key) == 0, return 1);
  CHECK_RET(CreateAclTensor(vCache, {blockNum, blockSize, H}, ACL_INT8, &value) == 0, return 1);
  CHECK_RET(CreateAclTensor(ToFp16(aqScale), {2, H}, ACL_FLOAT16, &scaleT) == 0, return 1);
  CHECK_RET(CreateAclTensor(ToFp16(aqOffset), {2, H}, ACL_FLOAT16, &offsetT) == 0, return 1);
  CHECK_RET(CreateAclTensor(blockTable, {B, maxBlocksPerSeq}, ACL_INT32, &tableT) == 0, return 1);
  CHECK_RET(CreateAclTensor(std::vector<float>{quantScale2}, {1}, ACL_FLOAT, &qs2) == 0, return 1);
  CHECK_RET(CreateAclTensor(std::vector<float>{quantOffset2}, {1}, ACL_FLOAT, &qo2) == 0, return 1);
  CHECK_RET(CreateAclTensor(std::vector<int8_t>(B * N * D, 0), {B, 1, N * D}, ACL_INT8, &out) == 0,
            return 1);
  aclTensor* keys[] = {key.tensor};
  aclTensor* values[] = {value.tensor};
  aclTensorList* keyList = aclCreateTensorList(keys, 1);
  aclTensorList* valueList = aclCreateTensorList(values, 1);
  aclIntArray* actualSeqLengths = aclCreateIntArray(lengths.data(), lengths.size());

  const double scaleValue = 1.0 / std::sqrt(static_cast<double>(D));
  char layout[16] = {0};
  CHECK_RET(strcpy_s(layout, sizeof(layout), "BSH") == EOK,
            LOG_PRINT("strcpy_s layout failed\n"); return 1);
  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  ret = aclnnIncreFlashAttentionV3GetWorkspaceSize(
      query.tensor, keyList, valueList, nullptr, nullptr, actualSeqLengths, nullptr, nullptr,
      nullptr, qs2.tensor, qo2.tensor, scaleT.tensor, offsetT.tensor, tableT.tensor, N, scaleValue,
      layout, KVN, blockSize, /*innerPrecise=*/1, out.tensor, &workspaceSize, &executor);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("GetWorkspaceSize failed. ERROR: %d %s\n", ret, aclGetRecentErrMsg());
            return 1);
  void* workspace = nullptr;
  if (workspaceSize > 0) {
    ret = aclrtMalloc(&workspace, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("allocate workspace failed. ERROR: %d\n", ret);
              return 1);
  }
  ret = aclnnIncreFlashAttentionV3(workspace, workspaceSize, executor, stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnIncreFlashAttentionV3 failed. ERROR: %d %s\n", ret,
                                          aclGetRecentErrMsg());
            return 1);
  ret = aclrtSynchronizeStream(stream);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d %s\n", ret, aclGetRecentErrMsg());
            return 1);

  std::vector<int8_t> result(B * N * D, 0);
  ret = aclrtMemcpy(result.data(), result.size(), out.addr, out.bytes, ACL_MEMCPY_DEVICE_TO_HOST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("copy result failed. ERROR: %d\n", ret); return 1);
  int bad = 0;
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < N; ++h) {
      const int64_t n2 = h / (N / KVN);
      std::vector<double> qrow(q.begin() + (b * N + h) * D, q.begin() + (b * N + h + 1) * D);
      std::vector<int64_t> positions;
      for (int64_t t = 0; t < lengths[b]; ++t) positions.push_back(t);
      auto dequant = [&](const std::vector<int8_t>& cache, int which) {
        return [&, which, b, n2](int64_t t, int64_t d) {
          const int64_t c = n2 * D + d;
          return (cache[slot(b, t, c)] + aqOffset[which * H + c]) * aqScale[which * H + c];
        };
      };
      std::vector<double> o =
          AttendRow(qrow, positions, dequant(kCache, 0), dequant(vCache, 1), scaleValue);
      char what[64];
      snprintf(what, sizeof(what), "b=%lld h=%lld", static_cast<long long>(b),
               static_cast<long long>(h));
      bad += CheckInt8Row(what, result.data() + (b * N + h) * D, o, quantScale2, quantOffset2);
    }
  }
  std::cout << "ifa_v3_paged_int8: " << (bad == 0 ? "PASS" : "FAIL") << " (" << bad
            << " mismatches of " << B * N * D << ")" << std::endl;

  aclDestroyTensorList(keyList);
  aclDestroyTensorList(valueList);
  aclDestroyIntArray(actualSeqLengths);
  for (DeviceTensor* t : {&query, &key, &value, &scaleT, &offsetT, &tableT, &qs2, &qo2, &out})
    DestroyDeviceTensor(t);
  if (workspace != nullptr) aclrtFree(workspace);
  aclrtDestroyStream(stream);
  aclrtResetDevice(deviceId);
  aclFinalize();
  return bad == 0 ? 0 : 1;
}
