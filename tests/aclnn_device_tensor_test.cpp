// aclnn calls on tensors that describe CUDA memory (as the CUDA runtime's aclCreateTensor makes
// them) where no CUDA backend can run them: a clear status and message, never a crash. Runs on the
// CPU runtime with host buffers marked DeviceType::kCuda, so nothing is ever dereferenced as device
// memory; on a machine with a GPU a CUDA entry would really run, so the test stops there.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "aclnn/acl_objects.hpp"
#include "aclnnop/aclnn_incre_flash_attention.h"
#include "cuda/device.hpp"

namespace {

std::string recent() { return aclGetRecentErrMsg(); }

aclTensor* cuda_tensor(std::vector<uint16_t>* data, const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) strides[i - 1] = strides[i] * shape[i];
  aclTensor* t = aclCreateTensor(shape.data(), shape.size(), ACL_FLOAT16, strides.data(), 0,
                                 ACL_FORMAT_ND, shape.data(), shape.size(), data->data());
  if (t != nullptr) t->view.device = kvflash::Device{kvflash::DeviceType::kCuda, 0};
  return t;
}

TEST(AclDeviceTensors, IfaWithoutAUsableCudaBackendIsAClearError) {
  // With a GPU, a CUDA entry would run on these host buffers: the no-backend path cannot happen.
  if (kvflash::cuda::device_present()) return;
  const int64_t B = 1, N = 2, D = 16, S = 8;
  std::vector<uint16_t> q(B * N * D, 0x3c00), k(B * S * N * D, 0x3c00), v = k, out = q;
  aclTensor* query = cuda_tensor(&q, {B, 1, N * D});
  aclTensor* key = cuda_tensor(&k, {B, S, N * D});
  aclTensor* value = cuda_tensor(&v, {B, S, N * D});
  aclTensor* attention_out = cuda_tensor(&out, {B, 1, N * D});
  ASSERT_TRUE(query && key && value && attention_out) << recent();
  aclTensor* keys[] = {key};
  aclTensor* values[] = {value};
  aclTensorList* key_list = aclCreateTensorList(keys, 1);
  aclTensorList* value_list = aclCreateTensorList(values, 1);
  char layout[] = "BSH";
  uint64_t ws_size = 0;
  aclOpExecutor* executor = nullptr;
  const aclnnStatus phase1 = aclnnIncreFlashAttentionGetWorkspaceSize(
      query, key_list, value_list, nullptr, nullptr, nullptr, N, 0.25, layout, N, attention_out,
      &ws_size, &executor);
  if (phase1 != ACLNN_SUCCESS) {
    // No CUDA entry in this build's list: refused when planning.
    EXPECT_EQ(phase1, ACLNN_ERR_RUNTIME_ERROR);
    EXPECT_NE(recent().find("no backend runs on cuda:0"), std::string::npos) << recent();
  } else {
    // An entry exists but cannot run here (no device): the run refuses, reported at sync.
    std::vector<uint8_t> ws(ws_size + 1);
    ASSERT_EQ(aclnnIncreFlashAttention(ws.data(), ws_size, executor, nullptr), ACLNN_SUCCESS)
        << recent();
    EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_ERROR_INTERNAL_ERROR);
    EXPECT_NE(recent().find("no backend is available for cuda:0"), std::string::npos) << recent();
  }
  for (const uint16_t x : out) EXPECT_EQ(x, 0x3c00);  // nothing was written
  aclDestroyTensorList(key_list);
  aclDestroyTensorList(value_list);
  aclDestroyTensor(query);
  aclDestroyTensor(key);
  aclDestroyTensor(value);
  aclDestroyTensor(attention_out);
}

}  // namespace
