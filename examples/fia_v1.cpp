// aclnnFusedInferAttentionScore (V1): a decode step (query S = 1) in the BSH layout with sparse
// mode 3 and no mask. With a query length of 1 (and no rope) FIA takes its decode branch, which
// ignores sparseMode, preTokens and nextTokens and needs no mask (docs/fia-semantics.md): each row
// attends every position of its batch's KV length. The KV cache is int8 with per-token antiquant
// (V1's antiquantMode 1: antiquantScale / antiquantOffset shaped (2, B, S), row 0 for the key and
// row 1 for the value, dequant(x) = (x + offset) * scale), grouped-query attention (8 query heads
// on 2 KV heads) and per-batch KV lengths (the positions past a length hold values that would show
// if read). softmaxLse is left null (softmaxLseFlag false). Checks every output element against a
// double-precision loop and exits non-zero on any mismatch.
//
//   g++ -std=c++11 fia_v1.cpp -I P/include -I P/include/aclnn -I P/include/aclnnop -L P/lib64
//       -lascendcl -lnnopbase -lopapi_math -lopapi_transformer -lc_sec   (CANN 8.5's line)
#include <cmath>
#include <cstdint>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_fused_infer_attention_score.h"
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

  const int64_t B = 2, N = 8, KVN = 2, D = 64, H = KVN * D, G = N / KVN, S = 24;
  const std::vector<int64_t> kvLengths = {24, 9};
  Lcg rng(101);
  std::vector<double> q = RandomFp16Values(&rng, B * N * D, -1.0, 1.0);
  // Key and value (B, S, KV_N*D), int8; positions past a batch's length hold 127.
  std::vector<int8_t> k(B * S * H, 127), v(B * S * H, 127);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < kvLengths[b]; ++j)
      for (int64_t c = 0; c < H; ++c) {
        k[(b * S + j) * H + c] = static_cast<int8_t>(std::lround(rng.Uniform(-100, 100)));
        v[(b * S + j) * H + c] = static_cast<int8_t>(std::lround(rng.Uniform(-100, 100)));
      }
  // Per-token antiquant (2, B, S), fp32: [0] = key, [1] = value, one scale / offset per position.
  std::vector<float> aqScale(2 * B * S), aqOffset(2 * B * S);
  for (size_t i = 0; i < aqScale.size(); ++i) {
    aqScale[i] = static_cast<float>(rng.Uniform(0.005, 0.02));
    aqOffset[i] = static_cast<float>(std::round(rng.Uniform(-6, 6)));
  }
  auto dequant = [&](const std::vector<int8_t>& t, int64_t which, int64_t b, int64_t j, int64_t c) {
    const int64_t p = (which * B + b) * S + j;
    return (t[(b * S + j) * H + c] + static_cast<double>(aqOffset[p])) *
           static_cast<double>(aqScale[p]);
  };

  DeviceTensor query, key, value, scaleT, offsetT, out;
  CHECK_RET(CreateAclTensor(ToFp16(q), {B, 1, N * D}, ACL_FLOAT16, &query) == 0, return 1);
  CHECK_RET(CreateAclTensor(k, {B, S, H}, ACL_INT8, &key) == 0, return 1);
  CHECK_RET(CreateAclTensor(v, {B, S, H}, ACL_INT8, &value) == 0, return 1);
  CHECK_RET(CreateAclTensor(aqScale, {2, B, S}, ACL_FLOAT, &scaleT) == 0, return 1);
  CHECK_RET(CreateAclTensor(aqOffset, {2, B, S}, ACL_FLOAT, &offsetT) == 0, return 1);
  CHECK_RET(
      CreateAclTensor(std::vector<aclFloat16>(B * N * D, 0), {B, 1, N * D}, ACL_FLOAT16, &out) == 0,
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
  ret = aclnnFusedInferAttentionScoreGetWorkspaceSize(
      query.tensor, keyList, valueList, nullptr, /*attenMask=*/nullptr, nullptr, actualSeqLengthsKv,
      nullptr, nullptr, nullptr, nullptr, nullptr, scaleT.tensor, offsetT.tensor, nullptr, nullptr,
      nullptr, N, scaleValue, 2147483647, 2147483647, layout, KVN, /*sparseMode=*/3,
      /*innerPrecise=*/0, /*blockSize=*/0, /*antiquantMode=*/1, /*softmaxLseFlag=*/false,
      out.tensor, /*softmaxLse=*/nullptr, &workspaceSize, &executor);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("GetWorkspaceSize failed. ERROR: %d %s\n", ret, aclGetRecentErrMsg());
            return 1);
  void* workspace = nullptr;
  if (workspaceSize > 0) {
    ret = aclrtMalloc(&workspace, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("allocate workspace failed. ERROR: %d\n", ret);
              return 1);
  }
  ret = aclnnFusedInferAttentionScore(workspace, workspaceSize, executor, stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnFusedInferAttentionScore failed. ERROR: %d %s\n",
                                          ret, aclGetRecentErrMsg());
            return 1);
  ret = aclrtSynchronizeStream(stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d\n", ret);
            return 1);

  std::vector<aclFloat16> result(B * N * D, 0);
  ret = aclrtMemcpy(result.data(), result.size() * sizeof(result[0]), out.addr, out.bytes,
                    ACL_MEMCPY_DEVICE_TO_HOST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("copy result failed. ERROR: %d\n", ret); return 1);
  int bad = 0;
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < N; ++h) {
      const int64_t kvh = h / G;
      auto at = [&](const std::vector<int8_t>& t, int64_t which) {
        return [&dequant, &t, which, b, kvh](int64_t j, int64_t d) {
          return dequant(t, which, b, j, kvh * D + d);
        };
      };
      std::vector<double> qrow(q.begin() + (b * N + h) * D, q.begin() + (b * N + h + 1) * D);
      std::vector<int64_t> positions;  // the whole KV length: mode 3 is ignored here
      std::vector<double> vals;
      for (int64_t j = 0; j < kvLengths[b]; ++j) {
        positions.push_back(j);
        for (int64_t d = 0; d < D; ++d) vals.push_back(at(v, 1)(j, d));
      }
      const std::vector<double> want = AttendRow(qrow, positions, at(k, 0), at(v, 1), scaleValue);
      char what[64];
      snprintf(what, sizeof(what), "b=%d h=%d", static_cast<int>(b), static_cast<int>(h));
      bad += CheckFp16Row(what, result.data() + (b * N + h) * D, want, AbsMax(vals));
    }
  }
  LOG_PRINT("fia_v1: %s (%d mismatches of %d outputs)\n", bad == 0 ? "PASS" : "FAIL", bad,
            static_cast<int>(B * N * D));

  aclDestroyTensorList(keyList);
  aclDestroyTensorList(valueList);
  aclDestroyIntArray(actualSeqLengthsKv);
  DestroyDeviceTensor(&query);
  DestroyDeviceTensor(&key);
  DestroyDeviceTensor(&value);
  DestroyDeviceTensor(&scaleT);
  DestroyDeviceTensor(&offsetT);
  DestroyDeviceTensor(&out);
  if (workspace != nullptr) aclrtFree(workspace);
  aclrtDestroyStream(stream);
  aclrtResetDevice(deviceId);
  aclFinalize();
  return bad == 0 ? 0 : 1;
}
