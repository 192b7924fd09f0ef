// The SFA CUDA backend's adaptor: core::SfaProblem / the run's tensors to the plain structs the
// kernels take (sfa_launch.hpp). Built only with the CUDA backend (KVFLASH_HAVE_CUDA).
#include "cuda/sfa_cuda.hpp"

#if defined(KVFLASH_HAVE_CUDA)

#include <string>

#include "core/error.hpp"
#include "cuda/sfa_launch.hpp"
#include "sfa/sfa_bind.hpp"
#include "sfa/sfa_validate.hpp"

namespace kvflash::cuda {
namespace {

SfaRowStrides rows(const core::SfaRowView& v) {
  return {v.rows_inner, v.s_outer, v.s_inner, v.s_head, v.s_dim};
}
SfaKvStrides kv(const core::SfaKvView& v) { return {v.s_batch, v.s_block, v.s_pos, v.s_dim}; }

SfaDevProblem dev_problem(const core::SfaProblem& p) {
  SfaDevProblem d;
  d.bf16 = p.dtype == DType::kBFloat16;
  d.batch = p.batch;
  d.num_heads = p.num_heads;
  d.sparse_size = p.sparse_size;
  d.sparse_block_size = p.sparse_block_size;
  d.num_rows = p.num_rows;
  d.sparse_mode = p.sparse_mode;
  d.scale = p.scale;
  d.q = rows(p.q);
  d.q_rope = rows(p.q_rope);
  d.indices = rows(p.indices);
  d.out = rows(p.out);
  d.softmax_max = rows(p.softmax_max);
  d.softmax_sum = rows(p.softmax_sum);
  d.k = kv(p.k);
  d.k_rope = kv(p.k_rope);
  d.v = kv(p.v);
  d.paged = p.paged;
  d.bt_s0 = p.bt_s0;
  d.bt_s1 = p.bt_s1;
  d.block_size = p.block_size;
  d.num_blocks = p.num_blocks;
  d.sinks_s0 = p.sinks_s0;
  d.query_tnd = p.query_tnd;
  d.kv_tnd = p.kv_tnd;
  d.has_lengths_query = p.has_lengths_query;
  d.has_lengths_kv = p.has_lengths_kv;
  d.lengths_query_s0 = p.lengths_query_s0;
  d.lengths_kv_s0 = p.lengths_kv_s0;
  d.s1 = p.s1;
  d.kv_rows = p.kv_rows;
  d.kv_capacity = p.kv_capacity;
  return d;
}

}  // namespace

size_t sfa_workspace_size(const core::SfaProblem& p) {
  return sfa_launch_workspace_size(p.batch, p.num_rows);
}

Status sfa_run(const core::SfaProblem& p, const SfaArgs& args, void* workspace, void* stream) {
  core::SfaData b;
  sfa::bind_data(p, args, &b);  // host pointer arithmetic only: nothing is read
  SfaDevData d;
  d.q = b.q;
  d.q_rope = b.q_rope;
  d.k = b.k;
  d.k_rope = b.k_rope;
  d.v = b.v;
  d.indices = b.indices;
  d.out = b.out;
  d.softmax_max = b.softmax_max;
  d.softmax_sum = b.softmax_sum;
  d.v_is_k = b.v_is_k;
  d.block_table = b.block_table;
  d.sinks = b.sinks;
  d.lengths_query = b.lengths_query;
  d.lengths_kv = b.lengths_kv;
  if (const int e = sfa_launch(dev_problem(p), d, workspace, stream); e != 0) {
    return core::fail(Status::kRuntime, sfa::kOpName,
                      "the CUDA kernel launch failed (cudaError_t " + std::to_string(e) + ")");
  }
  return Status::kSuccess;
}

}  // namespace kvflash::cuda

#endif  // KVFLASH_HAVE_CUDA
