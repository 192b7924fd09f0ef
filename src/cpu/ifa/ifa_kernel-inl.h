// The IFA kernel body, written once against the thin vector type. No include guard on purpose:
// each ifa_kernel_<isa>.cpp includes it inside its own namespace (kvflash::cpu::<isa>) after
// simd_<isa>.h, simd_math-inl.h and softmax_state.h, with <cstring>,
// ops/ifa/ifa_problem.hpp and cpu/ifa/ifa_workspace.hpp included before the namespace. A unit
// that defines KVFLASH_IFA_TILES also gets the matrix-engine half (ifa_tiles-inl.h, which needs
// <cassert> and cpu/amx/amx_kernels.hpp before the namespace): ifa_chunk_on<TileEngine<...>>.
//
// Per chunk task: the G query heads of kv head n2 are processed together, so each K and V row is
// read from memory once; a task covers one chunk for a few adjacent kv heads, tile by tile and
// within a tile position-major across its kv heads, so its reads stream through one region of
// memory. Contiguous rows of dp channels are widened in registers straight from the cache (bf16
// K with a bf16 query: AVX512-BF16 dot products where the CPU has them); strided or padded rows
// are first widened into a small fp32 buffer padded with zeros to dp. int8 rows stay raw
// integers: the antiquant scale and offset are folded into the query, a per-head score bias and
// the final accumulator (fp32, so rounding differs slightly from dequantising each element);
// per-token parameters (core::IfaParams::token_k / token_v) scale each score and each weight
// instead (KvHeadWork::fold).
// Scores follow docs/semantics.md §2.5: s = fl32(q·k * scale), + pse, then mask replacement by
// kMaskedScore. Only positions in [begin, end) of the chunk are ever addressed (prefetches
// included).
//
// The body is in parts, one job each, included below in the order they build on each other (each
// uses only what the ones before it define). Like this file they have no include guard: every
// part is compiled once per ISA, inside the including unit's namespace, with its flags.
//   ifa_inputs-inl.h         K/V row addresses (contiguous, strided, paged), widening, prefetch,
//                            query and parameter loads;
//   ifa_score_kernels-inl.h  the QK micro-kernels (fp32 register blocks, AVX512-BF16 dots);
//   ifa_pv_kernels-inl.h     the P·V micro-kernels;
//   ifa_kv_head_work-inl.h   one kv head's share of a task (KvHeadWork): setup, scores, the
//                            scale / pse / mask and softmax fold, P·V, the slot header;
//   ifa_chunk_task-inl.h     a chunk task's tile loop over its kv heads (chunk_impl), on the vector
//                            micro-kernels or the matrix engine (ifa_tiles-inl.h);
//   ifa_row_writes-inl.h     output and LSE rows, fault rows;
//   ifa_chunk_merge-inl.h    the fixed-order merge of a sequence's chunks (merge_impl).
// The entry points the kernel tables hold (ifa_chunk_on, ifa_chunk, ifa_merge) close this file.
//
// Everything here calls only functions of its own ISA namespace or non-inline library functions:
// an inline function from a shared header, compiled with this translation unit's ISA flags, could
// be the copy the linker keeps for plain-x86-64 callers (hence min_i64 instead of std::min).

namespace ifa_detail {
using core::IfaData;
using core::IfaProblem;
}  // namespace ifa_detail

// The order matters (see above).
// clang-format off
#include "cpu/ifa/ifa_inputs-inl.h"
#include "cpu/ifa/ifa_score_kernels-inl.h"
#include "cpu/ifa/ifa_pv_kernels-inl.h"
#include "cpu/ifa/ifa_kv_head_work-inl.h"
#include "cpu/ifa/ifa_chunk_task-inl.h"
#include "cpu/ifa/ifa_row_writes-inl.h"
#include "cpu/ifa/ifa_chunk_merge-inl.h"
// clang-format on

// Chunk task `task` on Engine (ifa_detail::NoTiles: the vector type; the matrix engine:
// ifa_tiles-inl.h).
template <class Engine>
void ifa_chunk_on(const core::IfaProblem& p, const core::IfaData& d, const IfaLayout& layout,
                  const IfaSchedule& schedule, std::byte* base, int64_t task) {
  using ifa_detail::KvKind;
  const IfaChunkTask t = ifa_chunk_task(p, d, layout, schedule, base, task);
  // A batch that is empty or whose device data was bad is never read (its merge writes it).
  if (d.batch_state[t.b] == core::kIfaBatchRun) {
    const typename Engine::Scope scope(p.group);
    switch (p.k.dtype) {
      case DType::kInt8:
        ifa_detail::chunk_impl<KvKind::kInt8, Engine>(p, d, layout, base, t);
        break;
      case DType::kBFloat16:
        ifa_detail::chunk_impl<KvKind::kBf16, Engine>(p, d, layout, base, t);
        break;
      default:
        ifa_detail::chunk_impl<KvKind::kFp16, Engine>(p, d, layout, base, t);
        break;
    }
  }
  // A sequence of one chunk is merged by its only chunk task, right after it (ifa_merged_by_chunk):
  // the same merge of the same slot, so the same bits, without a second pass over the pool.
  if (ifa_merged_by_chunk(p, t.b)) {
    for (int64_t n2 = t.n2_begin; n2 < t.n2_end; ++n2) {
      ifa_detail::merge_impl(p, d, layout, base, t.b * p.num_kv_heads + n2);
    }
  }
}

void ifa_chunk(const core::IfaProblem& p, const core::IfaData& d, const IfaLayout& layout,
               const IfaSchedule& schedule, std::byte* base, int64_t task) {
  ifa_chunk_on<ifa_detail::NoTiles>(p, d, layout, schedule, base, task);
}

void ifa_merge(const core::IfaProblem& p, const core::IfaData& d, const IfaLayout& layout,
               std::byte* base, int64_t task) {
  ifa_detail::merge_impl(p, d, layout, base, task);
}
