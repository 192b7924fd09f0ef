#include "capi_ifa.hpp"

#include <optional>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_incre_flash_attention_v4.h"
#include "kvflash/parallel.hpp"

namespace kvflash::tools {

// Every aclnn object of one call, destroyed with it.
struct CapiIfaCall::Objects {
  std::vector<aclTensor*> tensors;  // all of them, for the destructor
  aclTensor* query = nullptr;
  aclTensorList *key = nullptr, *value = nullptr;
  aclTensor *pse_shift = nullptr, *atten_mask = nullptr, *dequant_scale1 = nullptr,
            *quant_scale1 = nullptr, *dequant_scale2 = nullptr, *quant_scale2 = nullptr,
            *quant_offset2 = nullptr, *antiquant_scale = nullptr, *antiquant_offset = nullptr,
            *block_table = nullptr, *kv_padding_size = nullptr, *out = nullptr;
  aclIntArray* actual_seq_lengths = nullptr;
  std::vector<char> layout;  // the C API takes a char*
  int64_t num_heads = 0, num_kv_heads = 0, block_size = 0, inner_precise = 0;
  double scale = 0;
  aclrtStream stream = nullptr;

  ~Objects() {
    if (stream != nullptr) aclrtDestroyStream(stream);
    aclDestroyTensorList(key);  // a list owns copies of its descriptors, not the tensors
    aclDestroyTensorList(value);
    aclDestroyIntArray(actual_seq_lengths);
    for (aclTensor* t : tensors) aclDestroyTensor(t);
  }

  // The aclTensor of a view over the same memory: its shape, strides and offset, the storage
  // exactly as long as the view reaches. False when aclCreateTensor refuses it.
  bool tensor(const TensorView& v, aclTensor** out) {
    int64_t last = v.offset;
    for (int i = 0; i < v.rank; ++i) last += (v.shape[i] - 1) * v.strides[i];
    const int64_t storage = last + 1;
    *out = aclCreateTensor(v.shape.data(), static_cast<uint64_t>(v.rank),
                           static_cast<aclDataType>(v.dtype), v.strides.data(), v.offset,
                           ACL_FORMAT_ND, &storage, 1, v.data);
    if (*out != nullptr) tensors.push_back(*out);
    return *out != nullptr;
  }
  bool optional(const std::optional<TensorView>& v, aclTensor** out) {
    return !v || tensor(*v, out);
  }
  bool list(const std::vector<TensorView>& views, aclTensorList** out) {
    std::vector<aclTensor*> items(views.size());
    for (size_t i = 0; i < views.size(); ++i)
      if (!tensor(views[i], &items[i])) return false;
    *out = aclCreateTensorList(items.data(), items.size());
    return *out != nullptr;
  }
};

std::unique_ptr<CapiIfaCall> CapiIfaCall::create(const IfaArgs& a, std::string* why) {
  if (a.blocks_may_repeat) {
    *why = "_npu_paged_attention's call (blocks_may_repeat) has no aclnn form";
    return nullptr;
  }
  if (a.softmax_lse) {
    *why = "softmax_lse has no aclnnIncreFlashAttentionV4 form";
    return nullptr;
  }
  // aclInit once per process: a second call answers ACL_ERROR_REPEAT_INITIALIZE, which is fine.
  static const bool initialised = (aclInit(nullptr), aclrtSetDevice(0) == ACL_SUCCESS);
  if (!initialised) {
    *why = std::string("aclrtSetDevice: ") + aclGetRecentErrMsg();
    return nullptr;
  }
  // The C API takes no thread count: a CANN program on kvflash sets the library's (as --threads
  // does for the C++ call), so both paths run on the same workers.
  if (a.num_threads > 0) set_num_threads(a.num_threads);
  auto o = std::make_unique<Objects>();
  const bool ok = o->tensor(a.query, &o->query) && o->list(a.key, &o->key) &&
                  o->list(a.value, &o->value) && o->optional(a.pse_shift, &o->pse_shift) &&
                  o->optional(a.atten_mask, &o->atten_mask) &&
                  o->optional(a.dequant_scale1, &o->dequant_scale1) &&
                  o->optional(a.quant_scale1, &o->quant_scale1) &&
                  o->optional(a.dequant_scale2, &o->dequant_scale2) &&
                  o->optional(a.quant_scale2, &o->quant_scale2) &&
                  o->optional(a.quant_offset2, &o->quant_offset2) &&
                  o->optional(a.antiquant_scale, &o->antiquant_scale) &&
                  o->optional(a.antiquant_offset, &o->antiquant_offset) &&
                  o->optional(a.block_table, &o->block_table) &&
                  o->optional(a.kv_padding_size, &o->kv_padding_size) &&
                  o->tensor(a.attention_out, &o->out);
  if (!ok) {
    *why = std::string("aclCreateTensor: ") + aclGetRecentErrMsg();
    return nullptr;
  }
  if (a.actual_seq_lengths) {
    o->actual_seq_lengths =
        aclCreateIntArray(a.actual_seq_lengths->data(), a.actual_seq_lengths->size());
  }
  o->layout.assign(a.input_layout.begin(), a.input_layout.end());
  o->layout.push_back('\0');
  o->num_heads = a.num_heads;
  o->num_kv_heads = a.num_key_value_heads;
  o->block_size = a.block_size;
  o->inner_precise = a.inner_precise;
  o->scale = a.scale_value;
  if (aclrtCreateStream(&o->stream) != ACL_SUCCESS) {
    *why = std::string("aclrtCreateStream: ") + aclGetRecentErrMsg();
    return nullptr;
  }
  std::unique_ptr<CapiIfaCall> call(new CapiIfaCall);
  call->objects_ = std::move(o);
  return call;
}

CapiIfaCall::~CapiIfaCall() = default;

bool CapiIfaCall::run(std::string* error) {
  Objects& o = *objects_;
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  const auto fail = [&](const char* what) {
    *error = std::string(what) + ": " + aclGetRecentErrMsg();
    return false;
  };
  if (aclnnIncreFlashAttentionV4GetWorkspaceSize(
          o.query, o.key, o.value, o.pse_shift, o.atten_mask, o.actual_seq_lengths,
          o.dequant_scale1, o.quant_scale1, o.dequant_scale2, o.quant_scale2, o.quant_offset2,
          o.antiquant_scale, o.antiquant_offset, o.block_table, o.kv_padding_size, o.num_heads,
          o.scale, o.layout.data(), o.num_kv_heads, o.block_size, o.inner_precise, o.out, &size,
          &executor) != ACLNN_SUCCESS)
    return fail("aclnnIncreFlashAttentionV4GetWorkspaceSize");
  void* workspace = nullptr;
  if (size > 0 && aclrtMalloc(&workspace, size, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) {
    aclDestroyAclOpExecutor(executor);
    return fail("aclrtMalloc");
  }
  const bool launched =
      aclnnIncreFlashAttentionV4(workspace, size, executor, o.stream) == ACLNN_SUCCESS;
  const bool synced = launched && aclrtSynchronizeStream(o.stream) == ACL_SUCCESS;
  if (!launched || !synced) {
    const bool failed = fail(launched ? "aclrtSynchronizeStream" : "aclnnIncreFlashAttentionV4");
    if (workspace != nullptr) aclrtFree(workspace);
    return failed;
  }
  if (workspace != nullptr) aclrtFree(workspace);
  return true;
}

}  // namespace kvflash::tools
