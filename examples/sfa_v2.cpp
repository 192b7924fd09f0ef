// aclnnSparseFlashAttentionV2 example in the style of the CANN samples: TND (variable-length)
// query and KV, a learnable attention sink per head, sparse mode 0, and the softmax max/sum
// outputs. Like the upstream V2 sample it runs only where the platform reports Ascend 950
// (DAV_3510), which kvflash does: sinks are accepted on every kvflash backend. The program
// computes the expected outputs in double precision itself and checks every element; it exits
// non-zero on a mismatch.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnn/opdev/platform.h"
#include "aclnnop/aclnn_sparse_flash_attention_v2.h"
#include "attention_example_util.h"

int main() {
  if (op::GetCurrentPlatformInfo().GetCurNpuArch() != NpuArch::DAV_3510) {
    LOG_PRINT("sinks need Ascend 950 (DAV_3510); skipped\n");
    return 0;
  }
  int32_t deviceId = 0;
  aclrtContext context;
  aclrtStream stream;
  auto ret = aclInit(nullptr);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclInit failed. ERROR: %d\n", ret); return 1);
  ret = aclrtSetDevice(deviceId);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSetDevice failed. ERROR: %d\n", ret); return 1);
  ret = aclrtCreateContext(&context, deviceId);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtCreateContext failed. ERROR: %d\n", ret); return 1);
  ret = aclrtSetCurrentContext(context);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSetCurrentContext failed. ERROR: %d\n", ret);
            return 1);
  ret = aclrtCreateStream(&stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtCreateStream failed. ERROR: %d\n", ret); return 1);

  // Two sequences: 1 and 2 query tokens (T1 = 3), 48 and 20 KV tokens (T2 = 68), N1 = 16 heads,
  // K = 32 token indices per query token; row 2 selects nothing (its sink alone sets max and sum).
  const int64_t T1 = 3, T2 = 68, N1 = 16, D = 512, DR = 64, K = 32;
  const std::vector<int32_t> qCum = {1, 3}, kvCum = {48, 68};
  const std::vector<int64_t> rowBatch = {0, 1, 1};
  Lcg rng(2024u);
  std::vector<double> q(T1 * N1 * D), qr(T1 * N1 * DR), kv(T2 * D), kr(T2 * DR), sinks(N1);
  for (auto* v : {&q, &qr, &kv, &kr, &sinks})
    for (auto& x : *v) x = rng.Next();
  std::vector<int32_t> indices(T1 * K, -1);
  for (int64_t k = 0; k < K; ++k) {
    indices[0 * K + k] = static_cast<int32_t>((k * 7) % 48);  // distinct tokens of sequence 0
    indices[1 * K + k] = static_cast<int32_t>(k % 20);        // every token, then repeats
  }
  // Row 2 keeps all -1: an empty selection.
  std::vector<aclFloat16> qHost = ToFp16(q), qrHost = ToFp16(qr);
  std::vector<aclFloat16> kvHost = ToFp16(kv), krHost = ToFp16(kr);
  std::vector<float> sinksHost(sinks.begin(), sinks.end());
  std::vector<aclFloat16> outHost(T1 * N1 * D, 0);
  std::vector<float> maxHost(T1 * N1, 0.0f), sumHost(T1 * N1, 0.0f);
  const double scaleValue = 0.0416666666666667;

  void *qAddr, *kAddr, *vAddr, *idxAddr, *qLenAddr, *kvLenAddr, *qrAddr, *krAddr, *sinkAddr,
      *outAddr, *maxAddr, *sumAddr;
  aclTensor *query, *key, *value, *sparseIndices, *qLen, *kvLen, *queryRope, *keyRope, *sinkT, *out,
      *softmaxMax, *softmaxSum;
  CHECK_RET(CreateAclTensor(qHost, {T1, N1, D}, &qAddr, ACL_FLOAT16, &query) == 0, return 1);
  CHECK_RET(CreateAclTensor(kvHost, {T2, 1, D}, &kAddr, ACL_FLOAT16, &key) == 0, return 1);
  CHECK_RET(CreateAclTensor(kvHost, {T2, 1, D}, &vAddr, ACL_FLOAT16, &value) == 0, return 1);
  CHECK_RET(CreateAclTensor(indices, {T1, 1, K}, &idxAddr, ACL_INT32, &sparseIndices) == 0,
            return 1);
  CHECK_RET(CreateAclTensor(qCum, {2}, &qLenAddr, ACL_INT32, &qLen) == 0, return 1);
  CHECK_RET(CreateAclTensor(kvCum, {2}, &kvLenAddr, ACL_INT32, &kvLen) == 0, return 1);
  CHECK_RET(CreateAclTensor(qrHost, {T1, N1, DR}, &qrAddr, ACL_FLOAT16, &queryRope) == 0, return 1);
  CHECK_RET(CreateAclTensor(krHost, {T2, 1, DR}, &krAddr, ACL_FLOAT16, &keyRope) == 0, return 1);
  CHECK_RET(CreateAclTensor(sinksHost, {N1}, &sinkAddr, ACL_FLOAT, &sinkT) == 0, return 1);
  CHECK_RET(CreateAclTensor(outHost, {T1, N1, D}, &outAddr, ACL_FLOAT16, &out) == 0, return 1);
  CHECK_RET(CreateAclTensor(maxHost, {1, T1, N1}, &maxAddr, ACL_FLOAT, &softmaxMax) == 0, return 1);
  CHECK_RET(CreateAclTensor(sumHost, {1, T1, N1}, &sumAddr, ACL_FLOAT, &softmaxSum) == 0, return 1);

  char layoutQuery[5] = {'T', 'N', 'D', 0};
  char layoutKv[5] = {'T', 'N', 'D', 0};
  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  ret = aclnnSparseFlashAttentionV2GetWorkspaceSize(
      query, key, value, sparseIndices, nullptr, qLen, kvLen, queryRope, keyRope, sinkT, scaleValue,
      /*sparseBlockSize=*/1, layoutQuery, layoutKv, /*sparseMode=*/0, INT64_MAX, INT64_MAX,
      /*attentionMode=*/2, /*returnSoftmaxLse=*/true, out, softmaxMax, softmaxSum, &workspaceSize,
      &executor);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("GetWorkspaceSize failed. ERROR: %d (%s)\n", ret, aclGetRecentErrMsg());
            return 1);
  void* workspaceAddr = nullptr;
  if (workspaceSize > 0) {
    ret = aclrtMalloc(&workspaceAddr, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("allocate workspace failed. ERROR: %d\n", ret);
              return 1);
  }
  ret = aclnnSparseFlashAttentionV2(workspaceAddr, workspaceSize, executor, stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnSparseFlashAttentionV2 failed. ERROR: %d (%s)\n",
                                          ret, aclGetRecentErrMsg());
            return 1);
  ret = aclrtSynchronizeStream(stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d\n", ret);
            return 1);
  std::vector<aclFloat16> result(outHost.size());
  std::vector<float> maxOut(maxHost.size()), sumOut(sumHost.size());
  ret = aclrtMemcpy(result.data(), result.size() * 2, outAddr, result.size() * 2,
                    ACL_MEMCPY_DEVICE_TO_HOST);
  if (ret == ACL_SUCCESS)
    ret = aclrtMemcpy(maxOut.data(), maxOut.size() * 4, maxAddr, maxOut.size() * 4,
                      ACL_MEMCPY_DEVICE_TO_HOST);
  if (ret == ACL_SUCCESS)
    ret = aclrtMemcpy(sumOut.data(), sumOut.size() * 4, sumAddr, sumOut.size() * 4,
                      ACL_MEMCPY_DEVICE_TO_HOST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("copy results failed. ERROR: %d\n", ret); return 1);

  // Expected outputs: docs/semantics.md §3.4 in double precision (mode 0: every selected in-range
  // token).
  int64_t bad = 0;
  double worst = 0;
  for (int64_t t = 0; t < T1; ++t) {
    const int64_t b = rowBatch[t];
    const int64_t kv0 = b == 0 ? 0 : kvCum[b - 1];
    const int64_t thr = kvCum[b] - kv0;
    std::vector<int64_t> sel;
    for (int64_t k = 0; k < std::min<int64_t>(K, thr); ++k) {
      const int32_t x = indices[t * K + k];
      if (x == -1) break;
      if (x < -1 || x >= thr) continue;
      sel.push_back(kv0 + x);
    }
    for (int64_t h = 0; h < N1; ++h) {
      const int64_t qi = t * N1 + h;
      std::vector<double> s;
      double mx = sinks[h];
      for (int64_t row : sel) {
        double dot = 0;
        for (int64_t d = 0; d < D; ++d) dot += q[qi * D + d] * kv[row * D + d];
        for (int64_t d = 0; d < DR; ++d) dot += qr[qi * DR + d] * kr[row * DR + d];
        s.push_back(dot * static_cast<float>(scaleValue));
        mx = std::max(mx, s.back());
      }
      double sum = std::exp(sinks[h] - mx);  // the sink: in the denominator, no value
      for (double& x : s) sum += (x = std::exp(x - mx));
      double vmax = 0;
      for (int64_t row : sel)
        for (int64_t d = 0; d < D; ++d) vmax = std::max(vmax, std::fabs(kv[row * D + d]));
      for (int64_t d = 0; d < D; ++d) {
        double want = 0;
        for (size_t j = 0; j < sel.size(); ++j) want += s[j] / sum * kv[sel[j] * D + d];
        const double got = aclFloat16ToFloat(result[qi * D + d]);
        const double err = std::fabs(got - want);
        worst = std::max(worst, err);
        if (!(err <= (1.0 / 1024) * (vmax + std::fabs(want))) && bad++ < 5)
          LOG_PRINT("out mismatch at t=%ld h=%ld d=%ld: got %f want %f\n", (long)t, (long)h,
                    (long)d, got, want);
      }
      if (!(std::fabs(maxOut[qi] - mx) <= 1e-4 * (1 + std::fabs(mx))) ||
          !(std::fabs(sumOut[qi] - sum) <= 1e-4 * sum)) {
        if (bad++ < 5)
          LOG_PRINT("softmax mismatch at t=%ld h=%ld: got (%f, %f) want (%f, %f)\n", (long)t,
                    (long)h, maxOut[qi], sumOut[qi], mx, sum);
      }
    }
  }
  LOG_PRINT("sparse flash attention v2: %ld outputs, largest error %.3e, %ld mismatches\n",
            (long)result.size(), worst, (long)bad);

  for (aclTensor* tt : {query, key, value, sparseIndices, qLen, kvLen, queryRope, keyRope, sinkT,
                        out, softmaxMax, softmaxSum})
    aclDestroyTensor(tt);
  for (void* p : {qAddr, kAddr, vAddr, idxAddr, qLenAddr, kvLenAddr, qrAddr, krAddr, sinkAddr,
                  outAddr, maxAddr, sumAddr})
    aclrtFree(p);
  if (workspaceSize > 0) aclrtFree(workspaceAddr);
  aclrtDestroyStream(stream);
  aclrtDestroyContext(context);
  aclrtResetDevice(deviceId);
  aclFinalize();
  return bad == 0 ? 0 : 1;
}
