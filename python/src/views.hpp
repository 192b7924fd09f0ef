// Torch tensors as kvflash views, the library's errors as Python exceptions, and a plan's run with
// a workspace from torch: the binding layer of the PyTorch operators (with schema_args.hpp and
// plan_cache.hpp). It computes and validates nothing itself; the one check it makes is that a
// tensor's dtype has a kvflash DType at all.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>

#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "kvflash/fia.hpp"
#include "kvflash/flash_attention_score.hpp"
#include "kvflash/ifa.hpp"
#include "kvflash/kv_cache.hpp"
#include "kvflash/li.hpp"
#include "kvflash/merge.hpp"
#include "kvflash/sfa.hpp"
#include "kvflash/status.hpp"
#include "kvflash/tensor.hpp"

namespace kvflash::torch_ext {

/// Throws c10::ValueError naming `name` when a required tensor is undefined (None from Python):
/// the kernels read the sizes and device of some tensors before the library sees the call.
void check_defined(const at::Tensor& t, const char* op, const char* name);

/// The view of a tensor, zero copy: data = t.data_ptr() (the storage offset included), offset 0,
/// t's own sizes and strides (in elements, as kvflash counts them), and its device. A dtype with no
/// kvflash DType (float64, int16, ...) is a ValueError naming `name`; ranks above kMaxRank keep
/// their rank, so the library reports them.
/// `index` >= 0 names a list entry: name[index].
TensorView view_of(const at::Tensor& t, const char* op, const char* name, int64_t index = -1);
std::optional<TensorView> view_of(const std::optional<at::Tensor>& t, const char* op,
                                  const char* name);

/// Throws the library's last_error_message() for a failed status: c10::ValueError (Python
/// ValueError) for kInvalid and kNullPtr, c10::Error (RuntimeError) otherwise (declared for
/// plan_cache.hpp too).
[[noreturn]] void throw_status(Status status);

/// A torch operator's names for a library error: the operator ("kvflash::_npu_paged_attention"),
/// the message's bracketed prefix, and {library name, schema name} pairs replaced as whole words
/// (an operator on another's arguments: _npu_paged_attention's context_lens are IFA's
/// actual_seq_lengths).
struct SchemaNames {
  const char* op;
  std::vector<std::pair<std::string_view, std::string_view>> renames;
};

/// e's message in `names`' terms, thrown again as a c10::ValueError.
[[noreturn]] void throw_renamed(const c10::ValueError& e, const SchemaNames& names);

/// Runs f(); a ValueError from it (the library's or a binding check's) is thrown in `names`' terms.
template <class F>
decltype(auto) in_schema_names(const SchemaNames& names, F&& f) {
  try {
    return std::forward<F>(f)();
  } catch (const c10::ValueError& e) {
    throw_renamed(e, names);
  }
}

/// The num_threads of an operator call: torch.get_num_threads() at the time of the call, whichever
/// pool runs it (threads.hpp), or 1 inside one of torch's parallel regions (a loop nested in
/// at::parallel_for runs on its thread, as torch's own operators do there).
int call_num_threads();

/// Runs args on plan (every plan of src/ops/operators.def) on call_num_threads() threads (it sets
/// args.num_threads), with `workspace` when it is a contiguous tensor on like's device of at least
/// the plan's workspace size in bytes (the FIA .out forms' argument, _npu_paged_attention's), else
/// a workspace from torch's allocator on the plan's device; throws the library's error.
#define KVFLASH_OPERATOR(op, Op, Plan, Args)                          \
  void run_plan(const Plan& plan, Args& args, const at::Tensor& like, \
                const at::Tensor& workspace = at::Tensor());
#define KVFLASH_COMPOSITE(op, Plan, Args) KVFLASH_OPERATOR(op, , Plan, Args)
#include "ops/operators.def"

/// The view of an output that is not allocated yet: `shape` (contiguous) and `dtype` on like's
/// device, with a dummy data address that nothing reads. A plan is created from it (the library
/// validates every size) before the output is allocated.
TensorView unallocated_view(const std::vector<int64_t>& shape, at::ScalarType dtype,
                            const at::Tensor& like, const char* op, const char* name);

/// While one is alive on a thread, view_of() takes tensors on the meta device (a fake kernel's)
/// as host tensors whose data is a dummy address that nothing reads: a plan can be created from
/// their metadata (a plan reads no data), e.g. for the workspace size of FIA's
/// _get_max_workspace under FakeTensor. Sizes must be concrete.
class MetaViews {
 public:
  MetaViews();
  ~MetaViews();
  MetaViews(const MetaViews&) = delete;
  MetaViews& operator=(const MetaViews&) = delete;

 private:
  bool previous_;
};

}  // namespace kvflash::torch_ext
