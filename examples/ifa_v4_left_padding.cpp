// aclnnIncreFlashAttentionV4: KV left padding. With kvPaddingSize = p and actualSeqLengths len_b,
// batch b attends the positions [S - p - len_b, S - p) of its key/value rows; when that start is
// negative the batch outputs zeros. BSND layout; the attention mask uses absolute positions.
// Every slot outside the attended windows holds 60000 (it would show if read). Checks every
// output element against a double-precision loop and exits non-zero on any mismatch.
//
//   g++ -std=c++11 ifa_v4_left_padding.cpp -I P/include -L P/lib -lkvflash -Wl,-rpath,P/lib
#include <cmath>
#include <cstring>
#include <iostream>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_incre_flash_attention_v4.h"
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

  const int64_t B = 3, N = 2, KVN = 2, D = 16, S = 20;
  const int64_t padding = 3;
  const std::vector<int64_t> lengths = {10, 17, 18};  // starts 7, 0 and -1 (-> zeros)
  const int64_t maskedPosition = 9;                   // absolute position masked in batch 0
  Lcg rng(4);
  std::vector<double> q = RandomFp16Values(&rng, B * N * D, -1.0, 1.0);
  std::vector<double> k = RandomFp16Values(&rng, B * S * KVN * D, -1.0, 1.0);
  std::vector<double> v = RandomFp16Values(&rng, B * S * KVN * D, -1.0, 1.0);
  auto start = [&](int64_t b) { return S - padding - lengths[b]; };
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < S; ++j)
      if (j < start(b) || j >= S - padding)
        for (int64_t c = 0; c < KVN * D; ++c)
          k[(b * S + j) * KVN * D + c] = v[(b * S + j) * KVN * D + c] = 60000.0;
  std::vector<int8_t> mask(B * S, 0);
  mask[maskedPosition] = 1;

  DeviceTensor query, key, value, maskT, pad, out;
  CHECK_RET(CreateAclTensor(ToFp16(q), {B, 1, N, D}, ACL_FLOAT16, &query) == 0, return 1);
  CHECK_RET(CreateAclTensor(ToFp16(k), {B, S, KVN, D}, ACL_FLOAT16, &key) == 0, return 1);
  CHECK_RET(CreateAclTensor(ToFp16(v), {B, S, KVN, D}, ACL_FLOAT16, &value) == 0, return 1);
  CHECK_RET(CreateAclTensor(mask, {B, 1, 1, S}, ACL_INT8, &maskT) == 0, return 1);
  CHECK_RET(CreateAclTensor(std::vector<int64_t>{padding}, {1}, ACL_INT64, &pad) == 0, return 1);
  CHECK_RET(CreateAclTensor(std::vector<aclFloat16>(B * N * D, aclFloatToFloat16(1.0f)),
                            {B, 1, N, D}, ACL_FLOAT16, &out) == 0,
            return 1);
  aclTensor* keys[] = {key.tensor};
  aclTensor* values[] = {value.tensor};
  aclTensorList* keyList = aclCreateTensorList(keys, 1);
  aclTensorList* valueList = aclCreateTensorList(values, 1);
  aclIntArray* actualSeqLengths = aclCreateIntArray(lengths.data(), lengths.size());

  const double scaleValue = 1.0 / std::sqrt(static_cast<double>(D));
  char layout[16] = {0};
  CHECK_RET(strcpy_s(layout, sizeof(layout), "BSND") == EOK,
            LOG_PRINT("strcpy_s layout failed\n"); return 1);
  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  ret = aclnnIncreFlashAttentionV4GetWorkspaceSize(
      query.tensor, keyList, valueList, nullptr, maskT.tensor, actualSeqLengths, nullptr, nullptr,
      nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, pad.tensor, N, scaleValue, layout, KVN,
      /*blockSize=*/0, /*innerPrecise=*/1, out.tensor, &workspaceSize, &executor);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("GetWorkspaceSize failed. ERROR: %d %s\n", ret, aclGetRecentErrMsg());
            return 1);
  void* workspace = nullptr;
  if (workspaceSize > 0) {
    ret = aclrtMalloc(&workspace, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("allocate workspace failed. ERROR: %d\n", ret);
              return 1);
  }
  ret = aclnnIncreFlashAttentionV4(workspace, workspaceSize, executor, stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnIncreFlashAttentionV4 failed. ERROR: %d %s\n", ret,
                                          aclGetRecentErrMsg());
            return 1);
  ret = aclrtSynchronizeStream(stream);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d %s\n", ret, aclGetRecentErrMsg());
            return 1);

  std::vector<aclFloat16> result(B * N * D, 0);
  ret = aclrtMemcpy(result.data(), result.size() * sizeof(result[0]), out.addr, out.bytes,
                    ACL_MEMCPY_DEVICE_TO_HOST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("copy result failed. ERROR: %d\n", ret); return 1);
  int bad = 0;
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < N; ++h) {
      const int64_t n2 = h / (N / KVN);
      std::vector<double> qrow(q.begin() + (b * N + h) * D, q.begin() + (b * N + h + 1) * D);
      std::vector<int64_t> positions;  // empty when the window starts before 0: zeros
      double vmax = 0;
      if (start(b) >= 0) {
        for (int64_t j = start(b); j < start(b) + lengths[b]; ++j) {
          positions.push_back(j);
          for (int64_t d = 0; d < D; ++d)
            vmax = std::fmax(vmax, std::fabs(v[((b * S + j) * KVN + n2) * D + d]));
        }
      }
      auto kv_at = [&](const std::vector<double>& t) {
        return [&t, n2, b](int64_t j, int64_t d) { return t[((b * S + j) * KVN + n2) * D + d]; };
      };
      std::vector<double> want = AttendRow(qrow, positions, kv_at(k), kv_at(v), scaleValue,
                                           [&](int64_t j) { return mask[b * S + j] != 0; });
      char what[64];
      snprintf(what, sizeof(what), "b=%lld h=%lld", static_cast<long long>(b),
               static_cast<long long>(h));
      bad += CheckFp16Row(what, result.data() + (b * N + h) * D, want, vmax);
    }
  }
  std::cout << "ifa_v4_left_padding: " << (bad == 0 ? "PASS" : "FAIL") << " (" << bad
            << " mismatches of " << B * N * D << ")" << std::endl;

  aclDestroyTensorList(keyList);
  aclDestroyTensorList(valueList);
  aclDestroyIntArray(actualSeqLengths);
  for (DeviceTensor* t : {&query, &key, &value, &maskT, &pad, &out}) DestroyDeviceTensor(t);
  if (workspace != nullptr) aclrtFree(workspace);
  aclrtDestroyStream(stream);
  aclrtResetDevice(deviceId);
  aclFinalize();
  return bad == 0 ? 0 : 1;
}
