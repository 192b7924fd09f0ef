// The SFA CUDA backend's adaptor: the path choice and the launch of the kernels on the plan's
// problem and the run's bound data (sfa_launch.hpp). Built only with the CUDA
// backend (KVFLASH_HAVE_CUDA).
#include "cuda/sfa/sfa_cuda.hpp"

#if defined(KVFLASH_HAVE_CUDA)

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/error.hpp"
#include "cuda/sfa/sfa_launch.hpp"
#include "ops/sfa/sfa_validate.hpp"

namespace kvflash::cuda {
namespace {

// The MMA path's position list per row (sfa_mma_geometry.hpp), a function of p only.
int64_t list_cap(const core::SfaProblem& p) {
  return sfa_position_list_cap(p.num_rows, p.sparse_size, p.sparse_block_size,
                               p.paged ? p.kv_capacity : p.kv_rows);
}

SfaLaunchProblem launch_problem(const core::SfaProblem& p) {
  SfaLaunchProblem l;
  static_cast<core::SfaProblem&>(l) = p;
  l.bf16 = p.dtype == DType::kBFloat16;
  l.out_f32 = p.out_dtype == DType::kFloat32;
  l.list_cap = list_cap(p);
  return l;
}

bool env_force_simt() {
  const char* e = std::getenv("KVFLASH_SFA_CUDA_PATH");
  return e != nullptr && std::strcmp(e, "simt") == 0;
}

std::atomic<bool>& force_simt() {
  static std::atomic<bool> f{env_force_simt()};
  return f;
}

bool kv_aligned(const void* base, const core::SfaKvView& v) {
  const int64_t strides[] = {v.s_batch, v.s_block, v.s_pos};
  return sfa_rows_aligned(base, v.s_dim, strides, 3);
}

}  // namespace

void set_sfa_force_simt(bool force) { force_simt().store(force); }

SfaPathChoice sfa_path_for(const core::SfaProblem& p, const core::SfaData& b) {
  SfaPathQuery q;
  q.num_heads = p.num_heads;
  q.v_is_k = b.v_is_k;
  q.rows_aligned = kv_aligned(b.k, p.k) && kv_aligned(b.k_rope, p.k_rope) &&
                   (b.v_is_k || kv_aligned(b.v, p.v));
  q.force_simt = force_simt().load();
  q.list_cap = list_cap(p);
  int dev = 0, major = 0, smem = 0;
  if (cudaGetDevice(&dev) == cudaSuccess &&
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess &&
      cudaDeviceGetAttribute(&smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) == cudaSuccess) {
    q.sm_major = major;
    q.max_smem_optin = static_cast<size_t>(smem);
  } else {
    (void)cudaGetLastError();  // no device: the SIMT choice; the launch reports the error
  }
  return sfa_choose_path(q);
}

size_t sfa_workspace_size(const core::SfaProblem& p) {
  return sfa_launch_workspace_size(p.batch, p.num_rows, list_cap(p));
}

Status sfa_run(const core::SfaProblem& p, const core::SfaData& b, const core::RunContext& ctx) {
  void* workspace = ctx.workspace;
  const SfaPathChoice c = sfa_path_for(p, b);
  SfaLaunchPath path;
  path.mma = c.path == SfaPath::kMma;
  path.m_tiles = c.layout.m_tiles;
  if (const int e = sfa_launch(launch_problem(p), b, workspace, ctx.stream, path); e != 0) {
    return core::fail(Status::kRuntime, sfa::kOpName,
                      "the CUDA kernel launch failed (cudaError_t " + std::to_string(e) + ")");
  }
  return Status::kSuccess;
}

}  // namespace kvflash::cuda

#endif  // KVFLASH_HAVE_CUDA
