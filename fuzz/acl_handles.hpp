// aclTensor / aclTensorList / aclIntArray handles for a fuzz call, made from kvflash views the way
// a CANN program makes them (aclCreateTensor with or without storage dims), with the handle-level
// mutations only the C API has: storage dims too small, odd formats, null entries, destroyed and
// foreign handles. Every creation is checked: aclCreateTensor must refuse exactly the descriptors
// docs/api.md lists, with a message.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "fuzz_input.hpp"
#include "kvflash/tensor.hpp"

namespace kvflash::fuzz {

class AclHandles {
 public:
  AclHandles() = default;
  AclHandles(const AclHandles&) = delete;
  AclHandles& operator=(const AclHandles&) = delete;
  /// Destroys every live handle made here (each destroy must succeed).
  ~AclHandles();

  /// A tensor for view (mutated by in: storage dims, format). Null when aclCreateTensor refused
  /// it, which must be exactly when the descriptor is one it documents as refused.
  aclTensor* tensor(FuzzInput& in, const TensorView& view, const std::string& name);
  aclTensor* optional(FuzzInput& in, const std::optional<TensorView>& view,
                      const std::string& name) {
    return view ? tensor(in, *view, name) : nullptr;
  }
  aclTensorList* list(FuzzInput& in, const std::vector<TensorView>& views, const std::string& name);
  aclIntArray* int_array(FuzzInput& in, const std::optional<std::vector<int64_t>>& values);

  /// Handle mutations applied to the arguments of one call, after every handle is made:
  /// returns h, or a destroyed handle, or a foreign pointer (neither is live: 161002).
  template <typename T>
  const T* maybe_break(FuzzInput& in, const T* h, bool* broken) {
    if (h == nullptr || !in.rare(24)) return h;
    *broken = true;
    if (in.flag()) {
      doomed_.push_back([this, h] { destroy(h); });
      return h;  // dangling once destroy_broken() ran: must be recognised as not live
    }
    return reinterpret_cast<const T*>(&foreign_);
  }
  /// Destroys the handles maybe_break chose to leave dangling. Called once every handle of the
  /// call is made: destroyed earlier, a handle's memory could be reused by the next handle made,
  /// and the dangling pointer would name a live handle again.
  void destroy_broken();
  /// Destroys every handle now (lifetime test: executors keep what they need).
  void destroy_all();

 private:
  void destroy(const aclTensor* t);
  void destroy(const aclTensorList* l);
  void destroy(const aclIntArray* a);
  std::vector<aclTensor*> tensors_;
  std::vector<aclTensorList*> lists_;
  std::vector<aclIntArray*> arrays_;
  std::vector<std::function<void()>> doomed_;
  int64_t foreign_[4] = {};
};

}  // namespace kvflash::fuzz
