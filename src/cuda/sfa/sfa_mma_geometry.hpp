// The tensor-core SFA path's launch geometry and shared-memory layout, and the choice between it
// and the SIMT fallback. Plain C++ (no CUDA header, no kvflash header), so the kernel, the host
// adaptor and a CPU unit test (tests/cuda_sfa_geometry_test.cpp) use the same numbers.
//
// One CTA = one query row and a block of 16 * m_tiles heads (m_tiles = 1, 2 or 4: 16, 32 or 64
// heads; 128 heads run as two CTAs of 64 per row). It has 4 warps per m-tile: warp (mi, di) owns
// heads [16 mi, 16 mi + 16) and
//   - in S = Q K^T: the tile's key columns [8 di, 8 di + 8) over d = 0..575 (36 mma k-steps);
//   - in O += P V: output dims [128 di, 128 di + 128) (16 mma n-tiles, 64 fp32 registers).
// Tiles of kMmaTile gathered positions are staged kMmaStages deep (cp.async); V has its own stage
// buffers only when it does not alias K (in DeepSeek-V3.2's MLA it does: V = the 512 latent dims).
#pragma once

#include <cstddef>
#include <cstdint>

namespace kvflash::cuda {

constexpr int kMmaTile = 32;    // positions per gathered tile (4 warps x 8 key columns)
constexpr int kMmaStages = 2;   // cp.async pipeline depth (tile i + 1 loads while i computes)
constexpr int kMmaDimWarps = 4;  // warps per m-tile: 512 output dims / 128
constexpr int kMmaQk = 576, kMmaNope = 512, kMmaRope = 64;
// Row strides in 16-bit elements, padded by 8 so that the 8 rows an mma fragment (or ldmatrix)
// touches fall in distinct 16-byte bank groups, and every row starts 16-byte aligned (cp.async).
constexpr int kMmaKStride = kMmaQk + 8;    // 584: Q and gathered K rows
constexpr int kMmaVStride = kMmaNope + 8;  // 520: gathered V rows (when V is separate)
constexpr int kMmaPStride = kMmaTile + 8;  // 40: P rows (16-bit)
constexpr int kMmaSStride = kMmaTile + 1;  // 33: fp32 score rows

/// Which kernel runs a problem.
enum class SfaPath { kMma, kSimt };

/// Byte offsets of the MMA kernel's dynamic shared memory (each 16-byte aligned) and its size.
struct SfaMmaLayout {
  int m_tiles = 0;       ///< 16-head m-tiles per CTA
  int heads = 0;         ///< heads per CTA (16 * m_tiles)
  int threads = 0;       ///< 32 * kMmaDimWarps * m_tiles
  int ctas_per_row = 0;  ///< ceil(num_heads / heads)
  bool v_smem = false;   ///< V staged separately (V does not alias K)
  size_t q = 0, k = 0, v = 0, p = 0, s = 0, state = 0, offs = 0, misc = 0, bytes = 0;
  size_t k_stage = 0, v_stage = 0;  ///< bytes of one stage
};

/// The layout for num_heads heads (> 0) with m_tiles 16-head tiles per CTA.
SfaMmaLayout sfa_mma_layout(int64_t num_heads, int m_tiles, bool v_is_k);

/// Entries per query row of the MMA path's position list (the row's selection expanded in gather
/// order by a prologue kernel, docs/semantics.md §3.4; duplicates counted): sparse_size x
/// min(sparse_block_size, kv_extent), kv_extent the most KV tokens a batch can have (BSND S2, TND
/// T2, PA_BSND block_table columns x block_size). 0 when the list would pass kMaxListBytes in all
/// or a position might not fit an int32: the SIMT kernel (which expands the selection as it goes)
/// runs those.
int64_t sfa_position_list_cap(int64_t num_rows, int64_t sparse_size, int64_t sparse_block_size,
                              int64_t kv_extent);
constexpr int64_t kMaxListBytes = int64_t{1} << 30;

/// What decides the path (all known on the host at run time, nothing read from the device).
struct SfaPathQuery {
  int64_t num_heads = 0;
  bool v_is_k = true;
  /// The gathered K / rope / V rows are contiguous (s_dim == 1), 16-byte aligned at every
  /// position (base pointer and every stride a multiple of 8 elements): cp.async can copy them.
  bool rows_aligned = false;
  int sm_major = 0;                ///< compute capability of the device (mma.sync bf16 needs 8.0)
  size_t max_smem_optin = 0;       ///< cudaDevAttrMaxSharedMemoryPerBlockOptin
  bool force_simt = false;         ///< KVFLASH_SFA_CUDA_PATH=simt (tests, A/B benchmarks)
  int64_t list_cap = 1;            ///< sfa_position_list_cap (0: no position list)
};

struct SfaPathChoice {
  SfaPath path = SfaPath::kSimt;
  SfaMmaLayout layout;  ///< valid when path == kMma
  const char* why = "";  ///< why the SIMT kernel was chosen (empty for kMma)
};

/// The MMA path whenever it can run: sm >= 8.0, aligned rows (else the SIMT kernel, which reads
/// any strides), and a layout that fits the shared memory (the largest m_tiles <= 4 that fits and
/// does not exceed the heads). Every dtype the operator accepts (fp16, bf16 in; fp16/bf16/fp32
/// out) is covered by both paths.
SfaPathChoice sfa_choose_path(const SfaPathQuery& q);

/// Whether a 16-bit tensor's rows at base + i * stride (i any index, in elements) are all 16-byte
/// aligned and contiguous.
bool sfa_rows_aligned(const void* base, int64_t s_dim, const int64_t* strides, int n_strides);

}  // namespace kvflash::cuda
