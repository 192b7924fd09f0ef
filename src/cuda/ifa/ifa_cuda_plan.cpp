#include "cuda/ifa/ifa_cuda_plan.hpp"

#include <algorithm>

#include "core/workspace_arena.hpp"
#include "ops/ifa/ifa_bind.hpp"
#include "ops/ifa/ifa_fault.hpp"
#include "ops/ifa/ifa_limits.hpp"

namespace kvflash::cuda {
namespace {

// Every backend splits sequences at the same points (core::kIfaChunkLen, docs/gpu.md: results
// independent of the batch composition on either; equal split points also keep their roundings
// alike).
static_assert(kIfaCudaChunkLen == core::kIfaChunkLen);
static_assert(kIfaCudaMaxDimsPerThread * kIfaCudaThreads >= core::kIfaMaxHeadDim);

int64_t total_chunks(const core::IfaProblem& p) {
  int64_t n = 0;
  for (int64_t b = 0; b < p.batch; ++b) n += ifa_cuda_num_chunks(p.kv_len[b]);
  return n;
}

}  // namespace

int64_t ifa_cuda_total_chunks(const core::IfaProblem& p) { return total_chunks(p); }

IfaCudaLayout ifa_cuda_layout(const core::IfaProblem& p) {
  IfaCudaLayout l;
  const size_t batch = static_cast<size_t>(p.batch);
  core::WorkspaceArena arena(kIfaCudaWorkspaceAlign);
  l.fault = core::take_fault_record(arena);
  l.seqs = arena.take_array<IfaCudaSeq>(batch);
  l.kv_begin = arena.take_array<int64_t>(batch);
  l.state = arena.take_array<int32_t>(batch);
  l.bad_slot = arena.take_array<unsigned long long>(batch);
  l.head_floats = (p.head_dim + 3) / 4 * 4 + kIfaCudaHeaderFloats;
  l.slots = arena.take_array<float>(
      static_cast<size_t>(total_chunks(p) * p.num_kv_heads * p.group * l.head_floats));
  l.bytes = arena.bytes();
  return l;
}

IfaCudaGeometry ifa_cuda_geometry(const core::IfaProblem& p) {
  IfaCudaGeometry g;
  const int max_heads = p.head_dim > 256 ? kIfaCudaMaxHeadsWide : kIfaCudaMaxHeads;
  g.heads_per_cta = static_cast<int>(std::clamp<int64_t>(p.group, 1, max_heads));
  g.head_blocks = static_cast<int>((p.group + g.heads_per_cta - 1) / g.heads_per_cta);
  g.chunk_ctas = total_chunks(p) * p.num_kv_heads;
  g.merge_ctas = p.batch * p.num_heads;
  g.uploads = static_cast<int>((p.batch + kIfaCudaSeqsPerUpload - 1) / kIfaCudaSeqsPerUpload);
  // 16 bytes of padding per row: lanes reading 16-byte pieces of consecutive rows then hit
  // distinct banks (row pitch = 4 words mod 32).
  const int64_t es = ifa_cuda_dtype_size(static_cast<int32_t>(p.k.dtype));
  g.row_bytes = (p.head_dim * es + 15) / 16 * 16 + 16;
  g.smem_bytes = ifa_cuda_smem(g.heads_per_cta, p.head_dim, g.row_bytes,
                               p.k.dtype == DType::kInt8)
                     .bytes;
  return g;
}

size_t ifa_cuda_workspace_size(const core::IfaProblem& p) { return ifa_cuda_layout(p).bytes; }

void ifa_cuda_seq_entries(const core::IfaProblem& p, const core::IfaData& d, int64_t first,
                          int count, IfaCudaSeq* out) {
  int64_t chunk_first = 0;
  for (int64_t b = 0; b < first; ++b) chunk_first += ifa_cuda_num_chunks(p.kv_len[b]);
  for (int i = 0; i < count; ++i) {
    const int64_t b = first + i;
    IfaCudaSeq s;
    if (p.k.paged) {
      s.k_base = d.k_cache;
      s.v_base = d.v_cache;
      s.k_s_pos = p.k.s_pos;
      s.k_s_head = p.k.s_head;
      s.k_s_dim = p.k.s_dim;
      s.v_s_pos = p.v.s_pos;
      s.v_s_head = p.v.s_head;
      s.v_s_dim = p.v.s_dim;
    } else {
      const core::KvCacheView::Seq& ks = p.k_seqs[b];
      const core::KvCacheView::Seq& vs = p.v_seqs[b];
      s.k_base = ifa::kv_batch_base(p.k, ks, d.k_cache, d.k_list, b);
      s.v_base = ifa::kv_batch_base(p.v, vs, d.v_cache, d.v_list, b);
      s.k_s_pos = ks.s_pos;
      s.k_s_head = ks.s_head;
      s.k_s_dim = ks.s_dim;
      s.v_s_pos = vs.s_pos;
      s.v_s_head = vs.s_head;
      s.v_s_dim = vs.s_dim;
    }
    s.kv_len = p.kv_len[b];
    s.chunk_first = chunk_first;
    chunk_first += ifa_cuda_num_chunks(s.kv_len);
    out[i] = s;
  }
}

bool ifa_cuda_supports(const core::IfaProblem& p, const char** why) {
  const char* missing = p.has_sink                               ? "a learnable sink"
                        : p.split_antiquant                      ? "split key / value antiquant"
                        : p.token_k || p.token_v                 ? "per-token antiquant"
                        : !p.kv_start.empty()                    ? "a sliding-window start"
                        : p.empty_lse != -__builtin_inff()       ? "FIA's empty-row LSE (+inf)"
                                                                 : nullptr;
  if (missing != nullptr && why != nullptr) *why = missing;
  return missing == nullptr;
}

Status ifa_cuda_decode_fault(const core::IfaProblem& /*p*/, const core::FaultRecord& r) {
  return ifa::ifa_fault_status(r);
}

}  // namespace kvflash::cuda
