// The operators' output rules, shared by the real and the fake kernels: each output's dtype and
// shape from the arguments. Int is int64_t (real kernel) or c10::SymInt (fake kernel).
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvflash::torch_ext {

/// IFA's attention_out: the query's shape, int8 when quant_scale2 is given, else the query's dtype.
inline at::ScalarType ifa_out_dtype(const at::Tensor& query, const c10::IValue& quant_scale2) {
  const bool quant = quant_scale2.isTensor() && quant_scale2.toTensor().defined();
  return quant ? at::kChar : query.scalar_type();
}

/// IFA's softmax_lse, when asked for: fp32 (B, N), B the query's first dim (0 for a 0-D query).
template <class Int, class Sizes>
std::vector<Int> ifa_lse_shape(const Sizes& q, int64_t num_heads) {
  return {q.empty() ? Int(0) : Int(q[0]), Int(std::max<int64_t>(num_heads, 0))};
}

/// torch_npu's shape of softmax_max / softmax_sum with return_softmax_lse: [KV_N, T, N/KV_N] for a
/// TND query, [B, KV_N, S, N/KV_N] for BSND, where KV_N is the key's head axis (size(-2)) in every
/// layout. nullopt when the ranks or a zero KV_N leave it undefined (the library then rejects the
/// call).
template <class Int, class Sizes>
std::optional<std::vector<Int>> sfa_softmax_shape(const Sizes& q, const Sizes& k,
                                                  const std::string& layout_query) {
  if (k.size() < 2) return std::nullopt;
  const Int& kv_n = k[k.size() - 2];
  if (kv_n == 0) return std::nullopt;
  if (layout_query == "TND") {
    if (q.size() != 3) return std::nullopt;
    return std::vector<Int>{kv_n, q[0], q[1] / kv_n};
  }
  if (q.size() != 4) return std::nullopt;
  return std::vector<Int>{q[0], kv_n, q[1], q[2] / kv_n};
}

/// merge_attention_states's out: partial_out's shape without the leading K; its lse, max and sum:
/// those dims without the last (D). Rank < 2 gives [0] (the library then rejects the call).
template <class Int, class Sizes>
std::vector<Int> merge_out_shape(const Sizes& partial_out) {
  if (partial_out.size() < 2) return {Int(0)};
  return std::vector<Int>(partial_out.begin() + 1, partial_out.end());
}
template <class Int, class Sizes>
std::vector<Int> merge_lse_shape(const Sizes& partial_out) {
  if (partial_out.size() < 2) return {Int(0)};
  return std::vector<Int>(partial_out.begin() + 1, partial_out.end() - 1);
}

/// torch_npu's shape of npu_lightning_indexer's sparse_indices (and of sparse_values with
/// return_value): BSND query [B, S1, key.size(2), K]; TND [T, key.size(1 for a TND key, else 2),
/// K]. nullopt when an empty tensor, a rank or sparse_count <= 0 leaves it undefined, and for a
/// sparse_count above the library's 8192 (no huge allocation before the library names it): the
/// library then rejects the call.
template <class Int, class Sizes>
std::optional<std::vector<Int>> li_indices_shape(const Sizes& q, const Sizes& k,
                                                 const std::string& layout_query,
                                                 const std::string& layout_key,
                                                 int64_t sparse_count) {
  const bool k_tnd = layout_key == "TND";
  const size_t head_axis = k_tnd ? 1 : 2;
  if (sparse_count <= 0 || sparse_count > 8192 || k.size() <= head_axis || q.size() < 2)
    return std::nullopt;
  for (const auto& d : q)
    if (d == 0) return std::nullopt;
  for (const auto& d : k)
    if (d == 0) return std::nullopt;
  if (layout_query == "BSND") {
    if (q.size() != 4) return std::nullopt;
    return std::vector<Int>{q[0], q[1], k[2], Int(sparse_count)};
  }
  if (q.size() != 3) return std::nullopt;
  return std::vector<Int>{q[0], k[head_axis], Int(sparse_count)};
}

// ---- PromptFlashAttention / FusedInferAttentionScore (docs/fia-pfa-indexer.md §1.5) ----

/// input_layout's query and output layouts, torch_npu's list: "BNSD_BSND" -> {BNSD, BSND}, "TND"
/// -> {TND, TND}; nullopt for any other string. (kvflash runs a subset; the library refuses the
/// rest, naming the layout.)
struct FiaLayoutPair {
  std::string_view in, out;
};
inline std::optional<FiaLayoutPair> fia_layout_pair(std::string_view layout) {
  for (std::string_view one : {"BSH", "BSND", "BNSD", "TND", "NTD", "NSD"})
    if (layout == one) return FiaLayoutPair{one, one};
  for (std::string_view two : {"BNSD_BSND", "BSH_BNSD", "BSND_BNSD", "NTD_TND", "BSH_NBSD",
                               "BSND_NBSD", "BNSD_NBSD", "TND_NTD"})
    if (layout == two)
      return FiaLayoutPair{two.substr(0, two.find('_')), two.substr(two.find('_') + 1)};
  return std::nullopt;
}

/// Whether a layout's query is (T, N, D)-like: its LSE is [T, N, 1].
inline bool fia_token_layout(std::string_view in) { return in == "TND" || in == "NTD"; }

/// The query rank a layout needs (3 or 4).
inline size_t fia_query_rank(std::string_view in) { return in == "BSND" || in == "BNSD" ? 4 : 3; }

/// FIA's (v1 and v2) attention_out shape: [B,S1,N*d] (BSH), [B,S1,N,d] (BSND), [B,N,S1,d]
/// (BNSD), [N,B,S1,d] (NBSD), [T,N,d] (TND), [N,T,d] (NTD), [N,S1,d] (NSD), where d is value's
/// head dim (with block_table: value rank 3 size(2) / KV_N, rank 4 size(3), rank 5 size(2) *
/// size(4); without: BSH size(2) / KV_N, BSND/BNSD size(3), TND/NTD/NSD size(2); x8 for int32),
/// or the query's when that is 0. nullopt where the rule is undefined (an unknown layout, a rank
/// the layout does not have, num_heads or KV_N <= 0).
template <class Int, class Sizes>
std::optional<std::vector<Int>> fia_out_shape(const Sizes& q, const Sizes& v,
                                              std::string_view input_layout, int64_t num_heads,
                                              int64_t num_kv_heads, bool paged, bool value_int32) {
  const auto layouts = fia_layout_pair(input_layout);
  const int64_t kvn = num_kv_heads == 0 ? num_heads : num_kv_heads;
  if (!layouts || num_heads <= 0 || kvn <= 0) return std::nullopt;
  const std::string_view in = layouts->in, out = layouts->out;
  if (q.size() != fia_query_rank(in)) return std::nullopt;
  const size_t vr = v.size();
  std::optional<Int> vd;
  if (paged) {
    if (vr == 3) vd = v[2] / kvn;
    if (vr == 4) vd = v[3];
    if (vr == 5) vd = v[2] * v[4];
  } else if (in == "BSH") {
    if (vr == 3) vd = v[2] / kvn;
  } else if (in == "BSND" || in == "BNSD") {
    if (vr == 4) vd = v[3];
  } else if (vr == 3) {
    vd = v[2];
  }
  if (!vd) return std::nullopt;
  Int d = value_int32 ? *vd * 8 : *vd;
  if (d == 0) d = in == "BSH" ? q[2] / num_heads : q[q.size() - 1];
  const Int n(num_heads);
  if (in == "TND" || in == "NTD") {
    const Int& t = in == "TND" ? q[0] : q[1];
    return out == "TND" ? std::vector<Int>{t, n, d} : std::vector<Int>{n, t, d};
  }
  if (in == "NSD") return std::vector<Int>{n, q[1], d};
  const Int& b = q[0];
  const Int& s1 = in == "BNSD" ? q[2] : q[1];
  if (out == "BSH") return std::vector<Int>{b, s1, n * d};
  if (out == "BSND") return std::vector<Int>{b, s1, n, d};
  if (out == "BNSD") return std::vector<Int>{b, n, s1, d};
  return std::vector<Int>{n, b, s1, d};  // NBSD
}

/// FIA's softmax_lse (fp32) when softmax_lse_flag / return_softmax_lse: [T, N, 1] for a TND / NTD
/// query, [B, N, S1, 1] otherwise (NSD: B = 1); nullopt where the rule is undefined (as above).
/// Not requested: [0] (torch_npu's shape; the caller makes it).
template <class Int, class Sizes>
std::optional<std::vector<Int>> fia_lse_shape(const Sizes& q, std::string_view input_layout,
                                              int64_t num_heads) {
  const auto layouts = fia_layout_pair(input_layout);
  if (!layouts || num_heads <= 0 || q.size() != fia_query_rank(layouts->in)) return std::nullopt;
  const std::string_view in = layouts->in;
  const Int n(num_heads), one(1);
  if (in == "TND") return std::vector<Int>{q[0], n, one};
  if (in == "NTD") return std::vector<Int>{q[1], n, one};
  if (in == "NSD") return std::vector<Int>{one, n, q[1], one};
  return std::vector<Int>{q[0], n, in == "BNSD" ? q[2] : q[1], one};
}

/// FIA's attention_out dtype: int8 with quant_scale2 (v2: quant_scale_out); for an int8 query
/// query_rope's dtype if given, else fp16; else the query's.
inline at::ScalarType fia_out_dtype(const at::Tensor& query, const c10::IValue& quant_scale2,
                                    const c10::IValue& query_rope) {
  const auto given = [](const c10::IValue& v) { return v.isTensor() && v.toTensor().defined(); };
  if (given(quant_scale2)) return at::kChar;
  if (query.scalar_type() == at::kChar)
    return given(query_rope) ? query_rope.toTensor().scalar_type() : at::kHalf;
  return query.scalar_type();
}

/// PFA's attention_out shape: the query's, but [q0, q1, value.size(2)] for TND and [q0, q2, q1,
/// q3] for BNSD_BSND; nullopt where a rank leaves that undefined. Its dtype: int8 with
/// quant_scale2, fp16 for an int8 query, else the query's.
template <class Int, class Sizes>
std::optional<std::vector<Int>> pfa_out_shape(const Sizes& q, const Sizes& v,
                                              std::string_view input_layout) {
  if (input_layout == "TND") {
    if (q.size() != 3 || v.size() != 3) return std::nullopt;
    return std::vector<Int>{q[0], q[1], v[2]};
  }
  if (input_layout == "BNSD_BSND") {
    if (q.size() != 4) return std::nullopt;
    return std::vector<Int>{q[0], q[2], q[1], q[3]};
  }
  return std::vector<Int>(q.begin(), q.end());
}
inline at::ScalarType pfa_out_dtype(const at::Tensor& query, const c10::IValue& quant_scale2) {
  if (quant_scale2.isTensor() && quant_scale2.toTensor().defined()) return at::kChar;
  return query.scalar_type() == at::kChar ? at::kHalf : query.scalar_type();
}

// ---- npu_fusion_attention (FlashAttentionScore), torch_npu 2.14's meta function ----

/// input_layout as upstream reads it (op-plugin upper-cases it).
inline std::string fa_layout(std::string layout) {
  for (char& c : layout) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
  return layout;
}

/// attention_out: [B, S1, N * Dv] (BSH, Dv = value.size(2) / (key.size(2) / D), D = H / N),
/// [B, S1, N, Dv] (BSND), [B, N, S1, Dv] (BNSD), [T, N, Dv] (TND), Dv value's last dim; nullopt
/// where the rule is undefined (another layout, a rank, a head count that does not divide).
template <class Int, class Sizes>
std::optional<std::vector<Int>> fa_out_shape(const Sizes& q, const Sizes& k, const Sizes& v,
                                             const std::string& layout, int64_t head_num) {
  if (head_num <= 0) return std::nullopt;
  if (layout == "BSH") {
    if (q.size() != 3 || k.size() != 3 || v.size() != 3) return std::nullopt;
    const Int d = q[2] / head_num;
    if (d == 0 || k[2] == 0) return std::nullopt;
    const Int kvn = k[2] / d;
    if (kvn == 0) return std::nullopt;
    return std::vector<Int>{q[0], q[1], (v[2] / kvn) * head_num};
  }
  if (layout == "BSND" || layout == "BNSD") {
    if (q.size() != 4 || v.size() != 4) return std::nullopt;
    return std::vector<Int>{q[0], q[1], q[2], v[3]};
  }
  if (layout == "TND") {
    if (q.size() != 3 || v.size() != 3) return std::nullopt;
    return std::vector<Int>{q[0], q[1], v[2]};
  }
  return std::nullopt;
}

/// softmax_max / softmax_sum: [B, N, S1, 8], TND [T, N, 8] (N = head_num); nullopt as above.
template <class Int, class Sizes>
std::optional<std::vector<Int>> fa_softmax_shape(const Sizes& q, const std::string& layout,
                                                 int64_t head_num) {
  const Int n(head_num), w(8);
  if (head_num <= 0) return std::nullopt;
  if (layout == "TND") {
    if (q.size() != 3) return std::nullopt;
    return std::vector<Int>{q[0], n, w};
  }
  if (layout == "BSH" || layout == "BSND") {
    if (q.size() != (layout == "BSH" ? 3u : 4u)) return std::nullopt;
    return std::vector<Int>{q[0], n, q[1], w};
  }
  if (layout == "BNSD") {
    if (q.size() != 4) return std::nullopt;
    return std::vector<Int>{q[0], n, q[2], w};
  }
  return std::nullopt;
}

/// The dropout mask's element count npu_fusion_attention reports (its 7th output; op-plugin
/// computes it whether or not a mask is generated): B * N * S1 * S2, TND N * sum_b q_b * kv_b over
/// the lengths' batches (those before trailing entries 0 in both); 0 where undefined.
template <class Int, class Sizes>
Int fa_numels(const Sizes& q, const Sizes& k, const std::string& layout, int64_t head_num,
              const std::optional<std::vector<int64_t>>& qlen,
              const std::optional<std::vector<int64_t>>& kvlen) {
  if (layout == "TND") {
    if (!qlen || !kvlen) return Int(0);
    int64_t sum = 0, pq = 0, pk = 0;
    for (size_t b = 0; b < qlen->size() && b < kvlen->size(); ++b) {
      if (b > 0 && (*qlen)[b] == 0 && (*kvlen)[b] == 0) break;
      sum += ((*qlen)[b] - pq) * ((*kvlen)[b] - pk);
      pq = (*qlen)[b], pk = (*kvlen)[b];
    }
    return Int(head_num * sum);
  }
  const size_t s = layout == "BNSD" ? 2 : 1;
  if (q.size() <= s || k.size() <= s) return Int(0);
  return q[0] * Int(head_num) * q[s] * k[s];
}

}  // namespace kvflash::torch_ext
