#include "acl_handles.hpp"

#include <algorithm>
#include <cstring>

#include "core/checked_math.hpp"
#include "harness.hpp"
#include "support/acl_raw.h"

namespace kvflash::fuzz {
namespace {

// What aclCreateTensor documents as refused (docs/api.md): n > 8, a null pointer it needs, a
// negative dim, stride or offset, a view reaching past storageDims' element count, null data for
// a non-empty view; also int64 overflow of the view's reach or the storage's element count.
bool create_should_fail(const int64_t* dims, uint64_t n, const int64_t* strides, int64_t offset,
                        const int64_t* storage, uint64_t m, const void* data) {
  if (n > 8 || offset < 0) return true;
  bool empty = false;
  for (uint64_t i = 0; i < n; ++i) {
    if (dims[i] < 0 || strides[i] < 0) return true;
    empty = empty || dims[i] == 0;
  }
  std::optional<int64_t> storage_numel = 1;
  for (uint64_t i = 0; i < m; ++i) {
    if (storage[i] < 0) return true;
    storage_numel = storage_numel ? core::checked_mul(*storage_numel, storage[i]) : std::nullopt;
  }
  if (!storage_numel) return true;
  if (empty) return false;
  std::optional<int64_t> last = offset;
  for (uint64_t i = 0; i < n && last; ++i) {
    const auto span = core::checked_mul(dims[i] - 1, strides[i]);
    last = span ? core::checked_add(*last, *span) : std::nullopt;
  }
  if (!last) return true;
  if (m > 0 && *last >= *storage_numel) return true;
  return data == nullptr;
}

}  // namespace

AclHandles::~AclHandles() { destroy_all(); }

void AclHandles::destroy_all() {
  for (aclTensor* t : tensors_)
    if (aclDestroyTensor(t) != 0) violated("aclDestroyTensor of a live tensor failed");
  for (aclTensorList* l : lists_)
    if (aclDestroyTensorList(l) != 0) violated("aclDestroyTensorList of a live list failed");
  for (aclIntArray* a : arrays_)
    if (aclDestroyIntArray(a) != 0) violated("aclDestroyIntArray of a live array failed");
  tensors_.clear();
  lists_.clear();
  arrays_.clear();
}

void AclHandles::destroy_broken() {
  for (const auto& destroy_one : doomed_) destroy_one();
  doomed_.clear();
}

void AclHandles::destroy(const aclTensor* t) {
  auto it = std::find(tensors_.begin(), tensors_.end(), t);
  if (it == tensors_.end()) return;
  tensors_.erase(it);
  if (aclDestroyTensor(t) != 0) violated("aclDestroyTensor of a live tensor failed");
  if (aclDestroyTensor(t) != 161002) violated("a second aclDestroyTensor did not return 161002");
}
void AclHandles::destroy(const aclTensorList* l) {
  auto it = std::find(lists_.begin(), lists_.end(), l);
  if (it == lists_.end()) return;
  lists_.erase(it);
  if (aclDestroyTensorList(l) != 0) violated("aclDestroyTensorList of a live list failed");
}
void AclHandles::destroy(const aclIntArray* a) {
  auto it = std::find(arrays_.begin(), arrays_.end(), a);
  if (it == arrays_.end()) return;
  arrays_.erase(it);
  if (aclDestroyIntArray(a) != 0) violated("aclDestroyIntArray of a live array failed");
}

aclTensor* AclHandles::tensor(FuzzInput& in, const TensorView& v, const std::string& name) {
  int64_t dims[16] = {}, strides[16] = {}, storage[4] = {};
  const uint64_t n = v.rank < 0 ? static_cast<uint64_t>(static_cast<int64_t>(v.rank))
                                : static_cast<uint64_t>(v.rank);
  for (int i = 0; i < v.rank && i < kMaxRank; ++i) {
    dims[i] = v.shape[i];
    strides[i] = v.strides[i];
  }
  uint64_t m = 0;
  const auto bytes = view_bytes(v);
  const size_t es = dtype_size(v.dtype);
  const bool backed = v.data != nullptr && v.data != unreadable_page() && bytes && es > 0;
  switch (in.below(6)) {
    case 1:
    case 2:  // the buffer's element count, as CANN samples pass it
      if (backed) {
        storage[0] = static_cast<int64_t>(*bytes / es);
        m = 1;
      }
      break;
    case 3:  // one element short, or a wrong rank of dims
      if (backed && *bytes / es > 0) {
        storage[0] = static_cast<int64_t>(*bytes / es) - 1;
        m = 1;
      } else {
        storage[0] = in.special(4);
        storage[1] = in.special(4);
        m = 2;
      }
      break;
    case 4:  // the view dims themselves (too small for strided views)
      for (int i = 0; i < 4 && i < v.rank; ++i) storage[i] = v.shape[i];
      m = static_cast<uint64_t>(std::clamp(v.rank, 0, 4));
      break;
    default:
      break;
  }
  const int32_t format =
      in.rare(8) ? (in.flag() ? ACL_FORMAT_FRACTAL_NZ : static_cast<int32_t>(in.special(2)))
                 : ACL_FORMAT_ND;
  // Ranks the API cannot take from a TensorView: pass what it says (n > 8 must be refused first).
  aclTensor* t = kvflash_raw_create_tensor(dims, n, static_cast<int32_t>(v.dtype), strides,
                                           v.offset, format, m ? storage : nullptr, m, v.data);
  const bool should_fail = create_should_fail(dims, n, strides, v.offset, storage, m, v.data);
  if (t == nullptr) {
    const std::string msg = aclGetRecentErrMsg();
    if (!should_fail)
      violated("aclCreateTensor refused a valid descriptor for " + name + ": " + msg);
    if (msg.rfind("[aclCreateTensor]", 0) != 0)
      violated("aclCreateTensor refused " + name + " with message '" + msg + "'");
    return nullptr;
  }
  if (should_fail) violated("aclCreateTensor accepted an invalid descriptor for " + name);
  tensors_.push_back(t);
  return t;
}

aclTensorList* AclHandles::list(FuzzInput& in, const std::vector<TensorView>& views,
                                const std::string& name) {
  std::vector<aclTensor*> items;
  for (size_t i = 0; i < views.size(); ++i) {
    items.push_back(tensor(in, views[i], name + "[" + std::to_string(i) + "]"));
  }
  if (in.rare(16) && !items.empty()) items[in.below(static_cast<uint32_t>(items.size()))] = nullptr;
  aclTensorList* l = aclCreateTensorList(items.data(), items.size());
  if (l == nullptr)
    violated("aclCreateTensorList refused live tensors: " + std::string(aclGetRecentErrMsg()));
  lists_.push_back(l);
  // The list holds copies: the tensors may go at once (docs/api.md).
  if (in.rare(4)) {
    for (aclTensor* t : items)
      if (t) destroy(t);
  }
  return l;
}

aclIntArray* AclHandles::int_array(FuzzInput& in,
                                   const std::optional<std::vector<int64_t>>& values) {
  if (!values) return nullptr;
  aclIntArray* a = aclCreateIntArray(values->data(), values->size());
  if (a == nullptr && !values->empty()) violated("aclCreateIntArray refused a host array");
  if (a == nullptr) {
    // An empty array from a vector without storage: data() may be null, which is legal for n = 0.
    violated("aclCreateIntArray refused an empty array");
  }
  arrays_.push_back(a);
  (void)in;
  return a;
}

}  // namespace kvflash::fuzz
