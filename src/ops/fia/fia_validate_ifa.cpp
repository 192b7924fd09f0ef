// D4: FIA's Q_S = 1 decode branch is IFA's semantics and runs IFA's kernels. The call becomes
// IncreFlashAttention's arguments (zero_fully_masked_rows: D2's row-invalid correction) and IFA's
// own validator plans it; what IFA's arguments cannot say is then set in the IFA problem from
// FIA's validated one (the extension fields of core::IfaParams):
//   - the output's and LSE's strides (any output layout: BNSD_NBSD, BNSD_BSND, TND_NTD, ...), the
//     LSE's shape (B, N, 1, 1) or (T, N, 1), and an empty row's LSE (+inf here, -inf in IFA);
//   - the learnable sink (D8);
//   - int8 K / V parameters combined or split, per tensor or per channel (FiaParams::k_dq /
//     v_dq), as fp32 tables the IFA workspace expands, or per token (antiquant mode 1), which
//     IFA's kernel applies per position (core::IfaParams::token_k / token_v);
//   - the decode requests of a TND / NTD call over a paged cache (vllm-ascend's decode step, and
//     the leading requests of one row each of a chunked-prefill batch, whose other requests then
//     run on the FIA kernel in the same call: a decode row gets the same bits in any batch):
//     their query rows as BSND (S = 1), and the visible band of sparse modes 0 / 2 / 3 / 4 for
//     that row as each request's attended range (kv_start, kv_len); rows past the last
//     cumulative length (graph padding) are written by the CPU entry.
// What stays on the FIA kernel's split-KV path, because IFA's kernels have no place for it: a
// shared prefix (a second K/V source), MLA rope (a second score term), a value head dim other than
// the key's, a TND call that reads a full mask or pse, a non-paged TND call (cumulative KV); and
// anything IFA's validator refuses (its own rules, e.g. an int8 paged cache's block size a multiple
// of 32). docs/conventions.md ("FIA's decode branch") lists the same.
#include <algorithm>
#include <limits>
#include <string>

#include "core/error.hpp"
#include "kvflash/ifa.hpp"
#include "ops/fia/fia_validate_parts.hpp"
#include "ops/ifa/ifa_validate.hpp"

namespace kvflash::fia {
namespace {

// FIA's TND decode requests: the leading requests of one row each (rows t = b), over a paged
// cache, with nothing read per (row, position) that IFA indexes otherwise (full mask, pse).
// Returns how many (vllm-ascend puts a step's decode requests first); 0 when none or not TND.
// Rows past the last cumulative length are padding, written by the CPU entry
// (cpu/fia/fia_entry.cpp) or, in a mixed call, by the FIA kernel.
int64_t tnd_decodes(const FiaArgs& a, const FiaShape& s, const core::FiaProblem& p) {
  if (!s.tnd || a.prompt || s.rope || !s.paged || p.params.has_mask || p.params.has_pse) return 0;
  int64_t k = 0;
  while (k < s.B && s.q_len[k] == 1 && s.q_first[k] == k) ++k;
  return k;
}

// FIA's dequantisation parameters as IFA's views: (0, n2, d) per tensor / channel, (b, j, 0) per
// token (core::IfaParams::token_k / token_v).
core::View3 dequant_view(const core::FiaDequant& q, bool offset) {
  core::View3 v;
  v.present = !offset || q.has_offset;
  v.dtype = q.dtype;
  if (q.mode == core::FiaDequant::Mode::kToken) {
    v.s0 = q.tok_batch, v.s1 = q.tok_pos;
    return v;
  }
  const bool channel = q.mode == core::FiaDequant::Mode::kChannel;
  v.s1 = channel ? q.chan_head : 0;
  v.s2 = channel ? 1 : 0;
  return v;
}

}  // namespace

Status plan_decode_on_ifa(const FiaArgs& a, const FiaShape& s, core::FiaProblem* p) {
  p->use_ifa = false;
  const core::FiaParams& fp = p->params;
  // TND: requests [0, K) are decode rows; with K < B the FIA kernel runs the others in the
  // same call (FiaProblem::ifa_requests).
  const int64_t K = tnd_decodes(a, s, *p);
  const bool tnd = K > 0;
  const bool expressible = (s.decode || tnd) && !a.key_shared_prefix && s.D == s.Dv;
  if (!expressible) return Status::kSuccess;
  IfaArgs i;
  std::string layout = s.in;
  i.query = a.query;
  if (tnd) {
    // (T, N, D) or (N, T, D) with T = B as BSND (B, 1, N, D), or as BNSD (B, N, 1, D) over a
    // BnNBsD cache (IFA pairs a 4-D cache with BNSD only).
    const int t_axis = s.in == "TND" ? 0 : 1, n_axis = 1 - t_axis;
    const TensorView& q = a.query;
    const int64_t st = q.strides[t_axis], sn = q.strides[n_axis], sd = q.strides[2];
    const bool bnsd = a.key[0].rank == 4;
    i.query.rank = 4;
    i.query.shape = bnsd ? decltype(q.shape){K, s.N, 1, s.D} : decltype(q.shape){K, 1, s.N, s.D};
    i.query.strides =
        bnsd ? decltype(q.strides){st, sn, st, sd} : decltype(q.strides){st, st, sn, sd};
    layout = bnsd ? "BNSD" : "BSND";
  }
  // A contiguous output of the query's shape stands for the real one, whose strides replace
  // IFA's below (IFA's validator reads no data).
  const TensorView& o = a.attention_out;
  i.attention_out = TensorView::contiguous(
      o.data, o.dtype, std::span<const int64_t>(i.query.shape.data(), i.query.rank));
  i.attention_out.device = o.device;
  i.key = a.key;
  i.value = a.value;
  i.pse_shift = a.pse_shift;
  if (fp.has_mask) i.atten_mask = a.atten_mask;    // modes 2-4's mask is never read
  i.actual_seq_lengths = a.actual_seq_lengths_kv;  // IFA's lengths are the KV lengths
  i.quant_scale2 = a.quant_scale2;
  i.quant_offset2 = a.quant_offset2;
  if (fp.kv_int8) {
    // A per-tensor stand-in passes IFA's antiquant checks; the real parameters (FIA's, already
    // validated) replace it below.
    const TensorView& sc = a.key_antiquant_scale ? *a.key_antiquant_scale : *a.antiquant_scale;
    i.antiquant_scale = TensorView::contiguous(sc.data, a.query.dtype, {2});
    i.antiquant_scale->device = sc.device;
  }
  i.block_table = a.block_table;
  if (tnd && K < s.B) {  // the first K requests' rows of the table and of the KV lengths
    i.block_table->shape[0] = K;
    i.actual_seq_lengths->resize(static_cast<size_t>(K));
  }
  if (p->kv_padding) i.kv_padding_size = a.kv_padding_size;
  i.num_heads = a.num_heads;
  i.scale_value = a.scale;
  i.input_layout = layout;
  i.num_key_value_heads = a.num_key_value_heads;
  i.block_size = a.block_size;
  i.inner_precise = a.inner_precise % 2;  // 2 / 3: D2's correction, which zero_fully_masked_rows is
  i.zero_fully_masked_rows = true;
  core::IfaProblem ifa;
  const Status st = ifa::validate_ifa(i, &ifa);
  if (st == Status::kRuntime) return st;  // out of memory: the plan fails
  if (st != Status::kSuccess) {
    core::clear_error();  // a refusal is not an error: the FIA kernel runs the call
    return Status::kSuccess;
  }
  // Output and LSE element strides of (b, h): TND rows are requests (t = b).
  ifa.out_s0 = tnd ? fp.o_row : p->o_batch;
  ifa.out_s1 = fp.o_head;
  ifa.out_s2 = 1;
  ifa.has_lse = fp.has_lse;
  ifa.lse_s0 = tnd ? fp.lse_row : p->lse_batch;
  ifa.lse_s1 = fp.lse_head;
  ifa.empty_lse = std::numeric_limits<float>::infinity();  // D5
  ifa.has_sink = fp.has_sink;
  ifa.sink_dtype = fp.sink_dtype;
  if (fp.kv_int8) {
    ifa.antiquant = core::AntiquantMode::kPerChannel;  // the kernel reads the expanded tables only
    ifa.split_antiquant = true;
    ifa.antiquant_scale = dequant_view(fp.k_dq, false);
    ifa.antiquant_offset = dequant_view(fp.k_dq, true);
    ifa.antiquant_scale_v = dequant_view(fp.v_dq, false);
    ifa.antiquant_offset_v = dequant_view(fp.v_dq, true);
    ifa.token_k = fp.k_dq.mode == core::FiaDequant::Mode::kToken;
    ifa.token_v = fp.v_dq.mode == core::FiaDequant::Mode::kToken;
  }
  if (tnd) {
    // Request b's one row sees positions [band_lo, band_hi] of [0, kv_len) (fia_band).
    ifa.kv_start.assign(K, 0);
    for (int64_t b = 0; b < K; ++b) {
      const core::FiaBatch& bt = p->batches[b];
      const int64_t lo = std::max<int64_t>(bt.band_lo, 0);
      const int64_t hi = std::min<int64_t>(bt.band_hi, bt.kv_len - 1);
      ifa.kv_start[b] = hi >= lo ? lo : 0;
      ifa.kv_len[b] = hi >= lo ? hi - lo + 1 : 0;
    }
  }
  p->ifa = std::move(ifa);
  p->use_ifa = true;
  p->ifa_requests = tnd ? K : s.B;
  // A mixed call: the FIA kernel skips the decode requests (no rows of its own).
  for (int64_t b = 0; tnd && K < s.B && b < K; ++b) p->batches[b].q_rows = 0;
  return Status::kSuccess;
}

}  // namespace kvflash::fia
