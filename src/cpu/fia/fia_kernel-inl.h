// The FIA / PFA prefill kernel body (see fia_kernel.hpp), compiled once per ISA: included inside
// kvflash::cpu::<isa> after simd_<isa>.h, simd_math-inl.h and softmax_state.h (no include guard
// on purpose).
//
// Matrix-engine seam. The bf16 path's two products (fia_qk_bf16_tile, fia_pv_bf16_tile) run on
// the matrix engine when the translation unit defines KVFLASH_FIA_TILES (the AMX level:
// fia_tiles-inl.h, FiaTiles) and the task's shape suits the tiles. Without pse or mask, the key
// tile's band and online-softmax fold go with the products, 16 rows at a time (FiaTiles::
// whole_tile, fold_tile), with the same operations per row as fia_task_body's, so the same bits;
// staging, packing, the other tiles' softmax and the output stay the vector code.
//
// The body is in parts, one job each, included below in the order they build on each other (each
// uses only what the ones before it define). Like this file they have no include guard: every
// part is compiled once per ISA, inside the including unit's namespace, with its flags.
//   fia_fp32_kernels-inl.h        the fp32 QK and P·V register blocks (every level);
//   fia_bf16_score_kernels-inl.h  the AVX512-BF16 QK blocks and the key packing;
//   fia_bf16_pv_kernels-inl.h     the AVX512-BF16 P·V blocks, P's rounding, the value packing;
//   fia_inputs-inl.h              dtype loads and widening, prefetch, K/V row addresses, int8
//                                 dequantisation;
//   fia_task_shape-inl.h          a problem's score path, a key tile's band (FiaBand);
//   fia_tiles-inl.h               the matrix-engine half (units that define KVFLASH_FIA_TILES);
//   fia_task_buffers-inl.h        packed key tiles (the packing pass), the scratch sizes;
//   fia_row_writes-inl.h          a finished row's output, LSE and max / sum (fia_finish_row);
//   fia_task_body-inl.h           one task (fia_task_body, fia_task_tiles);
//   fia_merge-inl.h               the split-KV merge (fia_merge), the padding rows (fia_pad_rows).

#include "cpu/fia/fia_fp32_kernels-inl.h"
#include "cpu/fia/fia_bf16_score_kernels-inl.h"
#include "cpu/fia/fia_bf16_pv_kernels-inl.h"
#include "cpu/fia/fia_inputs-inl.h"
#include "cpu/fia/fia_task_shape-inl.h"
#ifdef KVFLASH_FIA_TILES
#include "cpu/fia/fia_tiles-inl.h"
#endif
#include "cpu/fia/fia_task_buffers-inl.h"
#include "cpu/fia/fia_row_writes-inl.h"
#include "cpu/fia/fia_task_body-inl.h"
#include "cpu/fia/fia_merge-inl.h"
