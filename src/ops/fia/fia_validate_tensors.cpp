// FIA / PFA validation, the tensors: the query (its layout, heads and head dim, the decode branch),
// key / value (one tensor in the query layout, a paged cache or a tensor list), rope and the shared
// prefix, and the outputs. Called by fia::validate (fia_validate.cpp).
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/checked_math.hpp"
#include "core/error.hpp"
#include "core/view_check.hpp"
#include "ops/fia/fia_validate_parts.hpp"

namespace kvflash::fia {
namespace {

using core::str;

bool is_fp16_or_bf16(DType t) { return t == DType::kFloat16 || t == DType::kBFloat16; }

}  // namespace

Status check_query(const FiaArgs& a, FiaShape* s) {
  const TensorView& q = a.query;
  if (!is_fp16_or_bf16(q.dtype) && !(a.fp32_inputs && q.dtype == DType::kFloat32))
    return invalid(std::string("query dtype must be fp16 or bf16") +
                   (a.fp32_inputs ? " or fp32" : "") + ", got " + dtype_name(q.dtype));
  const int want_rank = s->in == "BSH" || s->tnd ? 3 : 4;
  if (q.rank != want_rank)
    return invalid("query must be " + s->in + " (rank " + str(want_rank) + "), got " +
                   q.describe());
  const std::string& l = s->in;
  if (l == "BSH") {
    if (q.shape[2] % s->N != 0)
      return invalid("query's H (" + str(q.shape[2]) + ") must be a multiple of num_heads (" +
                     str(s->N) + ")");
    s->D = q.shape[2] / s->N;
  } else {
    s->D = q.shape[q.rank - 1];
  }
  const int64_t heads = l == "BSND"   ? q.shape[2]
                        : l == "BNSD" ? q.shape[1]
                        : l == "TND"  ? q.shape[1]
                        : l == "NTD"  ? q.shape[0]
                                      : s->N;
  if (heads != s->N)
    return invalid("query's N (" + str(heads) + ") must equal num_heads (" + str(s->N) + ")");
  if (s->D < 1 || s->D > kMaxHeadDim)
    return invalid("query's head dim D must be in [1, " + str(kMaxHeadDim) + "], got " + str(s->D));
  KVFLASH_RETURN_IF_ERROR(check_rows(q, "query"));
  if (s->tnd) {
    s->T = seq_dim(q, l);
  } else {
    s->B = q.shape[0], s->S1 = seq_dim(q, l);
  }
  s->rope = a.query_rope.has_value();
  s->decode = decode_branch(a, *s);
  return Status::kSuccess;
}

// Key / value: one tensor in the query layout, a paged cache, or B tensors.
Status check_kv(const FiaArgs& a, FiaShape* s) {
  if (a.key.empty()) return invalid("key must hold at least one tensor");
  if (a.value.size() != a.key.size())
    return invalid("value must hold as many tensors as key (" + str(a.key.size()) + "), got " +
                   str(a.value.size()));
  const TensorView& k = a.key[0];
  const TensorView& v = a.value[0];
  for (size_t i = 0; i < a.key.size(); ++i) {
    if (a.key[i].dtype != k.dtype || a.value[i].dtype != k.dtype)
      return invalid("key and value tensors must share one dtype (" +
                     std::string(dtype_name(k.dtype)) + "), entry " + str(i) + " differs");
  }
  if (k.dtype != a.query.dtype && k.dtype != DType::kInt8)
    return invalid(std::string("key dtype must be the query's (") + dtype_name(a.query.dtype) +
                   ") or int8, got " + dtype_name(k.dtype));
  s->paged = a.block_table.has_value();
  s->list = !s->paged && a.key.size() > 1;
  const int64_t KVN = s->KVN;
  if (s->paged) {
    if (a.key.size() != 1) return invalid("a paged cache (block_table) takes one key tensor");
    const TensorView& bt = *a.block_table;
    if (bt.dtype != DType::kInt32 || bt.rank != 2)
      return invalid("block_table must be int32 (B, max_blocks_per_seq), got " + bt.describe());
    if (bt.shape[1] > 1 && bt.strides[1] != 1)
      return invalid("block_table's rows must be contiguous (stride 1), got stride " +
                     str(bt.strides[1]));
    if (k.rank != 3 && k.rank != 4)
      return invalid(
          "a paged key must be BnBsH (blocks, block_size, KV_N*D) or BnNBsD (blocks, "
          "KV_N, block_size, D), got " +
          k.describe());
    if (v.rank != k.rank || v.shape[0] != k.shape[0])
      return invalid("value must be paged as key (" + k.describe() + "), got " + v.describe());
    if (a.block_size < 1)
      return invalid("block_size must be >= 1 with a block_table, got " + str(a.block_size));
    const int bs_axis = k.rank == 3 ? 1 : 2;
    for (const TensorView* t : {&k, &v}) {
      const char* name = t == &k ? "key" : "value";
      if (t->shape[bs_axis] != a.block_size)
        return invalid(std::string(name) + "'s block dim (" + str(t->shape[bs_axis]) +
                       ") must equal block_size (" + str(a.block_size) + ")");
      if (k.rank == 3 && t->shape[2] % KVN != 0)
        return invalid(std::string(name) + "'s last dim (" + str(t->shape[2]) +
                       ") must be KV_N * D with KV_N = " + str(KVN));
      if (k.rank == 4 && t->shape[1] != KVN)
        return invalid(std::string(name) + "'s KV_N (" + str(t->shape[1]) +
                       ") must equal num_key_value_heads (" + str(KVN) + ")");
      KVFLASH_RETURN_IF_ERROR(check_rows(*t, name));
    }
    const int64_t dk = k.rank == 3 ? k.shape[2] / KVN : k.shape[3];
    s->Dv = v.rank == 3 ? v.shape[2] / KVN : v.shape[3];
    if (dk != s->D)
      return invalid("key's head dim (" + str(dk) + ") must equal query's (" + str(s->D) + ")");
    const auto cap = core::checked_mul(bt.shape[1], a.block_size);
    if (!cap) return invalid("block_table columns * block_size overflows");
    s->capacity = *cap;
  } else {
    const std::string& l = s->in;
    // value's D from its own dims (their layout is checked below; rank 0 gives 0, refused).
    const int64_t dv_guess = l == "BSH"   ? (v.rank == 3 ? v.shape[2] / KVN : 0)
                             : v.rank > 0 ? v.shape[v.rank - 1]
                                          : 0;
    s->Dv = dv_guess;
    if (s->list) {
      if (s->tnd) return invalid("key / value tensor lists need a B/S layout, not " + l);
      if (static_cast<int64_t>(a.key.size()) != s->B)
        return invalid("key as a list must hold B (" + str(s->B) + ") tensors, got " +
                       str(a.key.size()));
    }
    for (size_t i = 0; i < a.key.size(); ++i) {
      const int64_t bdim = s->list ? 1 : s->B;
      const std::string kn = s->list ? "key[" + str(i) + "]" : "key";
      const std::string vn = s->list ? "value[" + str(i) + "]" : "value";
      KVFLASH_RETURN_IF_ERROR(expect_layout(a.key[i], kn.c_str(), l, bdim, -1, KVN, s->D));
      KVFLASH_RETURN_IF_ERROR(expect_layout(a.value[i], vn.c_str(), l, bdim, -1, KVN, s->Dv));
      if (seq_dim(a.value[i], l) != seq_dim(a.key[i], l))
        return invalid(vn + "'s S (" + str(seq_dim(a.value[i], l)) + ") must equal " + kn + "'s (" +
                       str(seq_dim(a.key[i], l)) + ")");
      if (s->list && i > 0 && (a.key[i].strides != k.strides || a.value[i].strides != v.strides))
        return invalid(kn + " / " + vn +
                       " must have the strides of key[0] / value[0] (a list's "
                       "tensors share one layout)");
    }
    s->S2 = seq_dim(k, l);
  }
  if (s->Dv < 16 || s->Dv > kMaxHeadDim || s->Dv % 16 != 0)
    return invalid("value's head dim (" + str(s->Dv) + ") must be a multiple of 16 in [16, " +
                   str(kMaxHeadDim) + "] (the CPU kernel's rows)");
  return Status::kSuccess;
}

Status check_rope_prefix(const FiaArgs& a, FiaShape* s) {
  if (a.query_rope.has_value() != a.key_rope.has_value())
    return invalid("query_rope and key_rope must be given together (MLA)");
  if (s->rope) {
    const TensorView& qr = *a.query_rope;
    const TensorView& kr = *a.key_rope;
    s->Dr = s->in == "BSH" ? (qr.rank == 3 ? qr.shape[2] / s->N : 0)
            : qr.rank > 0  ? qr.shape[qr.rank - 1]
                           : 0;
    if (s->Dr != kRopeDim)
      return invalid("query_rope's head dim must be " + str(kRopeDim) + ", got " + qr.describe());
    if (qr.dtype != a.query.dtype || kr.dtype != a.query.dtype)
      return invalid("query_rope and key_rope must have the query's dtype");
    KVFLASH_RETURN_IF_ERROR(expect_layout(qr, "query_rope", s->in, s->tnd ? -1 : s->B,
                                          s->tnd ? s->T : s->S1, s->N, s->Dr));
    if (s->paged) {
      const TensorView& k = a.key[0];
      const bool ok = kr.rank == k.rank && kr.shape[0] == k.shape[0] &&
                      (k.rank == 3 ? kr.shape[1] == k.shape[1] && kr.shape[2] == s->KVN * s->Dr
                                   : kr.shape[1] == k.shape[1] && kr.shape[2] == k.shape[2] &&
                                         kr.shape[3] == s->Dr);
      if (!ok) return invalid("key_rope must be paged as key with D = 64, got " + kr.describe());
      KVFLASH_RETURN_IF_ERROR(check_rows(kr, "key_rope"));
    } else {
      if (s->list) return invalid("key_rope needs a single key tensor, not a list");
      KVFLASH_RETURN_IF_ERROR(
          expect_layout(kr, "key_rope", s->in, s->tnd ? -1 : s->B, s->S2, s->KVN, s->Dr));
    }
  }
  if (a.key_shared_prefix.has_value() != a.value_shared_prefix.has_value())
    return invalid("key_shared_prefix and value_shared_prefix must be given together");
  if (!a.key_shared_prefix) {
    if (a.actual_shared_prefix_len && !a.actual_shared_prefix_len->empty())
      return invalid("actual_shared_prefix_len needs key_shared_prefix");
    return Status::kSuccess;
  }
  if (s->tnd) return invalid("key_shared_prefix needs a BSH / BSND / BNSD layout");
  if (s->rope) return invalid("key_shared_prefix with query_rope (MLA) is not defined upstream");
  const TensorView& kp = *a.key_shared_prefix;
  const TensorView& vp = *a.value_shared_prefix;
  if (kp.dtype != a.key[0].dtype || vp.dtype != a.key[0].dtype)
    return invalid("key_shared_prefix / value_shared_prefix must have the key's dtype");
  KVFLASH_RETURN_IF_ERROR(expect_layout(kp, "key_shared_prefix", s->in, 1, -1, s->KVN, s->D));
  KVFLASH_RETURN_IF_ERROR(
      expect_layout(vp, "value_shared_prefix", s->in, 1, seq_dim(kp, s->in), s->KVN, s->Dv));
  const int64_t cap = seq_dim(kp, s->in);
  s->P = cap;
  if (a.actual_shared_prefix_len && !a.actual_shared_prefix_len->empty()) {
    const auto& l = *a.actual_shared_prefix_len;
    if (l.size() != 1)
      return invalid("actual_shared_prefix_len must have one entry, got " + str(l.size()));
    if (l[0] < 0 || l[0] > cap)
      return invalid("actual_shared_prefix_len[0] (" + str(l[0]) + ") must be in [0, " + str(cap) +
                     "]");
    s->P = l[0];
  }
  return Status::kSuccess;
}

Status check_outputs(const FiaArgs& a, const FiaShape& s) {
  const TensorView& o = a.attention_out;
  const int64_t N = s.N, Dv = s.Dv, B = s.B, S1 = s.S1, T = s.T;
  std::vector<int64_t> want;
  const std::string& l = s.out;
  if (l == "BSH") want = {B, S1, N * Dv};
  if (l == "BSND") want = {B, S1, N, Dv};
  if (l == "BNSD") want = {B, N, S1, Dv};
  if (l == "NBSD") want = {N, B, S1, Dv};
  if (l == "TND") want = {T, N, Dv};
  if (l == "NTD") want = {N, T, Dv};
  const bool int8 = o.dtype == DType::kInt8;
  if (o.dtype != a.query.dtype && !int8 && o.dtype != DType::kFloat32)
    return invalid(std::string("attention_out dtype must be the query's (") +
                   dtype_name(a.query.dtype) + "), int8 (with quant_scale2) or fp32, got " +
                   dtype_name(o.dtype));
  if (int8 != a.quant_scale2.has_value())
    return invalid(int8 ? "an int8 attention_out requires quant_scale2"
                        : "quant_scale2 requires an int8 attention_out");
  const bool ok = o.rank == static_cast<int>(want.size()) &&
                  std::equal(want.begin(), want.end(), o.shape.begin());
  if (!ok)
    return invalid("attention_out must be " + l + " " + core::dims_str(want) + ", got " +
                   o.describe());
  if (!o.is_contiguous()) return invalid("attention_out must be contiguous");
  const std::vector<int64_t> lw =
      s.tnd ? std::vector<int64_t>{T, N, 1} : std::vector<int64_t>{B, N, S1, 1};
  if (a.softmax_max.has_value() != a.softmax_sum.has_value())
    return invalid(a.softmax_max ? "softmax_sum is required with softmax_max"
                                 : "softmax_max is required with softmax_sum");
  if (a.softmax_max) {
    std::vector<int64_t> mw = lw;
    mw.back() = core::kFiaMaxSumWidth;
    for (const auto& [t, name] : {std::pair{&*a.softmax_max, "softmax_max"},
                                  std::pair{&*a.softmax_sum, "softmax_sum"}}) {
      if (t->dtype != DType::kFloat32 || t->rank != static_cast<int>(mw.size()) ||
          !std::equal(mw.begin(), mw.end(), t->shape.begin()))
        return invalid(std::string(name) + " must be fp32 " + core::dims_str(mw) + ", got " +
                       t->describe());
      if (!t->is_contiguous()) return invalid(std::string(name) + " must be contiguous");
    }
  }
  if (!a.softmax_lse_flag) return Status::kSuccess;
  if (!a.softmax_lse) return invalid("softmax_lse_flag is true but softmax_lse is absent");
  const TensorView& lse = *a.softmax_lse;
  if (lse.dtype != DType::kFloat32 || lse.rank != static_cast<int>(lw.size()) ||
      !std::equal(lw.begin(), lw.end(), lse.shape.begin()))
    return invalid("softmax_lse must be fp32 " + core::dims_str(lw) + ", got " + lse.describe());
  if (!lse.is_contiguous()) return invalid("softmax_lse must be contiguous");
  return Status::kSuccess;
}

}  // namespace kvflash::fia
