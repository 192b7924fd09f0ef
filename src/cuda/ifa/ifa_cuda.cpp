// The IFA CUDA backend's adaptor: from the run's bound data, sends the per-sequence table with the
// upload launches and queues the kernels (ifa_kernel.cu). Built only with the CUDA backend
// (KVFLASH_HAVE_CUDA).
#include "cuda/ifa/ifa_cuda.hpp"

#include "cuda/ifa/ifa_cuda_plan.hpp"

#if defined(KVFLASH_HAVE_CUDA)

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>

#include "core/workspace_arena.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/ifa/ifa_launch.hpp"
#include "ops/ifa/ifa_error.hpp"

namespace kvflash::cuda {
namespace {

// The aligned base inside a caller's workspace (the layout reserves the slack).
void* aligned(void* ws) { return core::align_base(ws, kIfaCudaWorkspaceAlign); }

Status launch_failed(int e) {
  return cuda_fail(static_cast<cudaError_t>(e), ifa::kIfaOp, "queueing the IFA CUDA kernels");
}

}  // namespace

size_t ifa_workspace_size(const core::IfaProblem& p) { return ifa_cuda_workspace_size(p); }

Status ifa_run(const core::IfaProblem& p, const core::IfaData& d, const core::RunContext& ctx) {
  void* base = aligned(ctx.workspace);
  void* stream = ctx.stream;
  const IfaCudaLayout layout = ifa_cuda_layout(p);
  const IfaCudaGeometry geometry = ifa_cuda_geometry(p);
  // The table travels as kernel parameters (copied at launch, so graph-capturable, and no host
  // buffer has to outlive the call).
  IfaCudaSeqUpload upload;
  for (int64_t first = 0; first < p.batch; first += kIfaCudaSeqsPerUpload) {
    upload.first = first;
    upload.count = static_cast<int32_t>(std::min<int64_t>(kIfaCudaSeqsPerUpload, p.batch - first));
    ifa_cuda_seq_entries(p, d, first, upload.count, upload.seqs);
    if (const int e = ifa_cuda_upload(upload, layout, base, stream); e != 0) {
      return launch_failed(e);
    }
  }
  const int e = ifa_cuda_launch(p, d, layout, geometry, base, stream);
  if (e != 0) return launch_failed(e);
  return Status::kSuccess;
}

}  // namespace kvflash::cuda

#endif  // KVFLASH_HAVE_CUDA
