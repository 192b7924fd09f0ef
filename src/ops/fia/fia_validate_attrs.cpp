// FIA / PFA validation, the call's own arguments: what decision D1 refuses (named features, before
// anything else about them) and the attributes (heads, sparse mode, precision, antiquant modes,
// input_layout). Called by fia::validate (fia_validate.cpp).
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

}  // namespace

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
  // V5's additions (docs/api.md, "FusedInferAttentionScore and PromptFlashAttention"): a position
  // encoding generated in the operator (pseType 2/3 of FlashAttentionScore, where the start
  // indices place a chunk of a split sequence) is not FIA's; the V5 document allows pseType 0 only.
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

}  // namespace kvflash::fia
