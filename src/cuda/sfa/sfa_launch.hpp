// The SFA CUDA kernels' interface with the library: plain structs of the problem's strides and the
// run's pointers (what core::SfaProblem / core::SfaData hold), with no kvflash header, so the
// kernels depend on nothing host-only (and compile as C++17 or C++20). sfa_cuda.cpp fills them.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kvflash::cuda {

/// Element (r, h, d) at (r / rows_inner) * s_outer + (r % rows_inner) * s_inner + h * s_head +
/// d * s_dim (core::SfaRowView).
struct SfaRowStrides {
  int64_t rows_inner = 1, s_outer = 0, s_inner = 0, s_head = 0, s_dim = 1;
};
/// core::SfaKvView.
struct SfaKvStrides {
  int64_t s_batch = 0, s_block = 0, s_pos = 0, s_dim = 1;
};

/// core::SfaProblem's fields the kernels read (same meanings).
struct SfaDevProblem {
  bool bf16 = false;     ///< else fp16
  bool out_f32 = false;  ///< attention_out is fp32 (kvflash extension), else the input dtype
  int64_t batch = 0, num_heads = 0, sparse_size = 0, sparse_block_size = 1, num_rows = 0;
  int64_t sparse_mode = 3;
  float scale = 1.0f;
  SfaRowStrides q, q_rope, indices, out, softmax_max, softmax_sum;
  SfaKvStrides k, k_rope, v;
  bool paged = false;
  int64_t bt_s0 = 0, bt_s1 = 0, block_size = 0, num_blocks = 0;
  int64_t sinks_s0 = 1;
  bool query_tnd = false, kv_tnd = false, has_lengths_query = false, has_lengths_kv = false;
  int64_t lengths_query_s0 = 0, lengths_kv_s0 = 0, s1 = 0, kv_rows = 0, kv_capacity = 0;
  int64_t list_cap = 0;  ///< position-list entries per row (sfa_position_list_cap; 0: none)
};

/// core::SfaData's pointers (device memory; absent ones null).
struct SfaDevData {
  const void *q = nullptr, *q_rope = nullptr, *k = nullptr, *k_rope = nullptr, *v = nullptr;
  const int32_t* indices = nullptr;
  void* out = nullptr;
  float *softmax_max = nullptr, *softmax_sum = nullptr;
  bool v_is_k = false;
  const int32_t* block_table = nullptr;
  const float* sinks = nullptr;
  const int32_t *lengths_query = nullptr, *lengths_kv = nullptr;
};

/// The fault word's bits (the workspace's last 4 bytes before the 256-byte pad; see
/// sfa_fault_word_offset): bad actual-length data (every output NaN), a bad block id (its row NaN,
/// its row flag set).
constexpr uint32_t kSfaFaultLengths = 1u;
constexpr uint32_t kSfaFaultBlockId = 2u;

/// Workspace bytes for a problem of `batch` batches and `num_rows` query rows, with list_cap
/// position-list entries per row (the MMA path's; 0 for none).
size_t sfa_launch_workspace_size(int64_t batch, int64_t num_rows, int64_t list_cap);

/// Where the prologue's tables lie in the workspace, from its 256-byte aligned start: the per-row
/// fault flags (one byte per query row) and the fault word. sfa_fault_status reads them back.
struct SfaWsOffsets {
  size_t row_fault = 0, fault = 0;
};
SfaWsOffsets sfa_ws_offsets(int64_t batch, int64_t num_rows);

/// Which kernel sfa_launch queues (sfa_mma_geometry.hpp's choice, made on the host).
struct SfaLaunchPath {
  bool mma = false;
  int m_tiles = 1;  ///< MMA: 16-head tiles per CTA
};

/// Queues the prologue and the attention kernel on stream (a cudaStream_t). 0 on success, else the
/// cudaError_t of the failed launch.
int sfa_launch(const SfaDevProblem& p, const SfaDevData& d, void* workspace, void* stream,
               SfaLaunchPath path);

}  // namespace kvflash::cuda
