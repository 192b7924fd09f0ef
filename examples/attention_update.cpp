// aclnnAttentionUpdate: the LSE merge of sp partial attention results (vllm-ascend's
// npu_attention_update, the step after attention over a sharded KV cache). Three parts of 6 rows
// of head dim 32 (fp16 outputs, fp32 LSEs): row 4 has one empty part (LSE -inf, never read), row 5
// has only empty parts (zeros, LSE -inf). updateType 1 also writes the merged LSE. Checks every
// element against out = sum_i localOut_i * exp(lse_i - lseOut), lseOut = log sum_i exp(lse_i), in
// double precision, and exits non-zero on any mismatch.
//
//   g++ -std=c++11 attention_update.cpp -I P/include -L P/lib -lkvflash -Wl,-rpath,P/lib
#include <cmath>
#include <iostream>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_attention_update.h"
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

  const int64_t SP = 3, rows = 6, D = 32;
  Lcg rng(5);
  std::vector<std::vector<double> > partOut(SP), partLse(SP);
  DeviceTensor lseT[SP], outT[SP];
  aclTensor* lseTensors[SP];
  aclTensor* outTensors[SP];
  for (int64_t i = 0; i < SP; ++i) {
    partOut[i] = RandomFp16Values(&rng, rows * D, -2.0, 2.0);
    partLse[i].resize(rows);
    for (int64_t r = 0; r < rows; ++r) {
      partLse[i][r] = static_cast<float>(rng.Uniform(-3.0, 6.0));
    }
    if (i == 1) partLse[i][4] = -INFINITY;  // row 4: part 1 saw nothing
    partLse[i][5] = -INFINITY;              // row 5: no part saw anything
    std::vector<float> lse32(partLse[i].begin(), partLse[i].end());
    CHECK_RET(CreateAclTensor(lse32, {rows}, ACL_FLOAT, &lseT[i]) == 0, return 1);
    CHECK_RET(CreateAclTensor(ToFp16(partOut[i]), {rows, D}, ACL_FLOAT16, &outT[i]) == 0, return 1);
    lseTensors[i] = lseT[i].tensor;
    outTensors[i] = outT[i].tensor;
  }
  aclTensorList* lseList = aclCreateTensorList(lseTensors, SP);
  aclTensorList* localOutList = aclCreateTensorList(outTensors, SP);
  DeviceTensor out, lseOut;
  CHECK_RET(CreateAclTensor(std::vector<aclFloat16>(rows * D, 0), {rows, D}, ACL_FLOAT16, &out) == 0,
            return 1);
  CHECK_RET(CreateAclTensor(std::vector<float>(rows, 0), {rows}, ACL_FLOAT, &lseOut) == 0, return 1);

  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  ret = aclnnAttentionUpdateGetWorkspaceSize(lseList, localOutList, /*updateType=*/1, out.tensor,
                                             lseOut.tensor, &workspaceSize, &executor);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("GetWorkspaceSize failed. ERROR: %d %s\n", ret, aclGetRecentErrMsg());
            return 1);
  void* workspace = nullptr;
  if (workspaceSize > 0) {
    ret = aclrtMalloc(&workspace, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("allocate workspace failed. ERROR: %d\n", ret);
              return 1);
  }
  ret = aclnnAttentionUpdate(workspace, workspaceSize, executor, stream);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("aclnnAttentionUpdate failed. ERROR: %d %s\n", ret, aclGetRecentErrMsg());
            return 1);
  ret = aclrtSynchronizeStream(stream);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d %s\n", ret, aclGetRecentErrMsg());
            return 1);

  std::vector<aclFloat16> result(rows * D);
  std::vector<float> gotLse(rows);
  ret = aclrtMemcpy(result.data(), result.size() * sizeof(aclFloat16), out.addr, out.bytes,
                    ACL_MEMCPY_DEVICE_TO_HOST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("copy result failed. ERROR: %d\n", ret); return 1);
  ret = aclrtMemcpy(gotLse.data(), gotLse.size() * sizeof(float), lseOut.addr, lseOut.bytes,
                    ACL_MEMCPY_DEVICE_TO_HOST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("copy lse failed. ERROR: %d\n", ret); return 1);

  int bad = 0;
  for (int64_t r = 0; r < rows; ++r) {
    double m = -INFINITY;
    for (int64_t i = 0; i < SP; ++i) m = std::fmax(m, partLse[i][r]);
    std::vector<double> want(D, 0.0);
    double vmax = 0, lse = -INFINITY;
    if (!std::isinf(m)) {
      double sum = 0;
      for (int64_t i = 0; i < SP; ++i) sum += std::exp(partLse[i][r] - m);
      lse = m + std::log(sum);
      for (int64_t i = 0; i < SP; ++i) {
        if (std::isinf(partLse[i][r])) continue;  // an empty part is never read
        const double w = std::exp(partLse[i][r] - lse);
        for (int64_t d = 0; d < D; ++d) {
          want[d] += w * partOut[i][r * D + d];
          vmax = std::fmax(vmax, std::fabs(partOut[i][r * D + d]));
        }
      }
    }
    char what[32];
    snprintf(what, sizeof(what), "row %lld", static_cast<long long>(r));
    bad += CheckFp16Row(what, result.data() + r * D, want, vmax);
    bad += CheckLse(what, gotLse[r], lse, bad);
  }
  std::cout << "attention_update: " << (bad == 0 ? "PASS" : "FAIL") << " (" << bad
            << " mismatches of " << rows * (D + 1) << ")" << std::endl;

  aclDestroyTensorList(lseList);
  aclDestroyTensorList(localOutList);
  for (int64_t i = 0; i < SP; ++i) {
    DestroyDeviceTensor(&lseT[i]);
    DestroyDeviceTensor(&outT[i]);
  }
  DestroyDeviceTensor(&out);
  DestroyDeviceTensor(&lseOut);
  if (workspace != nullptr) aclrtFree(workspace);
  aclrtDestroyStream(stream);
  aclrtResetDevice(deviceId);
  aclFinalize();
  return bad == 0 ? 0 : 1;
}
