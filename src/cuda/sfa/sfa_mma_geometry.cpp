#include "cuda/sfa/sfa_mma_geometry.hpp"

#include <cstdint>

namespace kvflash::cuda {
namespace {

constexpr size_t align16(size_t n) { return (n + 15) / 16 * 16; }

}  // namespace

SfaMmaLayout sfa_mma_layout(int64_t num_heads, int m_tiles, bool v_is_k) {
  SfaMmaLayout l;
  l.m_tiles = m_tiles;
  l.heads = 16 * m_tiles;
  l.threads = 32 * kMmaDimWarps * m_tiles;
  l.ctas_per_row = static_cast<int>((num_heads + l.heads - 1) / l.heads);
  l.v_smem = !v_is_k;
  const size_t h = static_cast<size_t>(l.heads);
  size_t at = 0;
  const auto take = [&at](size_t bytes) {
    const size_t off = at;
    at = align16(at + bytes);
    return off;
  };
  l.k_stage = align16(sizeof(uint16_t) * kMmaTile * kMmaKStride);
  l.v_stage = l.v_smem ? align16(sizeof(uint16_t) * kMmaTile * kMmaVStride) : 0;
  l.q = take(sizeof(uint16_t) * h * kMmaKStride);
  l.k = take(l.k_stage * kMmaStages);
  l.v = take(l.v_stage * kMmaStages);
  l.p = take(sizeof(uint16_t) * h * kMmaPStride);
  l.s = take(sizeof(float) * h * kMmaSStride);
  l.state = take(sizeof(float) * h * 3);  // running max, running sum, this tile's rescale
  // Per stage: the gathered rows' element offsets in K, rope and V, and the tile's size.
  l.offs = take(sizeof(int64_t) * 3 * kMmaTile * kMmaStages);
  l.misc = take(64);
  l.bytes = at;
  return l;
}

int64_t sfa_position_list_cap(int64_t num_rows, int64_t sparse_size, int64_t sparse_block_size,
                              int64_t kv_extent) {
  if (kv_extent > INT32_MAX || num_rows <= 0 || sparse_size <= 0) return 0;
  const int64_t per = sparse_block_size < kv_extent ? sparse_block_size : kv_extent;
  if (per <= 0) return 1;  // nothing can be selected; keep one slot so the layout is uniform
  const int64_t cap = sparse_size * per;
  if (cap > kMaxListBytes / 4 / num_rows) return 0;
  return cap;
}

SfaPathChoice sfa_choose_path(const SfaPathQuery& q) {
  SfaPathChoice c;
  if (q.force_simt) {
    c.why = "forced (KVFLASH_SFA_CUDA_PATH=simt)";
    return c;
  }
  if (q.sm_major < 8) {
    c.why = "the device has no bf16 mma.sync (compute capability < 8.0)";
    return c;
  }
  if (!q.rows_aligned) {
    c.why = "K / rope / V rows are not contiguous and 16-byte aligned (cp.async)";
    return c;
  }
  if (q.list_cap <= 0) {
    c.why = "the selection's position list would be too large (sparse_size x sparse_block_size)";
    return c;
  }
  if (q.num_heads <= 0) {
    c.why = "no heads";
    return c;
  }
  int want = 1;
  while (want < 4 && 16 * want < q.num_heads) want *= 2;
  for (int m = want; m >= 1; m /= 2) {
    const SfaMmaLayout l = sfa_mma_layout(q.num_heads, m, q.v_is_k);
    if (l.bytes <= q.max_smem_optin) {
      c.path = SfaPath::kMma;
      c.layout = l;
      return c;
    }
  }
  c.why = "the tile does not fit the device's shared memory";
  return c;
}

bool sfa_rows_aligned(const void* base, int64_t s_dim, const int64_t* strides, int n_strides) {
  if (s_dim != 1 || reinterpret_cast<uintptr_t>(base) % 16 != 0) return false;
  for (int i = 0; i < n_strides; ++i) {
    if (strides[i] % 8 != 0) return false;
  }
  return true;
}

}  // namespace kvflash::cuda
