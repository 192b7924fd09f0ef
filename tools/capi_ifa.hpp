// The C API path of an IFA decode step, as a CANN program takes it: the aclnn objects of the same
// tensors as an IfaArgs (aclCreateTensor over the same memory; the runtime's "device memory" is
// host memory on the CPU), and per call aclnnIncreFlashAttentionV4GetWorkspaceSize, aclrtMalloc of
// the workspace, aclnnIncreFlashAttentionV4 on a stream, aclrtSynchronizeStream and aclrtFree.
// `kvflash bench --capi` times it against IfaPlan::run on the same call, alternated call by call
// (tools/timing.hpp time_alternated), so that every sweep shows the C API path's overhead
// (docs/perf.md, "The C API path").
#pragma once

#include <memory>
#include <string>

#include "kvflash/ifa.hpp"

namespace kvflash::tools {

class CapiIfaCall {
 public:
  /// The aclnn objects for args (which must outlive the call object). Null with the reason in
  /// *why when the call has no aclnn V4 form (blocks_may_repeat: _npu_paged_attention's call,
  /// which only the C++ API and the torch op take; softmax_lse) or an object cannot be made.
  static std::unique_ptr<CapiIfaCall> create(const IfaArgs& args, std::string* why);
  ~CapiIfaCall();
  CapiIfaCall(const CapiIfaCall&) = delete;
  CapiIfaCall& operator=(const CapiIfaCall&) = delete;

  /// One call the way a CANN program makes it; false with aclGetRecentErrMsg() in *error.
  bool run(std::string* error);

 private:
  CapiIfaCall() = default;
  struct Objects;
  std::unique_ptr<Objects> objects_;
};

}  // namespace kvflash::tools
