// aclnnFlashAttentionScore: FlashAttention's forward pass (torch_npu's npu_fusion_attention,
// vllm-ascend's encoder prefill): BNSD, grouped-query attention (4 query heads on 2 KV heads),
// causal through sparse mode 3 and CANN's compressed 2048 x 2048 mask, with the softmax max and
// sum outputs ([B, N, Sq, 8], each value written 8 times). Checks every output element and every
// max / sum against a double-precision loop and exits non-zero on any mismatch.
//
//   g++ -std=c++11 flash_attention_score.cpp -I P/include -L P/lib -lkvflash -Wl,-rpath,P/lib
#include <cmath>
#include <cstring>
#include <iostream>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_flash_attention_score.h"
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

  const int64_t B = 2, N = 4, KVN = 2, S = 12, D = 64, G = N / KVN;
  Lcg rng(31);
  std::vector<double> q = RandomFp16Values(&rng, B * N * S * D, -1.0, 1.0);
  std::vector<double> k = RandomFp16Values(&rng, B * KVN * S * D, -1.0, 1.0);
  std::vector<double> v = RandomFp16Values(&rng, B * KVN * S * D, -2.0, 2.0);

  DeviceTensor query, key, value, mask, softmaxMax, softmaxSum, out;
  CHECK_RET(CreateAclTensor(ToFp16(q), {B, N, S, D}, ACL_FLOAT16, &query) == 0, return 1);
  CHECK_RET(CreateAclTensor(ToFp16(k), {B, KVN, S, D}, ACL_FLOAT16, &key) == 0, return 1);
  CHECK_RET(CreateAclTensor(ToFp16(v), {B, KVN, S, D}, ACL_FLOAT16, &value) == 0, return 1);
  CHECK_RET(CreateAclTensor(CompressedCausalMask(), {2048, 2048}, ACL_BOOL, &mask) == 0, return 1);
  CHECK_RET(CreateAclTensor(std::vector<float>(B * N * S * 8, 0), {B, N, S, 8}, ACL_FLOAT,
                            &softmaxMax) == 0,
            return 1);
  CHECK_RET(CreateAclTensor(std::vector<float>(B * N * S * 8, 0), {B, N, S, 8}, ACL_FLOAT,
                            &softmaxSum) == 0,
            return 1);
  CHECK_RET(CreateAclTensor(std::vector<aclFloat16>(B * N * S * D, 0), {B, N, S, D}, ACL_FLOAT16,
                            &out) == 0,
            return 1);

  const double scaleValue = 1.0 / std::sqrt(static_cast<double>(D));
  char layout[16] = {0};
  CHECK_RET(strcpy_s(layout, sizeof(layout), "BNSD") == EOK,
            LOG_PRINT("strcpy_s layout failed\n"); return 1);
  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  // No pse, no dropout (keepProb 1), no padding mask, no prefix; softmaxOut is reserved (null).
  ret = aclnnFlashAttentionScoreGetWorkspaceSize(
      query.tensor, key.tensor, value.tensor, nullptr, nullptr, nullptr, mask.tensor, nullptr,
      scaleValue, /*keepProb=*/1.0, /*preTokens=*/2147483647, /*nextTokens=*/0, N, layout,
      /*innerPrecise=*/0, /*sparseMode=*/3, softmaxMax.tensor, softmaxSum.tensor, nullptr,
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
  ret = aclnnFlashAttentionScore(workspace, workspaceSize, executor, stream);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("aclnnFlashAttentionScore failed. ERROR: %d %s\n", ret,
                      aclGetRecentErrMsg());
            return 1);
  ret = aclrtSynchronizeStream(stream);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d %s\n", ret, aclGetRecentErrMsg());
            return 1);

  std::vector<aclFloat16> result(B * N * S * D, 0);
  std::vector<float> gotMax(B * N * S * 8), gotSum(B * N * S * 8);
  ret = aclrtMemcpy(result.data(), result.size() * sizeof(result[0]), out.addr, out.bytes,
                    ACL_MEMCPY_DEVICE_TO_HOST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("copy result failed. ERROR: %d\n", ret); return 1);
  ret = aclrtMemcpy(gotMax.data(), gotMax.size() * sizeof(float), softmaxMax.addr,
                    softmaxMax.bytes, ACL_MEMCPY_DEVICE_TO_HOST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("copy softmax max failed. ERROR: %d\n", ret); return 1);
  ret = aclrtMemcpy(gotSum.data(), gotSum.size() * sizeof(float), softmaxSum.addr,
                    softmaxSum.bytes, ACL_MEMCPY_DEVICE_TO_HOST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("copy softmax sum failed. ERROR: %d\n", ret); return 1);

  // Row i of a head attends keys 0..i; the max is that of the scaled scores, the sum
  // sum_j exp(s_j - max), so log(sum) + max is the row's LSE.
  int bad = 0;
  const double scale = static_cast<float>(scaleValue);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < N; ++h) {
      const int64_t kvh = h / G;
      auto at = [&](const std::vector<double>& t) {
        return [&, b, kvh](int64_t j, int64_t d) { return t[((b * KVN + kvh) * S + j) * D + d]; };
      };
      for (int64_t i = 0; i < S; ++i) {
        const int64_t row = (b * N + h) * S + i;
        std::vector<double> qrow(q.begin() + row * D, q.begin() + (row + 1) * D);
        std::vector<int64_t> positions;
        double vmax = 0, smax = -INFINITY;
        for (int64_t j = 0; j <= i; ++j) {
          positions.push_back(j);
          double s = 0;
          for (int64_t d = 0; d < D; ++d) {
            s += qrow[d] * at(k)(j, d);
            vmax = std::fmax(vmax, std::fabs(at(v)(j, d)));
          }
          smax = std::fmax(smax, s * scale);
        }
        double lse = 0;
        std::vector<double> want = AttendRow(qrow, positions, at(k), at(v), scaleValue, nullptr,
                                             nullptr, nullptr, &lse);
        char what[64];
        snprintf(what, sizeof(what), "b=%lld h=%lld i=%lld", static_cast<long long>(b),
                 static_cast<long long>(h), static_cast<long long>(i));
        bad += CheckFp16Row(what, result.data() + row * D, want, vmax);
        for (int64_t e = 0; e < 8; ++e) {
          bad += CheckLse(what, gotMax[row * 8 + e], smax, bad);
          bad += CheckLse(what, static_cast<float>(std::log(gotSum[row * 8 + e]) + gotMax[row * 8 + e]),
                          lse, bad);
        }
      }
    }
  }
  std::cout << "flash_attention_score: " << (bad == 0 ? "PASS" : "FAIL") << " (" << bad
            << " mismatches of " << B * N * S * (D + 16) << ")" << std::endl;

  DestroyDeviceTensor(&query);
  DestroyDeviceTensor(&key);
  DestroyDeviceTensor(&value);
  DestroyDeviceTensor(&mask);
  DestroyDeviceTensor(&softmaxMax);
  DestroyDeviceTensor(&softmaxSum);
  DestroyDeviceTensor(&out);
  if (workspace != nullptr) aclrtFree(workspace);
  aclrtDestroyStream(stream);
  aclrtResetDevice(deviceId);
  aclFinalize();
  return bad == 0 ? 0 : 1;
}
