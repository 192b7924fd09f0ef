// FIA's decode front end (D4): a decode call FIA has validated becomes the decode description
// (core::IfaProblem, the one IFA's validator fills) that the decode kernels run, from FIA's own
// normalised shape and problem, with nothing validated twice. It fills what IFA's arguments say
// the same way IFA's validator does (query, K / V and block-table views, lengths, left padding,
// mask, pse, post-quant), and what only FIA has:
//   - the output's and LSE's strides (any output layout: BNSD_NBSD, BNSD_BSND, TND_NTD, ...), the
//     LSE of (B, N, 1, 1) or (T, N, 1), and an empty row's LSE (+inf here, -inf in IFA);
//   - the learnable sink (D8);
//   - int8 K / V parameters combined or split, per tensor or per channel (FiaParams::k_dq /
//     v_dq), as fp32 tables the IFA workspace expands, or per token (antiquant mode 1), which the
//     decode kernels apply per position (core::IfaParams::token_k / token_v);
//   - the decode requests of a TND / NTD call over a paged cache (vllm-ascend's decode step, and
//     the leading requests of one row each of a chunked-prefill batch, whose other requests then
//     run on the prefill kernel in the same call: a decode row gets the same bits in any batch):
//     their query rows as BSND (S = 1), and the visible band of sparse modes 0 / 2 / 3 / 4 for
//     that row as each request's attended range (kv_start, kv_len); rows past the last cumulative
//     length (graph padding) are written by the CPU entry.
// Which decode calls the decode kernels take is decode_route below, written once; the others run
// on the prefill kernels' split-KV path. docs/conventions.md ("FIA's decode branch") lists the
// same.
#include <algorithm>
#include <limits>
#include <string>

#include "core/checked_math.hpp"
#include "core/view_check.hpp"
#include "ops/fia/fia_validate_parts.hpp"
#include "ops/ifa/ifa_limits.hpp"
#include "ops/ifa/ifa_validate.hpp"

namespace kvflash::fia {
namespace {

// FIA's TND decode requests: the leading requests of one row each (rows t = b), over a paged
// cache, with nothing read per (row, position) that the decode kernels index otherwise (full
// mask, pse). Returns how many (vllm-ascend puts a step's decode requests first); 0 when none or
// not TND. Rows past the last cumulative length are padding, written by the CPU entry
// (cpu/fia/fia_entry.cpp) or, in a mixed call, by the prefill kernel.
int64_t tnd_decodes(const FiaArgs& a, const FiaShape& s, const core::FiaProblem& p) {
  if (!s.tnd || a.prompt || s.rope || !s.paged || p.params.has_mask || p.params.has_pse) return 0;
  int64_t k = 0;
  while (k < s.B && s.q_len[k] == 1 && s.q_first[k] == k) ++k;
  return k;
}

bool lengths_given(const std::optional<std::vector<int64_t>>& l) { return l && !l->empty(); }

// The query rows of the decode requests as a (B, 1, N, D) BSND view, or (B, N, 1, D) BNSD over a
// BnNBsD cache (a TND call's first `requests` rows); a B/S query as it is.
TensorView decode_query(const FiaArgs& a, const FiaShape& s, int64_t requests, bool tnd) {
  if (!tnd) return a.query;
  const int t_axis = s.in == "TND" ? 0 : 1, n_axis = 1 - t_axis;
  TensorView q = a.query;
  const int64_t st = q.strides[t_axis], sn = q.strides[n_axis], sd = q.strides[2];
  const bool bnsd = a.key[0].rank == 4;
  q.rank = 4;
  q.shape = bnsd ? decltype(q.shape){requests, s.N, 1, s.D} : decltype(q.shape){requests, 1, s.N, s.D};
  q.strides = bnsd ? decltype(q.strides){st, sn, st, sd} : decltype(q.strides){st, st, sn, sd};
  return core::canonical_strides(q);
}

// The decode route, written once: why the decode kernels do not take a decode call of `nb`
// requests (the decode branch, or a TND call's one-row requests), or null when they do. What the
// decode description has no place for (a shared prefix, a value head dim other than the key's),
// its limits (ops/ifa/ifa_limits.hpp), and the rules IncreFlashAttention's arguments add (a pse of
// the query's dtype, IFA's post-quant parameters), which keep such a call where it ran before the
// front end existed.
const char* decode_route(const FiaArgs& a, const FiaShape& s, const TensorView& q, int64_t nb) {
  if (a.key_shared_prefix) return "a shared prefix";
  if (a.softmax_max) return "the softmax max / sum outputs (the decode kernels write no such)";
  if (a.query.dtype == DType::kFloat32) return "fp32 inputs";
  if (s.D != s.Dv) return "a value head dim other than the key's";
  if (nb < 1) return "an empty batch";
  if (s.N > core::kIfaMaxHeads) return "num_heads above the decode kernels' limit";
  if (s.N / s.KVN > core::kIfaMaxGroup) return "a group above the decode kernels' limit";
  if (nb > core::kIfaMaxBatch) return "a batch above the decode kernels' limit";
  const TensorView& k = a.key[0];
  const bool bsh = s.in == "BSH" && !s.tnd;
  if (bsh && !core::checked_mul(s.D, q.strides[2])) return "a query stride overflow";
  if (s.list && nb > core::kIfaMaxListBatch) return "a tensor list above the decode kernels' limit";
  if (!s.paged && bsh && !core::checked_mul(s.D, k.strides[2])) return "a key stride overflow";
  if (s.paged) {
    const TensorView& bt = *a.block_table;
    const int64_t align =
        k.dtype == DType::kInt8 ? core::kIfaBlockAlignInt8 : core::kIfaBlockAlignFloat;
    if (a.block_size > core::kIfaMaxBlockSize || a.block_size % align != 0)
      return "a block size the decode kernels do not take";
    if (k.rank == 3 && (s.KVN * s.D > core::kIfaMaxPagedHidden ||
                        !core::checked_mul(s.D, k.strides[2])))
      return "a 3-D cache's hidden size above the decode kernels' limit";
    if (k.rank == 4 && !s.tnd && s.in != "BNSD") return "a BnNBsD cache with a BSH / BSND query";
    // IFA's rule: B rows (a mixed TND call's decode requests read the table's first rows).
    if (bt.shape[0] != nb && !(s.tnd && nb < s.B)) return "a block table of other than B rows";
    if (bt.shape[1] == 0) return "an empty block table";
    if (!lengths_given(a.actual_seq_lengths_kv)) return "a paged cache without KV lengths";
    // No "sum_b ceil(len_b / block_size) blocks" rule here (IFA's validator has it unless
    // IfaArgs::blocks_may_repeat): requests that share blocks (prefix caching) are FIA's normal
    // case and the decode kernels read any block id the table names (each checked at run time).
  }
  if (a.pse_shift && a.pse_shift->dtype != a.query.dtype) return "a pse of another dtype";
  if (a.quant_scale2) {
    const TensorView& sc = *a.quant_scale2;
    if (sc.dtype != DType::kFloat32 &&
        !(sc.dtype == DType::kBFloat16 && a.query.dtype == DType::kBFloat16))
      return "a quant_scale2 dtype IFA's post-quant does not take";
    core::View3 v;
    if (sc.numel() != 1 && !ifa::quant2_channel_view(sc, s.N, s.D, &v))
      return "a quant_scale2 shape IFA's post-quant does not take";
  }
  std::optional<int64_t> work = 0;  // IFA's size bound: sum_b kv_len * N * D
  for (int64_t b = 0; b < nb && work; ++b) {
    const auto row = core::checked_mul(s.kv_len[b], s.N * s.D);
    work = row ? core::checked_add(*work, *row) : std::nullopt;
  }
  if (!work) return "KV lengths past the decode kernels' size bound";
  return nullptr;
}

// (b, h, d) of a B/S view in layout l ("BSH" heads of D): (s0, s1, s2) of the description.
core::View3 bhd_view(const TensorView& t, const std::string& l, int64_t D) {
  core::View3 v;
  v.present = true;
  v.dtype = t.dtype;
  v.s0 = t.strides[0];
  v.s1 = l == "BSH" ? D * t.strides[2] : l == "BNSD" ? t.strides[1] : t.strides[2];
  v.s2 = t.strides[t.rank - 1];
  return v;
}

// K or V as the description's cache view: paged (BnBsH / BnNBsD) or per batch (seq).
void kv_view(const FiaArgs& a, const FiaShape& s, const std::vector<TensorView>& t, int64_t nb,
             core::KvCacheView* kv, std::vector<core::KvCacheView::Seq>* seqs) {
  const TensorView& t0 = t[0];
  kv->dtype = t0.dtype;
  if (s.paged) {
    kv->paged = true;
    kv->s_block = t0.strides[0];
    if (t0.rank == 3) {
      kv->s_pos = t0.strides[1], kv->s_dim = t0.strides[2], kv->s_head = s.D * t0.strides[2];
    } else {
      kv->s_head = t0.strides[1], kv->s_pos = t0.strides[2], kv->s_dim = t0.strides[3];
    }
    return;
  }
  kv->list = s.list;
  seqs->resize(static_cast<size_t>(nb));
  for (int64_t b = 0; b < nb; ++b) {
    const TensorView& x = t[s.list ? b : 0];
    core::KvCacheView::Seq& q = (*seqs)[b];
    const core::View3 v = bhd_view(x, s.in, s.D);  // (batch, head, d); the position's stride:
    q.s_batch = s.list ? 0 : v.s0;
    q.s_head = v.s1, q.s_dim = v.s2;
    q.s_pos = s.in == "BNSD" ? x.strides[2] : x.strides[1];
  }
}

// FIA's dequantisation parameters as the description's views: (0, n2, d) per tensor / channel,
// (b, j, 0) per token (core::IfaParams::token_k / token_v).
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

Status plan_decode(const FiaArgs& a, const FiaShape& s, core::FiaProblem* p) {
  p->use_ifa = false;
  const core::FiaParams& fp = p->params;
  // TND: requests [0, K) are decode rows; with K < B the prefill kernel runs the others in the
  // same call (FiaProblem::ifa_requests).
  const int64_t K = tnd_decodes(a, s, *p);
  const bool tnd = K > 0;
  if (!s.decode && !tnd) return Status::kSuccess;
  const int64_t nb = tnd ? K : s.B;
  const TensorView q = decode_query(a, s, nb, tnd);
  if (decode_route(a, s, q, nb) != nullptr) return Status::kSuccess;

  core::IfaProblem& d = p->ifa;
  d = core::IfaProblem{};
  d.device = a.query.device;
  d.batch = nb, d.num_heads = s.N, d.num_kv_heads = s.KVN, d.group = s.N / s.KVN;
  d.head_dim = s.D;
  d.q_dtype = a.query.dtype, d.out_dtype = a.attention_out.dtype;
  d.scale = static_cast<float>(a.scale);
  d.q = bhd_view(q, tnd ? (q.shape[1] == 1 ? "BSND" : "BNSD") : s.in, s.D);
  // Output and LSE element strides of (b, h): TND rows are requests (t = b).
  d.out_s0 = tnd ? fp.o_row : p->o_batch, d.out_s1 = fp.o_head, d.out_s2 = 1;
  d.has_lse = fp.has_lse;
  d.lse_s0 = tnd ? fp.lse_row : p->lse_batch, d.lse_s1 = fp.lse_head;
  d.empty_lse = std::numeric_limits<float>::infinity();  // D5
  d.zero_fully_masked_rows = true;  // D2's row-invalid correction
  d.has_sink = fp.has_sink, d.sink_dtype = fp.sink_dtype;

  kv_view(a, s, a.key, nb, &d.k, &d.k_seqs);
  kv_view(a, s, a.value, nb, &d.v, &d.v_seqs);
  if (s.paged) {
    TensorView bt = *a.block_table;
    bt.shape[0] = nb;  // a mixed call's decode requests: the table's first rows
    bt = core::canonical_strides(bt);
    d.block_table = {bt.strides[0], bt.strides[1], bt.shape[1], a.block_size, a.key[0].shape[0]};
  } else {
    d.kv_seq_len = s.in == "BNSD" ? a.key[0].shape[2] : a.key[0].shape[1];  // key[0]'s S
    d.left_padding = p->kv_padding;
  }
  d.kv_len.assign(s.kv_len.begin(), s.kv_len.begin() + nb);
  if (tnd) {
    // Request b's one row sees positions [band_lo, band_hi] of [0, kv_len) (fia_band).
    d.kv_start.assign(K, 0);
    for (int64_t b = 0; b < K; ++b) {
      const core::FiaBatch& bt = p->batches[b];
      const int64_t lo = std::max<int64_t>(bt.band_lo, 0);
      const int64_t hi = std::min<int64_t>(bt.band_hi, bt.kv_len - 1);
      d.kv_start[b] = hi >= lo ? lo : 0;
      d.kv_len[b] = hi >= lo ? hi - lo + 1 : 0;
    }
  }

  if (fp.has_mask && a.atten_mask->numel() > 0) {  // D4: (B|1, S), (B|1, 1, S), (B|1, 1, 1, S)
    const TensorView& m = *a.atten_mask;
    d.mask = {true, m.dtype, m.shape[0] == 1 ? 0 : m.strides[0], 0, m.strides[m.rank - 1]};
    d.mask_cols = m.shape[m.rank - 1];
  }
  if (fp.has_pse) {
    const TensorView& t = *a.pse_shift;
    d.pse = {true, t.dtype, t.shape[0] == 1 ? 0 : t.strides[0], t.strides[1], t.strides[3]};
  }
  if (fp.kv_int8) {
    d.antiquant = core::AntiquantMode::kPerChannel;  // the kernels read the expanded tables only
    d.split_antiquant = true;
    d.antiquant_scale = dequant_view(fp.k_dq, false);
    d.antiquant_offset = dequant_view(fp.k_dq, true);
    d.antiquant_scale_v = dequant_view(fp.v_dq, false);
    d.antiquant_offset_v = dequant_view(fp.v_dq, true);
    d.token_k = fp.k_dq.mode == core::FiaDequant::Mode::kToken;
    d.token_v = fp.v_dq.mode == core::FiaDequant::Mode::kToken;
  }
  // (0, h, d): per tensor, or IFA's per-channel shapes (decode_route).
  for (const auto* t : {&a.quant_scale2, &a.quant_offset2}) {
    if (!*t) continue;
    core::View3& v = t == &a.quant_scale2 ? d.quant_scale2 : d.quant_offset2;
    v.present = true, v.dtype = (*t)->dtype;
    if ((*t)->numel() != 1) ifa::quant2_channel_view(**t, s.N, s.D, &v);
  }

  p->use_ifa = true;
  p->ifa_requests = nb;
  // A mixed call: the prefill kernel skips the decode requests (no rows of its own).
  for (int64_t b = 0; tnd && K < s.B && b < K; ++b) p->batches[b].q_rows = 0;
  return Status::kSuccess;
}

}  // namespace kvflash::fia
