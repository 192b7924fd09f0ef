// The SFA CUDA backend's adaptor: the path choice, the launch of the kernels on the plan's problem
// and the run's bound data (sfa_launch.hpp), and the fault read-back. Built only with the CUDA
// backend (KVFLASH_HAVE_CUDA).
#include "cuda/sfa/sfa_cuda.hpp"

#if defined(KVFLASH_HAVE_CUDA)

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/device_fault.hpp"
#include "core/error.hpp"
#include "core/workspace_arena.hpp"
#include "cpu/sfa/sfa_kernel.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/sfa/sfa_launch.hpp"
#include "ops/sfa/sfa_bind.hpp"
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

// Elements spanned by a strided int32 tensor whose largest index is `last` (nothing read).
std::vector<int32_t> copy_back(const int32_t* dev, int64_t last) {
  std::vector<int32_t> host(static_cast<size_t>(last + 1));
  if (cudaMemcpy(host.data(), dev, host.size() * sizeof(int32_t), cudaMemcpyDeviceToHost) !=
      cudaSuccess) {
    host.clear();
  }
  return host;
}

int64_t last_index(const core::SfaRowView& v, int64_t rows, int64_t heads, int64_t dims) {
  const int64_t inner = rows < v.rows_inner ? rows : v.rows_inner;
  return ((rows - 1) / v.rows_inner) * v.s_outer + (inner - 1) * v.s_inner +
         (heads - 1) * v.s_head + (dims - 1) * v.s_dim;
}

// The aclnn CUDA runtime's hand-off (core/device_fault.hpp): the fault word, copied in stream
// order, decoded at stream synchronisation. Only the word travels: by then the row flags and the
// data that name the exact element may be reused by later calls, so the message names the
// arguments by the word's bits (sfa_fault_status, called before the workspace is reused, names
// the element as the CPU does).
void post_fault_word(const core::SfaProblem& p, const void* workspace) {
  const std::byte* base = core::align_base(workspace, kSfaCudaWorkspaceAlign);
  core::DeviceFaultRecord r;
  r.device_record = base + sfa_ws_offsets(p.batch, p.num_rows).fault;
  r.bytes = sizeof(uint32_t);
  r.decode = [](const void* host) {
    uint32_t word;
    std::memcpy(&word, host, sizeof word);
    if (word == 0) return Status::kSuccess;
    std::string what;
    if (word & kSfaFaultLengths) {
      what = "actual_seq_lengths_query / actual_seq_lengths_kv hold a length the problem cannot "
             "have (every output is NaN)";
    }
    if (word & kSfaFaultBlockId) {
      what += std::string(what.empty() ? "" : "; ") +
              "block_table holds a block id outside [0, blocks of key) used by a selected "
              "position (those query rows are NaN)";
    }
    return core::fail(Status::kInvalid, sfa::kOpName, what + " (found on the CUDA device)");
  };
  core::post_fault_record(std::move(r));
}

}  // namespace

void set_sfa_force_simt(bool force) { force_simt().store(force); }

SfaPathChoice sfa_path_for(const core::SfaProblem& p, const SfaArgs& args) {
  core::SfaData b;
  sfa::bind_data(p, args, &b);
  return sfa_path_for(p, b);
}

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
  post_fault_word(p, workspace);
  return Status::kSuccess;
}

Status sfa_fault_status(const core::SfaProblem& p, const SfaArgs& args, const void* workspace,
                        void* stream) {
  const char* op = sfa::kOpName;
  KVFLASH_CUDA_TRY(op, cudaStreamSynchronize(static_cast<cudaStream_t>(stream)));
  const std::byte* base = core::align_base(workspace, kSfaCudaWorkspaceAlign);
  const SfaWsOffsets at = sfa_ws_offsets(p.batch, p.num_rows);
  uint32_t word = 0;
  KVFLASH_CUDA_TRY(op, cudaMemcpy(&word, base + at.fault, sizeof(word), cudaMemcpyDeviceToHost));
  if (word == 0) return Status::kSuccess;

  // Host copies of what the CPU's checks read, then the CPU's own functions for the message.
  core::SfaData d;
  sfa::bind_data(p, args, &d);
  std::vector<int32_t> lq, lkv, idx, bt;
  if (p.has_lengths_query) {
    lq = copy_back(d.lengths_query, (p.batch - 1) * p.lengths_query_s0);
    d.lengths_query = lq.data();
  }
  if (p.has_lengths_kv) {
    lkv = copy_back(d.lengths_kv, (p.batch - 1) * p.lengths_kv_s0);
    d.lengths_kv = lkv.data();
  }
  std::vector<core::SfaBatch> batches(static_cast<size_t>(p.batch));
  std::vector<core::SfaRow> rows(static_cast<size_t>(p.num_rows));
  if ((p.has_lengths_query && lq.empty()) || (p.has_lengths_kv && lkv.empty())) {
    return core::fail(Status::kRuntime, op, "could not read the actual lengths back to report a fault");
  }
  // Fault bit 0: the CPU's message for the same lengths.
  KVFLASH_RETURN_IF_ERROR(sfa::resolve_lengths(p, d, batches.data(), rows.data()));
  d.batches = batches.data();
  d.rows = rows.data();
  if ((word & kSfaFaultBlockId) != 0 && p.paged && p.num_rows > 0 && p.sparse_size > 0) {
    std::vector<uint8_t> row_fault(static_cast<size_t>(p.num_rows));
    KVFLASH_CUDA_TRY(op, cudaMemcpy(row_fault.data(), base + at.row_fault, row_fault.size(),
                                    cudaMemcpyDeviceToHost));
    idx = copy_back(d.indices, last_index(p.indices, p.num_rows, 1, p.sparse_size));
    const int64_t slots = p.block_size > 0 ? p.kv_capacity / p.block_size : 0;
    if (slots > 0) bt = copy_back(d.block_table, (p.batch - 1) * p.bt_s0 + (slots - 1) * p.bt_s1);
    if (idx.empty() || bt.empty()) {
      return core::fail(Status::kRuntime, op, "could not read the indices back to report a fault");
    }
    d.indices = idx.data();
    d.block_table = bt.data();
    KVFLASH_RETURN_IF_ERROR(cpu::sfa_report_faults(p, d, row_fault.data()));
  }
  return core::fail(Status::kRuntime, op,
                    "the CUDA kernel recorded a fault (word " + std::to_string(word) +
                        ") that the host checks do not find");
}

}  // namespace kvflash::cuda

#endif  // KVFLASH_HAVE_CUDA
