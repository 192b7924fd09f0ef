// aclnnIncreFlashAttentionV2: BNSD layout, key/value given as a tensor list (one tensor per batch
// with its own sequence length), a boolean attention mask (one batch fully masked, which yields
// the mean of V), and a pseShift that V2 ignores as upstream does. Checks every output element
// against a double-precision loop and exits non-zero on any mismatch.
//
//   g++ -std=c++11 ifa_v2_list_mask.cpp -I P/include -L P/lib -lkvflash -Wl,-rpath,P/lib
#include <cmath>
#include <cstring>
#include <iostream>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_incre_flash_attention_v2.h"
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

  const int64_t B = 3, N = 2, KVN = 2, D = 16, SM = 17;
  const std::vector<int64_t> seq = {9, 17, 5};  // each batch's own key/value length
  Lcg rng(7);
  std::vector<double> q = RandomFp16Values(&rng, B * N * D, -1.0, 1.0);
  std::vector<std::vector<double>> k(B), v(B);
  std::vector<DeviceTensor> keyT(B), valueT(B);
  std::vector<aclTensor*> keys(B), values(B);
  for (int64_t b = 0; b < B; ++b) {
    k[b] = RandomFp16Values(&rng, KVN * seq[b] * D, -1.0, 1.0);
    v[b] = RandomFp16Values(&rng, KVN * seq[b] * D, -1.0, 1.0);
    CHECK_RET(CreateAclTensor(ToFp16(k[b]), {1, KVN, seq[b], D}, ACL_FLOAT16, &keyT[b]) == 0,
              return 1);
    CHECK_RET(CreateAclTensor(ToFp16(v[b]), {1, KVN, seq[b], D}, ACL_FLOAT16, &valueT[b]) == 0,
              return 1);
    keys[b] = keyT[b].tensor;
    values[b] = valueT[b].tensor;
  }
  // Mask (B, 1, 1, SM), nonzero = masked: batch 0 masks every 4th position, batch 1 the tail,
  // batch 2 everything.
  std::vector<uint8_t> mask(B * SM, 0);
  auto masked = [&](int64_t b, int64_t j) -> bool {
    return b == 0 ? (j % 4 == 3) : b == 1 ? (j >= 12) : true;
  };
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < SM; ++j) mask[b * SM + j] = masked(b, j) ? 1 : 0;

  DeviceTensor query, maskT, pse, out;
  CHECK_RET(CreateAclTensor(ToFp16(q), {B, N, 1, D}, ACL_FLOAT16, &query) == 0, return 1);
  CHECK_RET(CreateAclTensor(mask, {B, 1, 1, SM}, ACL_BOOL, &maskT) == 0, return 1);
  // A large positional bias: if V2 applied it, the output would change completely.
  CHECK_RET(CreateAclTensor(std::vector<aclFloat16>(B * N * SM, aclFloatToFloat16(100.0f)),
                            {B, N, 1, SM}, ACL_FLOAT16, &pse) == 0,
            return 1);
  CHECK_RET(
      CreateAclTensor(std::vector<aclFloat16>(B * N * D, 0), {B, N, 1, D}, ACL_FLOAT16, &out) == 0,
      return 1);
  aclTensorList* keyList = aclCreateTensorList(keys.data(), B);
  aclTensorList* valueList = aclCreateTensorList(values.data(), B);

  const double scaleValue = 1.0 / std::sqrt(static_cast<double>(D));
  char layout[16] = {0};
  CHECK_RET(strcpy_s(layout, sizeof(layout), "BNSD") == EOK,
            LOG_PRINT("strcpy_s layout failed\n"); return 1);
  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  ret = aclnnIncreFlashAttentionV2GetWorkspaceSize(
      query.tensor, keyList, valueList, pse.tensor, maskT.tensor, nullptr, nullptr, nullptr,
      nullptr, nullptr, nullptr, N, scaleValue, layout, KVN, out.tensor, &workspaceSize, &executor);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("GetWorkspaceSize failed. ERROR: %d %s\n", ret, aclGetRecentErrMsg());
            return 1);
  void* workspace = nullptr;
  if (workspaceSize > 0) {
    ret = aclrtMalloc(&workspace, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("allocate workspace failed. ERROR: %d\n", ret);
              return 1);
  }
  ret = aclnnIncreFlashAttentionV2(workspace, workspaceSize, executor, stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnIncreFlashAttentionV2 failed. ERROR: %d %s\n", ret,
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
      std::vector<int64_t> positions;
      double vmax = 0;
      for (int64_t j = 0; j < seq[b]; ++j) {
        positions.push_back(j);
        for (int64_t d = 0; d < D; ++d)
          vmax = std::fmax(vmax, std::fabs(v[b][(n2 * seq[b] + j) * D + d]));
      }
      auto kv_at = [&](const std::vector<double>& t) {
        return [&t, &seq, n2, b](int64_t j, int64_t d) { return t[(n2 * seq[b] + j) * D + d]; };
      };
      std::vector<double> want = AttendRow(qrow, positions, kv_at(k[b]), kv_at(v[b]), scaleValue,
                                           [&](int64_t j) { return masked(b, j); });
      char what[64];
      snprintf(what, sizeof(what), "b=%lld h=%lld", static_cast<long long>(b),
               static_cast<long long>(h));
      bad += CheckFp16Row(what, result.data() + (b * N + h) * D, want, vmax);
    }
  }
  std::cout << "ifa_v2_list_mask: " << (bad == 0 ? "PASS" : "FAIL") << " (" << bad
            << " mismatches of " << B * N * D << ")" << std::endl;

  aclDestroyTensorList(keyList);
  aclDestroyTensorList(valueList);
  for (int64_t b = 0; b < B; ++b) {
    DestroyDeviceTensor(&keyT[b]);
    DestroyDeviceTensor(&valueT[b]);
  }
  DestroyDeviceTensor(&query);
  DestroyDeviceTensor(&maskT);
  DestroyDeviceTensor(&pse);
  DestroyDeviceTensor(&out);
  if (workspace != nullptr) aclrtFree(workspace);
  aclrtDestroyStream(stream);
  aclrtResetDevice(deviceId);
  aclFinalize();
  return bad == 0 ? 0 : 1;
}
