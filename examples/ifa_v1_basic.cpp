// aclnnIncreFlashAttention (V1): BSH layout, grouped-query attention (4 query heads share 2 KV
// heads) and per-batch KV lengths. Checks every output element against a double-precision loop
// and exits non-zero on any mismatch.
//
//   g++ -std=c++11 ifa_v1_basic.cpp -I P/include -L P/lib -lkvflash -Wl,-rpath,P/lib
#include <cmath>
#include <cstring>
#include <iostream>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_incre_flash_attention.h"
#include "attention_example_util.h"

int main() {
  // 1. Device and stream.
  int32_t deviceId = 0;
  aclrtStream stream = nullptr;
  auto ret = aclInit(nullptr);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclInit failed. ERROR: %d\n", ret); return 1);
  ret = aclrtSetDevice(deviceId);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSetDevice failed. ERROR: %d\n", ret); return 1);
  ret = aclrtCreateStream(&stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtCreateStream failed. ERROR: %d\n", ret); return 1);

  // 2. Inputs: query (B, 1, N*D), key/value (B, S, KV_N*D).
  const int64_t B = 2, N = 4, KVN = 2, D = 32, S = 24;
  const std::vector<int64_t> lengths = {24, 13};
  Lcg rng(2024);
  std::vector<double> q = RandomFp16Values(&rng, B * N * D, -1.0, 1.0);
  std::vector<double> k = RandomFp16Values(&rng, B * S * KVN * D, -1.0, 1.0);
  std::vector<double> v = RandomFp16Values(&rng, B * S * KVN * D, -2.0, 2.0);

  DeviceTensor query, key, value, out;
  CHECK_RET(CreateAclTensor(ToFp16(q), {B, 1, N * D}, ACL_FLOAT16, &query) == 0, return 1);
  CHECK_RET(CreateAclTensor(ToFp16(k), {B, S, KVN * D}, ACL_FLOAT16, &key) == 0, return 1);
  CHECK_RET(CreateAclTensor(ToFp16(v), {B, S, KVN * D}, ACL_FLOAT16, &value) == 0, return 1);
  CHECK_RET(
      CreateAclTensor(std::vector<aclFloat16>(B * N * D, 0), {B, 1, N * D}, ACL_FLOAT16, &out) == 0,
      return 1);
  aclTensor* keys[] = {key.tensor};
  aclTensor* values[] = {value.tensor};
  aclTensorList* keyList = aclCreateTensorList(keys, 1);
  aclTensorList* valueList = aclCreateTensorList(values, 1);
  aclIntArray* actualSeqLengths = aclCreateIntArray(lengths.data(), lengths.size());

  // 3. The two phases.
  const double scaleValue = 1.0 / std::sqrt(static_cast<double>(D));
  char layout[16] = {0};
  CHECK_RET(strcpy_s(layout, sizeof(layout), "BSH") == EOK,
            LOG_PRINT("strcpy_s layout failed\n"); return 1);
  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  ret = aclnnIncreFlashAttentionGetWorkspaceSize(query.tensor, keyList, valueList, nullptr, nullptr,
                                                 actualSeqLengths, N, scaleValue, layout, KVN,
                                                 out.tensor, &workspaceSize, &executor);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("GetWorkspaceSize failed. ERROR: %d %s\n", ret, aclGetRecentErrMsg());
            return 1);
  void* workspace = nullptr;
  if (workspaceSize > 0) {
    ret = aclrtMalloc(&workspace, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("allocate workspace failed. ERROR: %d\n", ret);
              return 1);
  }
  ret = aclnnIncreFlashAttention(workspace, workspaceSize, executor, stream);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("aclnnIncreFlashAttention failed. ERROR: %d %s\n", ret, aclGetRecentErrMsg());
            return 1);
  ret = aclrtSynchronizeStream(stream);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d %s\n", ret, aclGetRecentErrMsg());
            return 1);

  // 4. Copy back and check: query head h reads KV head h / (N / KVN).
  std::vector<aclFloat16> result(B * N * D, 0);
  ret = aclrtMemcpy(result.data(), result.size() * sizeof(result[0]), out.addr, out.bytes,
                    ACL_MEMCPY_DEVICE_TO_HOST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("copy result failed. ERROR: %d\n", ret); return 1);
  int bad = 0;
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < N; ++h) {
      const int64_t n2 = h / (N / KVN);
      std::vector<double> qrow(q.begin() + (b * N + h) * D, q.begin() + (b * N + h + 1) * D);
      std::vector<int64_t> positions;
      double vmax = 0;
      for (int64_t j = 0; j < lengths[b]; ++j) {
        positions.push_back(j);
        for (int64_t d = 0; d < D; ++d)
          vmax = std::fmax(vmax, std::fabs(v[((b * S + j) * KVN + n2) * D + d]));
      }
      auto kv_at = [&](const std::vector<double>& t) {
        return [&, n2, b](int64_t j, int64_t d) { return t[((b * S + j) * KVN + n2) * D + d]; };
      };
      std::vector<double> want = AttendRow(qrow, positions, kv_at(k), kv_at(v), scaleValue);
      char what[64];
      snprintf(what, sizeof(what), "b=%lld h=%lld", static_cast<long long>(b),
               static_cast<long long>(h));
      bad += CheckFp16Row(what, result.data() + (b * N + h) * D, want, vmax);
    }
  }
  std::cout << "ifa_v1_basic: " << (bad == 0 ? "PASS" : "FAIL") << " (" << bad << " mismatches of "
            << B * N * D << ")" << std::endl;

  // 5. Release everything.
  aclDestroyTensorList(keyList);
  aclDestroyTensorList(valueList);
  aclDestroyIntArray(actualSeqLengths);
  DestroyDeviceTensor(&query);
  DestroyDeviceTensor(&key);
  DestroyDeviceTensor(&value);
  DestroyDeviceTensor(&out);
  if (workspace != nullptr) aclrtFree(workspace);
  aclrtDestroyStream(stream);
  aclrtResetDevice(deviceId);
  aclFinalize();
  return bad == 0 ? 0 : 1;
}
