// FIA / PFA validation, main part: views and devices, what decision D1 refuses, the attributes,
// query, key / value (contiguous, paged, list), the host lengths (D6), rope and shared prefix,
// the outputs; then the optional parts (fia_validate_extras.cpp) and the problem. The rules and
// the messages are listed in docs/conventions.md ("FusedInferAttentionScore").
#include "ops/fia/fia_validate.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/checked_math.hpp"
#include "core/error.hpp"
#include "core/view_check.hpp"
#include "ops/fia/fia_fields.hpp"
#include "ops/fia/fia_validate_parts.hpp"

namespace kvflash::fia {

Status invalid(const std::string& msg) { return core::fail(Status::kInvalid, kOpName, msg); }
Status refused(const std::string& feature) {
  return invalid(feature + " is not supported by kvflash (docs/fia-pfa-indexer.md, D1)");
}

FiaStrides layout_strides(const TensorView& t, const std::string& l, int64_t D) {
  if (l == "BSH") return {t.strides[0], t.strides[1], D * t.strides[2]};
  if (l == "BSND") return {t.strides[0], t.strides[1], t.strides[2]};
  if (l == "BNSD") return {t.strides[0], t.strides[2], t.strides[1]};
  if (l == "NBSD") return {t.strides[1], t.strides[2], t.strides[0]};
  if (l == "TND") return {0, t.strides[0], t.strides[1]};
  return {0, t.strides[1], t.strides[0]};  // NTD
}

namespace {

using core::str;

constexpr int64_t kMaxHeadDim = 512;
constexpr int64_t kRopeDim = 64;
constexpr int64_t kMaxHeads = 1024;  // far above upstream's 256; keeps N x D products small
// The finest key tiling the size bound (check_size) counts in: the CPU prefill kernel's
// (cpu::kFiaKeyTile).
constexpr int64_t kSizeTile = 64;

bool is_fp16_or_bf16(DType t) { return t == DType::kFloat16 || t == DType::kBFloat16; }

// The (in, out) layouts of input_layout (D1), or false.
bool parse_layout(const std::string& l, std::string* in, std::string* out) {
  static const char* const kSame[] = {"BSH", "BSND", "BNSD", "TND", "NTD"};
  for (const char* x : kSame)
    if (l == x) return *in = x, *out = x, true;
  struct Pair {
    const char *name, *in, *out;
  };
  static const Pair kPairs[] = {{"BNSD_BSND", "BNSD", "BSND"}, {"BSH_NBSD", "BSH", "NBSD"},
                                {"BSND_NBSD", "BSND", "NBSD"}, {"BNSD_NBSD", "BNSD", "NBSD"},
                                {"TND_NTD", "TND", "NTD"},     {"NTD_TND", "NTD", "TND"}};
  for (const Pair& p : kPairs)
    if (l == p.name) return *in = p.in, *out = p.out, true;
  return false;
}

// d (the last dim) must be contiguous: the kernel reads rows of D elements.
Status check_rows(const TensorView& v, const char* name) {
  if (v.rank > 0 && v.shape[v.rank - 1] > 1 && v.strides[v.rank - 1] != 1)
    return invalid(std::string(name) + "'s last dim must have stride 1, got " +
                   str(v.strides[v.rank - 1]));
  return Status::kSuccess;
}

// Dims of a tensor in the query layout `l` with `n` heads of `d` (batch b, sequence s).
Status expect_layout(const TensorView& v, const char* name, const std::string& l, int64_t b,
                     int64_t s, int64_t n, int64_t d) {
  std::vector<int64_t> want;
  if (l == "BSH") want = {b, s, n * d};
  if (l == "BSND") want = {b, s, n, d};
  if (l == "BNSD") want = {b, n, s, d};
  if (l == "TND") want = {s, n, d};
  if (l == "NTD") want = {n, s, d};
  bool ok = v.rank == static_cast<int>(want.size());
  for (size_t i = 0; ok && i < want.size(); ++i) ok = want[i] < 0 || v.shape[i] == want[i];
  if (ok) return check_rows(v, name);
  std::string w = "[";
  for (size_t i = 0; i < want.size(); ++i)
    w += (i ? "," : "") + (want[i] < 0 ? std::string("*") : str(want[i]));
  return invalid(std::string(name) + " must be " + l + " " + w + "], got " + v.describe());
}

// S of a tensor in layout l (T for TND / NTD).
int64_t seq_dim(const TensorView& v, const std::string& l) {
  if (l == "BNSD" || l == "NTD") return v.shape[l == "NTD" ? 1 : 2];
  if (l == "TND") return v.shape[0];
  return v.shape[1];
}

// Per-batch lengths (D6) of a non-cumulative list: absent -> cap, length 1 broadcasts, >= B the
// first B; every value in [0, cap(b)].
template <class Cap>
Status per_batch(const std::optional<std::vector<int64_t>>& l, const char* name, int64_t B, Cap cap,
                 std::vector<int64_t>* out) {
  out->assign(B, 0);
  const bool given = l && !l->empty();
  if (given && l->size() != 1 && static_cast<int64_t>(l->size()) < B)
    return invalid(std::string(name) + " must have 1 or at least B (" + str(B) + ") entries, got " +
                   str(static_cast<int64_t>(l->size())));
  for (int64_t b = 0; b < B; ++b) {
    const int64_t x = given ? (*l)[l->size() == 1 ? 0 : b] : cap(b);
    if (x < 0 || x > cap(b))
      return invalid(std::string(name) + "[" + str(b) + "] (" + str(x) + ") must be in [0, " +
                     str(cap(b)) + "]");
    (*out)[b] = x;
  }
  return Status::kSuccess;
}

// Cumulative lengths (TND, D6): B entries, non-decreasing from >= 0, the last <= limit.
Status cumulative(const std::optional<std::vector<int64_t>>& l, const char* name, int64_t limit,
                  const char* limit_name, std::vector<int64_t>* len, std::vector<int64_t>* first) {
  if (!l || l->empty())
    return invalid(std::string(name) + " is required with a TND / NTD layout (cumulative lengths)");
  int64_t prev = 0;
  len->clear(), first->clear();
  for (size_t b = 0; b < l->size(); ++b) {
    const int64_t x = (*l)[b];
    if (x < prev)
      return invalid(std::string(name) +
                     " must be non-decreasing cumulative lengths from >= 0; "
                     "entry " +
                     str(static_cast<int64_t>(b)) + " (" + str(x) + ") < " + str(prev));
    if (x > limit)
      return invalid(std::string(name) + "[" + str(static_cast<int64_t>(b)) + "] (" + str(x) +
                     ") exceeds " + limit_name + " (" + str(limit) + ")");
    first->push_back(prev), len->push_back(x - prev);
    prev = x;
  }
  return Status::kSuccess;
}

// ---- D1's refusals: named features, before anything else about them ----
Status check_refused(const FiaArgs& a) {
  if (a.dequant_scale1) return refused("dequant_scale1 (full int8 quantisation)");
  if (a.quant_scale1) return refused("quant_scale1 (full int8 quantisation)");
  if (a.dequant_scale2) return refused("dequant_scale2 (full int8 quantisation)");
  if (a.dequant_scale_query) return refused("dequant_scale_query (int8 query)");
  if (a.key_rope_antiquant_scale) return refused("key_rope_antiquant_scale (int8 key rope)");
  if (a.query_quant_mode != 0)
    return refused("query_quant_mode " + str(a.query_quant_mode) + " (int8 query)");
  if (a.query.dtype == DType::kInt8) return refused("an int8 query (full int8 quantisation)");
  for (const auto* list : {&a.key, &a.value})
    for (const TensorView& t : *list)
      if (t.dtype == DType::kInt32) return refused("int4-in-int32 key / value");
  if (a.block_table && !a.key.empty() && a.key[0].rank == 5)
    return refused("a 5-D (NZ) paged cache");
  if (a.sparse_mode == 9) return refused("sparse_mode 9 (tree mask)");
  if (a.sparse_mode >= 5 && a.sparse_mode <= 8)
    return refused("sparse_mode " + str(a.sparse_mode) + " (unsupported upstream too)");
  const int64_t modes[] = {a.antiquant_mode, a.key_antiquant_mode, a.value_antiquant_mode};
  const char* names[] = {"antiquant_mode", "key_antiquant_mode", "value_antiquant_mode"};
  for (int i = 0; i < 3; ++i)
    if (modes[i] >= 2 && modes[i] <= 6) return refused(std::string(names[i]) + " " + str(modes[i]));
  // V5's additions (docs/api.md, "FusedInferAttentionScore V5"): a position encoding generated in
  // the operator (pseType 2/3 of FlashAttentionScore, where the start indices place a chunk of a
  // split sequence) is not FIA's; the V5 document allows pseType 0 only.
  for (const auto* idx : {&a.q_start_idx, &a.kv_start_idx})
    if (*idx && !(*idx)->empty())
      return invalid(std::string(idx == &a.q_start_idx ? "q_start_idx" : "kv_start_idx") +
                     " is not supported: it places a split sequence's chunk for a position "
                     "encoding generated in the operator, which FusedInferAttentionScore does not "
                     "have (pse_type 0 only); pass it absent or empty");
  if (a.pse_type != 0)
    return invalid("pse_type must be 0 (pse_shift given, added after scaling), got " +
                   str(a.pse_type) + ": the other types are not supported for inference");
  return Status::kSuccess;
}

Status check_attributes(const FiaArgs& a, FiaShape* s) {
  if (a.num_heads < 1) return invalid("num_heads must be >= 1, got " + str(a.num_heads));
  if (a.num_heads > kMaxHeads)
    return invalid("num_heads must be <= " + str(kMaxHeads) + ", got " + str(a.num_heads));
  if (a.num_key_value_heads < 0)
    return invalid("num_key_value_heads must be >= 0 (0 = num_heads), got " +
                   str(a.num_key_value_heads));
  s->N = a.num_heads;
  s->KVN = a.num_key_value_heads == 0 ? a.num_heads : a.num_key_value_heads;
  if (s->N % s->KVN != 0)
    return invalid("num_heads (" + str(s->N) + ") must be a multiple of num_key_value_heads (" +
                   str(s->KVN) + ")");
  if (a.sparse_mode < 0 || a.sparse_mode > 4)
    return invalid("sparse_mode must be in [0, 4], got " + str(a.sparse_mode));
  if (a.inner_precise < 0 || a.inner_precise > 3)
    return invalid("inner_precise must be in [0, 3], got " + str(a.inner_precise));
  const int64_t modes[] = {a.antiquant_mode, a.key_antiquant_mode, a.value_antiquant_mode};
  const char* names[] = {"antiquant_mode", "key_antiquant_mode", "value_antiquant_mode"};
  for (int i = 0; i < 3; ++i)
    if (modes[i] < 0 || modes[i] > 1)
      return invalid(std::string(names[i]) + " must be 0 or 1, got " + str(modes[i]));
  if (!parse_layout(a.input_layout, &s->in, &s->out))
    return invalid("input_layout \"" + a.input_layout +
                   "\" is not supported: expected BSH, BSND, BNSD, TND, NTD, BNSD_BSND, BSH_NBSD, "
                   "BSND_NBSD, BNSD_NBSD, TND_NTD or NTD_TND");
  s->tnd = s->in == "TND" || s->in == "NTD";
  return Status::kSuccess;
}

Status check_query(const FiaArgs& a, FiaShape* s) {
  const TensorView& q = a.query;
  if (!is_fp16_or_bf16(q.dtype))
    return invalid(std::string("query dtype must be fp16 or bf16, got ") + dtype_name(q.dtype));
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

Status check_lengths(const FiaArgs& a, FiaShape* s) {
  if (s->tnd) {
    KVFLASH_RETURN_IF_ERROR(cumulative(a.actual_seq_lengths, "actual_seq_lengths", s->T, "query T",
                                       &s->q_len, &s->q_first));
    s->B = static_cast<int64_t>(s->q_len.size());
    if (s->paged) {
      s->kv_first.assign(s->B, 0);
      KVFLASH_RETURN_IF_ERROR(per_batch(
          a.actual_seq_lengths_kv, "actual_seq_lengths_kv", s->B,
          [&](int64_t) { return s->capacity; }, &s->kv_len));
    } else {
      KVFLASH_RETURN_IF_ERROR(cumulative(a.actual_seq_lengths_kv, "actual_seq_lengths_kv", s->S2,
                                         "key T", &s->kv_len, &s->kv_first));
      if (static_cast<int64_t>(s->kv_len.size()) != s->B)
        return invalid("actual_seq_lengths_kv must have as many entries as actual_seq_lengths (" +
                       str(s->B) + "), got " + str(s->kv_len.size()));
    }
  } else {
    s->q_first.assign(s->B, 0), s->kv_first.assign(s->B, 0);
    if (s->decode) {
      s->q_len.assign(s->B, 1);  // D4: the query lengths are ignored
    } else {
      KVFLASH_RETURN_IF_ERROR(per_batch(
          a.actual_seq_lengths, "actual_seq_lengths", s->B, [&](int64_t) { return s->S1; },
          &s->q_len));
    }
    KVFLASH_RETURN_IF_ERROR(per_batch(
        a.actual_seq_lengths_kv, "actual_seq_lengths_kv", s->B,
        [&](int64_t b) {
          return s->paged ? s->capacity : s->list ? seq_dim(a.key[b], s->in) : s->S2;
        },
        &s->kv_len));
  }
  for (int64_t b = 0; b < s->B; ++b) {
    s->max_q = std::max(s->max_q, s->q_len[b]);
    s->max_kv = std::max(s->max_kv, s->kv_len[b]);
  }
  for (const auto* pad : {&a.query_padding_size, &a.kv_padding_size}) {
    if (!*pad) continue;
    const char* name = pad == &a.query_padding_size ? "query_padding_size" : "kv_padding_size";
    if ((*pad)->dtype != DType::kInt64 || (*pad)->numel() != 1)
      return invalid(std::string(name) + " must be int64 with one element, got " +
                     (*pad)->describe());
  }
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
  if (!a.softmax_lse_flag) return Status::kSuccess;
  if (!a.softmax_lse) return invalid("softmax_lse_flag is true but softmax_lse is absent");
  const TensorView& lse = *a.softmax_lse;
  const std::vector<int64_t> lw =
      s.tnd ? std::vector<int64_t>{T, N, 1} : std::vector<int64_t>{B, N, S1, 1};
  if (lse.dtype != DType::kFloat32 || lse.rank != static_cast<int>(lw.size()) ||
      !std::equal(lw.begin(), lw.end(), lse.shape.begin()))
    return invalid("softmax_lse must be fp32 " + core::dims_str(lw) + ", got " + lse.describe());
  if (!lse.is_contiguous()) return invalid("softmax_lse must be contiguous");
  return Status::kSuccess;
}

// Sizes the workspace derives from (tasks, split slots, per-row state) are bounded before
// anything is sized: sum_b rows_b * N * (key tiles_b + 1) * (Dv + 64) floats must fit 2^62 bytes.
Status check_size(const FiaShape& s) {
  int64_t total = 0;
  for (int64_t b = 0; b < s.B; ++b) {
    const int64_t tiles = (s.P + s.kv_len[b]) / kSizeTile + 2;
    auto x = core::checked_mul(std::max<int64_t>(s.q_len[b], 1), s.N);
    if (x) x = core::checked_mul(*x, tiles);
    if (x) x = core::checked_mul(*x, (s.Dv + 64) * 4);
    if (x) x = core::checked_add(total, *x);
    if (!x || *x > (int64_t{1} << 62))
      return invalid("the problem is too large: batch " + str(b) + "'s " + str(s.q_len[b]) +
                     " query rows over " + str(s.P + s.kv_len[b]) +
                     " positions (actual_seq_lengths, actual_seq_lengths_kv, key sizes) overflow "
                     "the workspace's size");
    total = *x;
  }
  return Status::kSuccess;
}

void fill_problem(const FiaArgs& a, const FiaShape& s, int64_t mask_batch, int64_t pse_batch,
                  core::FiaProblem* pr) {
  core::FiaParams& p = pr->params;
  pr->device = a.query.device;
  pr->tnd = s.tnd, pr->decode = s.decode, pr->list = s.list;
  pr->rows = s.tnd ? s.T : s.B * s.S1;
  pr->s1 = s.S1;
  pr->sparse_mode = a.sparse_mode;
  const int64_t lim = core::kFiaUnbounded;
  pr->pre = std::clamp(a.pre_tokens, -lim, lim), pr->next = std::clamp(a.next_tokens, -lim, lim);
  pr->band_mask = a.sparse_mode == 0 && a.atten_mask.has_value();
  p.batch = s.B, p.num_heads = s.N, p.num_kv_heads = s.KVN;
  p.head_dim = s.D, p.rope_dim = s.Dr, p.value_dim = s.Dv;
  p.dtype = a.query.dtype, p.out_dtype = a.attention_out.dtype;
  p.scale = static_cast<float>(a.scale);
  const FiaStrides qs = layout_strides(a.query, s.in, s.D);
  const FiaStrides os = layout_strides(a.attention_out, s.out, s.Dv);
  FiaStrides rs, ls, ks, vs, krs;
  if (s.rope) rs = layout_strides(*a.query_rope, s.in, s.Dr);
  p.q_row = qs.row, p.q_head = qs.head, p.o_row = os.row, p.o_head = os.head;
  p.qr_row = rs.row, p.qr_head = rs.head;
  pr->o_batch = os.batch;
  if (a.softmax_lse_flag) {
    const TensorView& l = *a.softmax_lse;
    ls = s.tnd ? FiaStrides{0, l.strides[0], l.strides[1]}
               : FiaStrides{l.strides[0], l.strides[2], l.strides[1]};
    p.has_lse = true, p.lse_row = ls.row, p.lse_head = ls.head;
    pr->lse_batch = ls.batch;
  }
  const TensorView& k = a.key[0];
  const TensorView& v = a.value[0];
  p.paged = s.paged;
  if (s.paged) {
    auto paged = [](const TensorView& t, int64_t Dd, int64_t* pos, int64_t* head, int64_t* blk) {
      *blk = t.strides[0];
      if (t.rank == 3) {
        *pos = t.strides[1], *head = Dd * t.strides[2];
      } else {
        *pos = t.strides[2], *head = t.strides[1];
      }
    };
    paged(k, s.D, &p.k_pos, &p.k_head, &p.k_block);
    paged(v, s.Dv, &p.v_pos, &p.v_head, &p.v_block);
    if (s.rope) paged(*a.key_rope, s.Dr, &p.kr_pos, &p.kr_head, &p.kr_block);
    p.block_size = a.block_size;
    pr->num_blocks = k.shape[0];
  } else {
    ks = layout_strides(k, s.in, s.D);
    vs = layout_strides(v, s.in, s.Dv);
    if (s.rope) krs = layout_strides(*a.key_rope, s.in, s.Dr);
    p.k_pos = ks.row, p.k_head = ks.head, p.v_pos = vs.row, p.v_head = vs.head;
    p.kr_pos = krs.row, p.kr_head = krs.head;
    if (s.list) ks.batch = vs.batch = 0;  // batch b is tensor b
  }
  if (a.key_shared_prefix) {
    const FiaStrides kps = layout_strides(*a.key_shared_prefix, s.in, s.D);
    const FiaStrides vps = layout_strides(*a.value_shared_prefix, s.in, s.Dv);
    p.prefix_len = s.P, p.kp_pos = kps.row, p.kp_head = kps.head;
    p.vp_pos = vps.row, p.vp_head = vps.head;
  }
  if (a.learnable_sink) p.has_sink = true, p.sink_dtype = a.learnable_sink->dtype;
  // Left padding applies only with the matching lengths (IFA's rule; docs/fia-semantics.md).
  pr->q_padding = a.query_padding_size && !s.tnd && !s.decode && a.actual_seq_lengths &&
                  !a.actual_seq_lengths->empty();
  pr->kv_padding = a.kv_padding_size && !s.tnd && !s.paged && !s.list && a.actual_seq_lengths_kv &&
                   !a.actual_seq_lengths_kv->empty();
  pr->q_capacity = s.S1, pr->kv_capacity = s.S2;
  pr->tnd_rows_used = s.tnd && s.B > 0 ? s.q_first[s.B - 1] + s.q_len[s.B - 1] : 0;
  pr->batches.assign(s.B, core::FiaBatch{});
  for (int64_t b = 0; b < s.B; ++b) {
    core::FiaBatch& bt = pr->batches[b];
    bt.q_rows = s.q_len[b];
    bt.kv_len = s.P + s.kv_len[b];
    const int64_t qf = s.q_first[b], kf = s.kv_first[b];
    bt.q_offset = b * qs.batch + qf * qs.row;
    bt.qr_offset = b * rs.batch + qf * rs.row;
    bt.out_offset = b * os.batch + qf * os.row;
    bt.lse_offset = b * ls.batch + qf * ls.row;
    if (s.paged) {
      bt.k_offset = b * a.block_table->strides[0];
    } else {
      bt.k_offset = b * ks.batch + kf * ks.row;
      bt.v_offset = b * vs.batch + kf * vs.row;
      bt.kr_offset = b * krs.batch + kf * krs.row;
    }
    core::fia_band(*pr, bt.q_rows, bt.kv_len, &bt.band_lo, &bt.band_hi);
    bt.mask_offset = b * mask_batch;
    bt.pse_offset = b * pse_batch;
    bt.tok_first = s.paged ? 0 : kf;
  }
}

}  // namespace

Status validate(const FiaArgs& user_args, core::FiaProblem* pr) {
  const FiaArgs a = core::with_canonical_strides(kFields, user_args);
  if (a.query.data == nullptr && a.query.numel() != 0)
    return core::fail(Status::kNullPtr, kOpName, "query is null");
  if (a.attention_out.data == nullptr && a.attention_out.numel() != 0)
    return core::fail(Status::kNullPtr, kOpName, "attention_out is null");
  KVFLASH_RETURN_IF_ERROR(core::for_each_view(kFields, a, [&](const TensorView& v, const char* n) {
    if (std::string_view(n) == "softmax_lse" && !a.softmax_lse_flag) return Status::kSuccess;
    int64_t numel = 0;
    if (const Status st = core::check_view(kOpName, v, n, &numel); st != Status::kSuccess)
      return st;
    if (v.device != a.query.device)
      return invalid(std::string(n) + " is on " + device_name(v.device) + " but query is on " +
                     device_name(a.query.device) +
                     ": every tensor of a call must be on one device");
    return Status::kSuccess;
  }));
  KVFLASH_RETURN_IF_ERROR(check_refused(a));
  FiaShape s;
  KVFLASH_RETURN_IF_ERROR(check_attributes(a, &s));
  KVFLASH_RETURN_IF_ERROR(check_query(a, &s));
  if (s.decode && a.inner_precise > 1)
    return invalid("inner_precise must be 0 or 1 with a query length of 1, got " +
                   str(a.inner_precise));
  KVFLASH_RETURN_IF_ERROR(check_kv(a, &s));
  // The outputs first: being contiguous, they bound B x S1 (or T) before anything per batch or
  // per row is sized.
  KVFLASH_RETURN_IF_ERROR(check_outputs(a, s));
  KVFLASH_RETURN_IF_ERROR(check_lengths(a, &s));
  KVFLASH_RETURN_IF_ERROR(check_rope_prefix(a, &s));
  s.columns = s.P + (s.paged ? s.capacity : s.tnd ? s.max_kv : s.S2);
  if (s.list)
    for (const TensorView& t : a.key) s.columns = std::max(s.columns, s.P + seq_dim(t, s.in));
  *pr = core::FiaProblem{};
  int64_t mask_batch = 0, pse_batch = 0;
  KVFLASH_RETURN_IF_ERROR(check_mask(a, s, pr, &mask_batch));
  KVFLASH_RETURN_IF_ERROR(check_pse(a, s, pr, &pse_batch));
  KVFLASH_RETURN_IF_ERROR(check_antiquant(a, s, pr));
  KVFLASH_RETURN_IF_ERROR(check_post_quant(a, s, pr));
  KVFLASH_RETURN_IF_ERROR(check_sink(a, s, pr));
  KVFLASH_RETURN_IF_ERROR(check_size(s));
  fill_problem(a, s, mask_batch, pse_batch, pr);
  // D4's decode branch, and TND decode steps (one row per request), on the decode kernels.
  return plan_decode(a, s, pr);
}

}  // namespace kvflash::fia
