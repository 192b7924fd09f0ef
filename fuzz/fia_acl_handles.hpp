// Plain aclTensor / aclTensorList / aclIntArray handles for the FIA and PFA aclnn fuzz targets:
// each view as a CANN program makes it (1-D storage of the view's extent), no handle-level mutation
// (their inputs mutate the views themselves; fuzz/acl_handles.hpp's AclHandles mutates handles
// for the IFA and SFA targets). Destroyed with the object.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "harness.hpp"
#include "kvflash/tensor.hpp"

namespace kvflash::fuzz {

struct FiaAclHandles {
  std::vector<aclTensor*> tensors;
  std::vector<aclTensorList*> lists;
  std::vector<aclIntArray*> arrays;
  ~FiaAclHandles() { destroy_all(); }
  /// Destroys every handle now (each destroy must succeed): the lifetime test, executors keep
  /// what they need.
  void destroy_all() {
    for (aclTensorList* l : lists) check(aclDestroyTensorList(l), "aclDestroyTensorList");
    for (aclTensor* t : tensors) check(aclDestroyTensor(t), "aclDestroyTensor");
    for (aclIntArray* a : arrays) check(aclDestroyIntArray(a), "aclDestroyIntArray");
    lists.clear();
    tensors.clear();
    arrays.clear();
  }
  aclTensor* make(const TensorView& v) {
    // 1-D storage of the view's extent where it has one, else the view's own dims.
    const std::optional<uint64_t> bytes = view_bytes(v);
    const int64_t storage =
        bytes && dtype_is_known(v.dtype) ? static_cast<int64_t>(*bytes / dtype_size(v.dtype)) : 0;
    const bool flat = bytes && dtype_is_known(v.dtype) && v.rank >= 0 && v.rank <= kMaxRank;
    aclTensor* t = aclCreateTensor(v.shape.data(), v.rank, static_cast<aclDataType>(v.dtype),
                                   v.strides.data(), v.offset, ACL_FORMAT_ND,
                                   flat ? &storage : v.shape.data(), flat ? 1 : v.rank, v.data);
    if (t != nullptr) tensors.push_back(t);
    return t;
  }
  aclTensor* opt(const std::optional<TensorView>& v) { return v ? make(*v) : nullptr; }
  aclTensorList* list(const std::vector<TensorView>& vs) {
    std::vector<aclTensor*> ts;
    for (const TensorView& v : vs) ts.push_back(make(v));
    aclTensorList* l = aclCreateTensorList(ts.data(), ts.size());
    if (l != nullptr) lists.push_back(l);
    return l;
  }
  aclIntArray* ints(const std::optional<std::vector<int64_t>>& v) {
    if (!v) return nullptr;
    aclIntArray* a = aclCreateIntArray(v->data(), v->size());
    if (a != nullptr) arrays.push_back(a);
    return a;
  }

 private:
  static void check(aclnnStatus st, const char* what) {
    if (st != 0) violated(std::string(what) + " of a live handle failed");
  }
};

}  // namespace kvflash::fuzz
