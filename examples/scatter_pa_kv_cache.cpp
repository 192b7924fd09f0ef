// aclnnScatterPaKvCache: vllm-ascend's KV cache write. Five new tokens' key and value rows go into
// a paged cache [num_blocks, block_size, KV_N, D] (key and value of different head dims) at the
// slots a block table gives them (slot = block * block_size + row); a padding token (slot -1) is
// skipped. Checks that every written row is the token's row bit for bit and that every other cache
// row is untouched, and exits non-zero on any difference.
//
//   g++ -std=c++11 scatter_pa_kv_cache.cpp -I P/include -L P/lib -lkvflash -Wl,-rpath,P/lib
#include <cstring>
#include <iostream>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_scatter_pa_kv_cache.h"
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

  // T new tokens; a cache of 4 blocks of 8 rows, 2 KV heads, key D 32, value D 16.
  const int64_t T = 5, blocks = 4, blockSize = 8, KVN = 2, Dk = 32, Dv = 16;
  // Token 0 and 1 continue a sequence in block 2 (rows 5, 6), token 2 is padding, tokens 3 and 4
  // start another sequence in block 0.
  const std::vector<int32_t> slots = {2 * 8 + 5, 2 * 8 + 6, -1, 0 * 8 + 0, 0 * 8 + 1};
  Lcg rng(77);
  std::vector<aclFloat16> k = ToFp16(RandomFp16Values(&rng, T * KVN * Dk, -1.0, 1.0));
  std::vector<aclFloat16> v = ToFp16(RandomFp16Values(&rng, T * KVN * Dv, -1.0, 1.0));
  // The caches start as a value no token row holds (fp16 bits 0x7bff, 65504), so an unexpected
  // write shows.
  std::vector<aclFloat16> kCache0(blocks * blockSize * KVN * Dk, aclFloatToFloat16(65504.0f));
  std::vector<aclFloat16> vCache0(blocks * blockSize * KVN * Dv, aclFloatToFloat16(65504.0f));

  DeviceTensor key, value, keyCache, valueCache, slotMapping;
  CHECK_RET(CreateAclTensor(k, {T, KVN, Dk}, ACL_FLOAT16, &key) == 0, return 1);
  CHECK_RET(CreateAclTensor(v, {T, KVN, Dv}, ACL_FLOAT16, &value) == 0, return 1);
  CHECK_RET(CreateAclTensor(kCache0, {blocks, blockSize, KVN, Dk}, ACL_FLOAT16, &keyCache) == 0,
            return 1);
  CHECK_RET(CreateAclTensor(vCache0, {blocks, blockSize, KVN, Dv}, ACL_FLOAT16, &valueCache) == 0,
            return 1);
  CHECK_RET(CreateAclTensor(slots, {T}, ACL_INT32, &slotMapping) == 0, return 1);

  // The ND cache: cacheMode "Norm", scatterMode "None" (op-plugin passes strides {1, 1} and
  // offsets {0, 0}, which that mode ignores).
  char cacheMode[16] = {0};
  char scatterMode[16] = {0};
  CHECK_RET(strcpy_s(cacheMode, sizeof(cacheMode), "Norm") == EOK, return 1);
  CHECK_RET(strcpy_s(scatterMode, sizeof(scatterMode), "None") == EOK, return 1);
  const int64_t strideValues[2] = {1, 1};
  const int64_t offsetValues[2] = {0, 0};
  aclIntArray* strides = aclCreateIntArray(strideValues, 2);
  aclIntArray* offsets = aclCreateIntArray(offsetValues, 2);
  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  ret = aclnnScatterPaKvCacheGetWorkspaceSize(key.tensor, keyCache.tensor, slotMapping.tensor,
                                              value.tensor, valueCache.tensor, nullptr, nullptr,
                                              nullptr, cacheMode, scatterMode, strides, offsets,
                                              &workspaceSize, &executor);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("GetWorkspaceSize failed. ERROR: %d %s\n", ret, aclGetRecentErrMsg());
            return 1);
  void* workspace = nullptr;
  if (workspaceSize > 0) {
    ret = aclrtMalloc(&workspace, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("allocate workspace failed. ERROR: %d\n", ret);
              return 1);
  }
  ret = aclnnScatterPaKvCache(workspace, workspaceSize, executor, stream);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("aclnnScatterPaKvCache failed. ERROR: %d %s\n", ret, aclGetRecentErrMsg());
            return 1);
  ret = aclrtSynchronizeStream(stream);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d %s\n", ret, aclGetRecentErrMsg());
            return 1);

  // The expected caches: the initial ones with each token's rows at its slot.
  std::vector<aclFloat16> kWant = kCache0, vWant = vCache0;
  for (int64_t t = 0; t < T; ++t) {
    if (slots[t] < 0) continue;
    memcpy(&kWant[slots[t] * KVN * Dk], &k[t * KVN * Dk], KVN * Dk * sizeof(aclFloat16));
    memcpy(&vWant[slots[t] * KVN * Dv], &v[t * KVN * Dv], KVN * Dv * sizeof(aclFloat16));
  }
  std::vector<aclFloat16> kGot(kWant.size()), vGot(vWant.size());
  ret = aclrtMemcpy(kGot.data(), kGot.size() * sizeof(aclFloat16), keyCache.addr, keyCache.bytes,
                    ACL_MEMCPY_DEVICE_TO_HOST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("copy key cache failed. ERROR: %d\n", ret); return 1);
  ret = aclrtMemcpy(vGot.data(), vGot.size() * sizeof(aclFloat16), valueCache.addr,
                    valueCache.bytes, ACL_MEMCPY_DEVICE_TO_HOST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("copy value cache failed. ERROR: %d\n", ret); return 1);
  int bad = 0;
  for (size_t i = 0; i < kWant.size(); ++i) {
    if (kGot[i] != kWant[i] && bad++ < 5) LOG_PRINT("MISMATCH key cache element %zu\n", i);
  }
  for (size_t i = 0; i < vWant.size(); ++i) {
    if (vGot[i] != vWant[i] && bad++ < 5) LOG_PRINT("MISMATCH value cache element %zu\n", i);
  }
  std::cout << "scatter_pa_kv_cache: " << (bad == 0 ? "PASS" : "FAIL") << " (" << bad
            << " elements differ of " << kWant.size() + vWant.size() << ")" << std::endl;

  aclDestroyIntArray(strides);
  aclDestroyIntArray(offsets);
  DestroyDeviceTensor(&key);
  DestroyDeviceTensor(&value);
  DestroyDeviceTensor(&keyCache);
  DestroyDeviceTensor(&valueCache);
  DestroyDeviceTensor(&slotMapping);
  if (workspace != nullptr) aclrtFree(workspace);
  aclrtDestroyStream(stream);
  aclrtResetDevice(deviceId);
  aclFinalize();
  return bad == 0 ? 0 : 1;
}
