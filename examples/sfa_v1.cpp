// aclnnSparseFlashAttention (V1) example in the style of the CANN samples: a DeepSeek-V3.2-like
// sparse MLA decode step with multi-token prediction (2 query rows per batch), a paged KV cache
// (PA_BSND, shuffled block table), token-wise sparse indices with a -1 terminator and an
// out-of-range entry, and the bottom-right causal mode 3. The program computes the expected output
// in double precision itself and checks every element; it exits non-zero on a mismatch.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_sparse_flash_attention.h"
#include "attention_example_util.h"

int main() {
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

  // Shapes: B = 2 batches, S1 = 2 query rows each, N1 = 8 heads, D = 512 (+ 64 rope),
  // K = 16 indices per row, a cache of 6 blocks of 16 tokens, KV lengths 40 and 25.
  const int64_t B = 2, S1 = 2, N1 = 8, D = 512, DR = 64, K = 16, BLOCKS = 6, BS = 16, M = 3;
  const std::vector<int32_t> kvLens = {40, 25};
  const std::vector<int32_t> blockTable = {4, 0, 2, 5, 1, -1};  // batch 1 uses two blocks
  Lcg rng(12345u);
  std::vector<double> q(B * S1 * N1 * D), qr(B * S1 * N1 * DR), kv(BLOCKS * BS * D),
      kr(BLOCKS * BS * DR);
  for (auto* v : {&q, &qr, &kv, &kr})
    for (auto& x : *v) x = rng.Next();
  // Indices: descending recent tokens, an out-of-range id (skipped), then a -1 that ends the list.
  std::vector<int32_t> indices(B * S1 * K);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t i = 0; i < S1; ++i) {
      int32_t* row = &indices[(b * S1 + i) * K];
      for (int64_t k = 0; k < K; ++k) row[k] = static_cast<int32_t>((kvLens[b] - 1 - 2 * k));
      row[3] = 1000;
      row[10] = -1;
      row[11] = 0;  // after the -1: never used
    }
  }
  std::vector<aclFloat16> qHost = ToFp16(q), qrHost = ToFp16(qr);
  std::vector<aclFloat16> kvHost = ToFp16(kv), krHost = ToFp16(kr);
  std::vector<aclFloat16> outHost(B * S1 * N1 * D, 0);
  const double scaleValue = 1.0 / std::sqrt(static_cast<double>(D + DR));

  void *qAddr, *kAddr, *idxAddr, *btAddr, *kvLenAddr, *qrAddr, *krAddr, *outAddr;
  aclTensor *query, *key, *sparseIndices, *bt, *kvLen, *queryRope, *keyRope, *out;
  CHECK_RET(CreateAclTensor(qHost, {B, S1, N1, D}, &qAddr, ACL_FLOAT16, &query) == 0, return 1);
  CHECK_RET(CreateAclTensor(kvHost, {BLOCKS, BS, 1, D}, &kAddr, ACL_FLOAT16, &key) == 0, return 1);
  CHECK_RET(CreateAclTensor(indices, {B, S1, 1, K}, &idxAddr, ACL_INT32, &sparseIndices) == 0,
            return 1);
  CHECK_RET(CreateAclTensor(blockTable, {B, M}, &btAddr, ACL_INT32, &bt) == 0, return 1);
  CHECK_RET(CreateAclTensor(kvLens, {B}, &kvLenAddr, ACL_INT32, &kvLen) == 0, return 1);
  CHECK_RET(CreateAclTensor(qrHost, {B, S1, N1, DR}, &qrAddr, ACL_FLOAT16, &queryRope) == 0,
            return 1);
  CHECK_RET(CreateAclTensor(krHost, {BLOCKS, BS, 1, DR}, &krAddr, ACL_FLOAT16, &keyRope) == 0,
            return 1);
  CHECK_RET(CreateAclTensor(outHost, {B, S1, N1, D}, &outAddr, ACL_FLOAT16, &out) == 0, return 1);

  char layoutQuery[16] = {0};
  CHECK_RET(strcpy_s(layoutQuery, sizeof(layoutQuery), "BSND") == EOK,
            LOG_PRINT("strcpy_s layoutQuery failed\n"); return 1);
  char layoutKv[16] = {0};
  CHECK_RET(strcpy_s(layoutKv, sizeof(layoutKv), "PA_BSND") == EOK,
            LOG_PRINT("strcpy_s layoutKv failed\n"); return 1);
  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  // value = nullptr: the key cache is also the value (MLA absorb); no softmax outputs.
  ret = aclnnSparseFlashAttentionGetWorkspaceSize(
      query, key, nullptr, sparseIndices, bt, nullptr, kvLen, queryRope, keyRope, scaleValue,
      /*sparseBlockSize=*/1, layoutQuery, layoutKv, /*sparseMode=*/3, INT64_MAX, INT64_MAX,
      /*attentionMode=*/2, /*returnSoftmaxLse=*/false, out, nullptr, nullptr, &workspaceSize,
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
  ret = aclnnSparseFlashAttention(workspaceAddr, workspaceSize, executor, stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnSparseFlashAttention failed. ERROR: %d (%s)\n", ret,
                                          aclGetRecentErrMsg());
            return 1);
  ret = aclrtSynchronizeStream(stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d\n", ret);
            return 1);
  std::vector<aclFloat16> result(outHost.size());
  ret = aclrtMemcpy(result.data(), result.size() * 2, outAddr, result.size() * 2,
                    ACL_MEMCPY_DEVICE_TO_HOST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("copy result failed. ERROR: %d\n", ret); return 1);

  // Expected output: docs/semantics.md §3.4 in double precision.
  int64_t bad = 0;
  double worst = 0;
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t i = 0; i < S1; ++i) {
      const int64_t thr = kvLens[b] - S1 + i + 1;  // mode 3: row i sees tokens < thr
      const int64_t validCount = std::min<int64_t>(K, thr);
      std::vector<int64_t> sel;
      for (int64_t k = 0; k < validCount; ++k) {
        const int32_t x = indices[(b * S1 + i) * K + k];
        if (x == -1) break;
        if (x < -1 || x >= thr) continue;
        sel.push_back(x);
      }
      auto slot = [&](int64_t j) { return blockTable[b * M + j / BS] * BS + j % BS; };
      for (int64_t h = 0; h < N1; ++h) {
        const int64_t qi = (b * S1 + i) * N1 + h;
        std::vector<double> s;
        double mx = -INFINITY;
        for (int64_t j : sel) {
          double dot = 0;
          for (int64_t d = 0; d < D; ++d) dot += q[qi * D + d] * kv[slot(j) * D + d];
          for (int64_t d = 0; d < DR; ++d) dot += qr[qi * DR + d] * kr[slot(j) * DR + d];
          s.push_back(dot * static_cast<float>(scaleValue));
          mx = std::max(mx, s.back());
        }
        double sum = 0;
        for (double& x : s) sum += (x = std::exp(x - mx));
        double vmax = 0;
        for (int64_t j : sel)
          for (int64_t d = 0; d < D; ++d) vmax = std::max(vmax, std::fabs(kv[slot(j) * D + d]));
        for (int64_t d = 0; d < D; ++d) {
          double want = 0;
          for (size_t t = 0; t < sel.size(); ++t) want += s[t] / sum * kv[slot(sel[t]) * D + d];
          const double got = aclFloat16ToFloat(result[qi * D + d]);
          const double err = std::fabs(got - want);
          const double tol = (1.0 / 1024) * (vmax + std::fabs(want));
          worst = std::max(worst, err);
          if (!(err <= tol)) {
            if (bad++ < 5)
              LOG_PRINT("mismatch at b=%ld i=%ld h=%ld d=%ld: got %f want %f\n", (long)b, (long)i,
                        (long)h, (long)d, got, want);
          }
        }
      }
    }
  }
  LOG_PRINT("sparse flash attention: %ld outputs, largest error %.3e, %ld mismatches\n",
            (long)result.size(), worst, (long)bad);

  for (aclTensor* t : {query, key, sparseIndices, bt, kvLen, queryRope, keyRope, out})
    aclDestroyTensor(t);
  for (void* p : {qAddr, kAddr, idxAddr, btAddr, kvLenAddr, qrAddr, krAddr, outAddr}) aclrtFree(p);
  if (workspaceSize > 0) aclrtFree(workspaceAddr);
  aclrtDestroyStream(stream);
  aclrtDestroyContext(context);
  aclrtResetDevice(deviceId);
  aclFinalize();
  return bad == 0 ? 0 : 1;
}
