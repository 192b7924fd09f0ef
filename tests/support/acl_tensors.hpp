// aclTensor / aclTensorList handles over TensorViews (the views' own storage, strides and offset),
// destroyed with their owner: the aclnn tests of the cache write, FlashAttentionScore and the
// attention update build their calls with it.
#pragma once

#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "acl/acl.h"
#include "kvflash/tensor.hpp"

namespace kvflash::testing {

class AclTensors {
 public:
  AclTensors() = default;
  AclTensors(const AclTensors&) = delete;
  AclTensors& operator=(const AclTensors&) = delete;
  ~AclTensors() {
    for (aclTensorList* l : lists_) EXPECT_EQ(aclDestroyTensorList(l), ACLNN_SUCCESS);
    for (aclTensor* t : owned_) EXPECT_EQ(aclDestroyTensor(t), ACLNN_SUCCESS);
    for (aclIntArray* a : arrays_) EXPECT_EQ(aclDestroyIntArray(a), ACLNN_SUCCESS);
  }
  aclTensor* make(const TensorView& v) {
    int64_t last = v.offset;
    for (int i = 0; i < v.rank; ++i) last += (v.shape[i] - 1) * v.strides[i];
    const int64_t storage = last + 1;
    aclTensor* t = aclCreateTensor(v.shape.data(), v.rank, static_cast<aclDataType>(v.dtype),
                                   v.strides.data(), v.offset, ACL_FORMAT_ND, &storage, 1, v.data);
    EXPECT_NE(t, nullptr) << aclGetRecentErrMsg();
    owned_.push_back(t);
    return t;
  }
  aclTensor* make(const std::optional<TensorView>& v) { return v ? make(*v) : nullptr; }
  /// A tensor list over views (aclCreateTensorList copies the descriptors of new aclTensors).
  aclTensorList* list(const std::vector<TensorView>& views) {
    std::vector<aclTensor*> ts;
    for (const TensorView& v : views) ts.push_back(make(v));
    aclTensorList* l = aclCreateTensorList(ts.data(), ts.size());
    EXPECT_NE(l, nullptr) << aclGetRecentErrMsg();
    lists_.push_back(l);
    return l;
  }
  aclIntArray* array(const std::optional<std::vector<int64_t>>& v) {
    if (!v) return nullptr;
    aclIntArray* a = aclCreateIntArray(v->data(), v->size());
    EXPECT_NE(a, nullptr) << aclGetRecentErrMsg();
    arrays_.push_back(a);
    return a;
  }

 private:
  std::vector<aclTensor*> owned_;
  std::vector<aclTensorList*> lists_;
  std::vector<aclIntArray*> arrays_;
};

}  // namespace kvflash::testing
