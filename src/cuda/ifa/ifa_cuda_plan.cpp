#include "cuda/ifa/ifa_cuda_plan.hpp"

#include <algorithm>
#include <string>

#include "core/view_check.hpp"
#include "cpu/ifa/ifa_workspace.hpp"
#include "ops/ifa/ifa_error.hpp"
#include "ops/ifa/ifa_fault.hpp"

namespace kvflash::cuda {
namespace {

// The CPU and CUDA backends split sequences at the same points (docs/gpu.md: results independent
// of the batch composition on either; equal split points also keep their roundings alike).
static_assert(kIfaCudaChunkLen == cpu::kIfaChunkLen);
static_assert(kIfaCudaMaxDimsPerThread * kIfaCudaThreads >= cpu::kIfaMaxHeadDim);

constexpr size_t kAlign = 256;
size_t up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

IfaCudaView view(const core::View3& v) {
  IfaCudaView c;
  c.present = v.present;
  c.dtype = static_cast<int32_t>(v.dtype);
  c.s0 = v.s0;
  c.s1 = v.s1;
  c.s2 = v.s2;
  return c;
}

int64_t total_chunks(const core::IfaProblem& p) {
  int64_t n = 0;
  for (int64_t b = 0; b < p.batch; ++b) n += ifa_cuda_num_chunks(p.kv_len[b]);
  return n;
}

const void* base(const std::optional<TensorView>& t, bool present) {
  return present ? core::element0(*t) : nullptr;
}

}  // namespace

IfaCudaProblem ifa_cuda_problem(const core::IfaProblem& p) {
  IfaCudaProblem c;
  c.batch = p.batch;
  c.num_heads = p.num_heads;
  c.num_kv_heads = p.num_kv_heads;
  c.group = p.group;
  c.head_dim = p.head_dim;
  c.q_dtype = static_cast<int32_t>(p.q_dtype);
  c.kv_dtype = static_cast<int32_t>(p.k.dtype);
  c.out_dtype = static_cast<int32_t>(p.out_dtype);
  c.scale = p.scale;
  c.q = view(p.q);
  c.out_s0 = p.out_s0;
  c.out_s1 = p.out_s1;
  c.out_s2 = p.out_s2;
  c.paged = p.k.paged;
  if (c.paged) {
    c.k_s_block = p.k.s_block;
    c.v_s_block = p.v.s_block;
    c.bt_s0 = p.block_table.s0;
    c.bt_s1 = p.block_table.s1;
    c.block_size = p.block_table.block_size;
    c.num_blocks = p.block_table.num_blocks;
  }
  c.left_padding = p.left_padding;
  c.kv_seq_len = p.kv_seq_len;
  c.mask = view(p.mask);
  c.mask_cols = p.mask_cols;
  c.pse = view(p.pse);
  c.antiquant = p.antiquant == core::AntiquantMode::kNone ? 0 : 1;
  c.antiquant_scale = view(p.antiquant_scale);
  c.antiquant_offset = view(p.antiquant_offset);
  c.quant_scale2 = view(p.quant_scale2);
  c.quant_offset2 = view(p.quant_offset2);
  c.has_lse = p.has_lse;
  c.lse_s0 = p.lse_s0;
  c.lse_s1 = p.lse_s1;
  c.zero_fully_masked_rows = p.zero_fully_masked_rows;
  c.total_chunks = total_chunks(p);
  return c;
}

IfaCudaLayout ifa_cuda_layout(const core::IfaProblem& p) {
  IfaCudaLayout l;
  const size_t batch = static_cast<size_t>(p.batch);
  size_t at = 0;
  l.fault = at;
  at = up(at + sizeof(IfaCudaFault));
  l.seqs = at;
  at = up(at + sizeof(IfaCudaSeq) * batch);
  l.kv_begin = at;
  at = up(at + sizeof(int64_t) * batch);
  l.state = at;
  at = up(at + sizeof(int32_t) * batch);
  l.bad_slot = at;
  at = up(at + sizeof(unsigned long long) * batch);
  l.slots = at;
  l.head_floats = (p.head_dim + 3) / 4 * 4 + kIfaCudaHeaderFloats;
  at += sizeof(float) * static_cast<size_t>(total_chunks(p) * p.num_kv_heads * p.group *
                                            l.head_floats);
  l.bytes = up(at) + kAlign;  // slack: any caller pointer is moved up to 256 bytes
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

void ifa_cuda_seq_entries(const core::IfaProblem& p, const IfaArgs& args, int64_t first,
                          int count, IfaCudaSeq* out) {
  const int64_t es = ifa_cuda_dtype_size(static_cast<int32_t>(p.k.dtype));
  int64_t chunk_first = 0;
  for (int64_t b = 0; b < first; ++b) chunk_first += ifa_cuda_num_chunks(p.kv_len[b]);
  for (int i = 0; i < count; ++i) {
    const int64_t b = first + i;
    IfaCudaSeq s;
    if (p.k.paged) {
      s.k_base = core::element0(args.key[0]);
      s.v_base = core::element0(args.value[0]);
      s.k_s_pos = p.k.s_pos;
      s.k_s_head = p.k.s_head;
      s.k_s_dim = p.k.s_dim;
      s.v_s_pos = p.v.s_pos;
      s.v_s_head = p.v.s_head;
      s.v_s_dim = p.v.s_dim;
    } else {
      const size_t t = p.k.list ? static_cast<size_t>(b) : 0;
      const core::KvCacheView::Seq& ks = p.k.seqs[b];
      const core::KvCacheView::Seq& vs = p.v.seqs[b];
      // Batch b's base: element 0 of its list tensor, or of the one tensor advanced b batches
      // (null only for empty tensors, which no attended position addresses).
      const auto at = [&](const TensorView& v, int64_t off) -> const void* {
        const void* b0 = core::element0(v);
        return b0 == nullptr ? nullptr : static_cast<const char*>(b0) + off * es;
      };
      s.k_base = at(args.key[t], p.k.list ? 0 : b * ks.s_batch);
      s.v_base = at(args.value[t], p.v.list ? 0 : b * vs.s_batch);
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

IfaCudaData ifa_cuda_data(const core::IfaProblem& p, const IfaArgs& a) {
  IfaCudaData d;
  d.q = core::element0(a.query);
  d.out = core::element0(a.attention_out);
  d.lse = p.has_lse ? static_cast<float*>(core::element0(*a.softmax_lse)) : nullptr;
  if (p.k.paged) d.block_table = static_cast<const int32_t*>(base(a.block_table, true));
  d.mask = base(a.atten_mask, p.mask.present);
  d.pse = base(a.pse_shift, p.pse.present);
  d.antiquant_scale = base(a.antiquant_scale, p.antiquant_scale.present);
  d.antiquant_offset = base(a.antiquant_offset, p.antiquant_offset.present);
  d.quant_scale2 = base(a.quant_scale2, p.quant_scale2.present);
  d.quant_offset2 = base(a.quant_offset2, p.quant_offset2.present);
  d.kv_padding_size = static_cast<const int64_t*>(base(a.kv_padding_size, p.left_padding));
  return d;
}

Status ifa_cuda_decode_fault(const IfaCudaFault& r) {
  if (r.kind == 0) return Status::kSuccess;
  ifa::IfaFault f;
  f.kind = static_cast<uint8_t>(r.kind);
  f.batch = r.batch;
  f.len = r.len;
  f.begin = r.begin;
  f.slot = r.slot;
  f.id = r.id;
  f.num_blocks = r.num_blocks;
  f.pad = r.pad;
  f.mask_cols = r.mask_cols;
  if (r.kind != core::kIfaBatchFaultBlockId && r.kind != core::kIfaBatchFaultMaskRange) {
    return core::fail(Status::kRuntime, ifa::kIfaOp,
                      "the CUDA run recorded an unknown fault kind " + std::to_string(r.kind));
  }
  return ifa::invalid(ifa::ifa_fault_message(f));
}

}  // namespace kvflash::cuda
