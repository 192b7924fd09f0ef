// Fuzz target: aclnnFusedInferAttentionScore V1-V5 through the C API, both phases and the stream,
// over mutated cases of the shared list (fia_fuzz.hpp): each input picks a version, raised to the
// lowest one whose arguments express the call; V5's own arguments (start indices, pseType) are
// sometimes set, which must be refused by name. Invariants: every status is
// documented and its message names an argument; a failed phase 1 leaves *executor null; an
// accepted call runs without touching memory outside its views (guards, ASan) and, when the case
// was not mutated, matches the fp64 oracle.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "aclnn_protocol.hpp"
#include "aclnnop/aclnn_fused_infer_attention_score.h"
#include "aclnnop/aclnn_fused_infer_attention_score_v2.h"
#include "aclnnop/aclnn_fused_infer_attention_score_v3.h"
#include "aclnnop/aclnn_fused_infer_attention_score_v4.h"
#include "aclnnop/aclnn_fused_infer_attention_score_v5.h"
#include "aclnnop/aclnn_incre_flash_attention.h"
#include "fia_acl_handles.hpp"
#include "fia_fuzz.hpp"
#include "fuzz_input.hpp"
#include "harness.hpp"

namespace kvflash::fuzz {
namespace {

constexpr const char* kOp = "fused_infer_attention_score";

// The lowest version whose arguments express a: V1 has no split antiquant parameters (or their
// modes) and no shared prefix, V2 no rope, V3 no dequantScaleQuery, learnable sink or
// queryQuantMode.
int lowest_version(const reference::FiaCall& a) {
  if (a.learnable_sink) return 4;
  if (a.query_rope || a.key_rope) return 3;
  if (a.key_antiquant_scale || a.key_antiquant_offset || a.value_antiquant_scale ||
      a.value_antiquant_offset || a.key_shared_prefix || a.value_shared_prefix ||
      a.actual_shared_prefix_len || a.key_antiquant_mode != 0 || a.value_antiquant_mode != 0)
    return 2;
  return 1;
}

void run(FuzzInput& in) {
  FiaFuzzCase f;
  if (!decode_fia(in, /*pfa=*/false, &f)) {
    ++stats().skipped;
    return;
  }
  reference::FiaCall& a = f.call;
  const int version = std::max(1 + static_cast<int>(in.below(5)), lowest_version(a));
  add_context("aclnn V" + std::to_string(version));
  FiaAclHandles h;
  std::string layout = a.input_layout;
  aclTensor* sink = h.opt(a.learnable_sink);
  AclnnSlots sl;
  sl.maybe_null(in);
  aclTensor* q = h.make(a.query);
  aclTensorList* k = h.list(a.key);
  aclTensorList* v = h.list(a.value);
  aclTensor* pse = h.opt(a.pse_shift);
  aclTensor* mask = h.opt(a.atten_mask);
  aclIntArray* asl = h.ints(a.actual_seq_lengths);
  aclIntArray* askv = h.ints(a.actual_seq_lengths_kv);
  aclTensor* qs2 = h.opt(a.quant_scale2);
  aclTensor* qo2 = h.opt(a.quant_offset2);
  aclTensor* aqs = h.opt(a.antiquant_scale);
  aclTensor* aqo = h.opt(a.antiquant_offset);
  aclTensor* bt = h.opt(a.block_table);
  aclTensor* qpad = h.opt(a.query_padding_size);
  aclTensor* kvpad = h.opt(a.kv_padding_size);
  aclTensor* kaqs = h.opt(a.key_antiquant_scale);
  aclTensor* kaqo = h.opt(a.key_antiquant_offset);
  aclTensor* vaqs = h.opt(a.value_antiquant_scale);
  aclTensor* vaqo = h.opt(a.value_antiquant_offset);
  aclTensor* kp = h.opt(a.key_shared_prefix);
  aclTensor* vp = h.opt(a.value_shared_prefix);
  aclIntArray* spl = h.ints(a.actual_shared_prefix_len);
  aclTensor* qr = h.opt(a.query_rope);
  aclTensor* kr = h.opt(a.key_rope);
  aclTensor* out = h.make(a.attention_out);
  aclTensor* lse = h.opt(a.softmax_lse);
  // V5's own arguments: empty start indices are absent ones; a non-empty one, or a nonzero
  // pseType, must be refused (161002 naming it).
  aclIntArray* q_start = nullptr;
  aclIntArray* kv_start = nullptr;
  int64_t pse_type = 0;
  if (version == 5 && in.rare(4)) {
    const std::vector<int64_t> idx(in.below(3), in.special(0));
    (in.flag() ? q_start : kv_start) = h.ints(idx);
    if (in.flag()) pse_type = in.special(0);
    if (!idx.empty() || pse_type != 0) f.mutated = true;
  }
  aclnnStatus st = 0;
  switch (version) {
    case 1:
      st = aclnnFusedInferAttentionScoreGetWorkspaceSize(
          q, k, v, pse, mask, asl, askv, nullptr, nullptr, nullptr, qs2, qo2, aqs, aqo, bt, qpad,
          kvpad, a.num_heads, a.scale, a.pre_tokens, a.next_tokens, layout.data(),
          a.num_key_value_heads, a.sparse_mode, a.inner_precise, a.block_size, a.antiquant_mode,
          a.softmax_lse_flag, out, lse, sl.ws_slot, sl.exec_slot);
      break;
    case 2:
      st = aclnnFusedInferAttentionScoreV2GetWorkspaceSize(
          q, k, v, pse, mask, asl, askv, nullptr, nullptr, nullptr, qs2, qo2, aqs, aqo, bt, qpad,
          kvpad, kaqs, kaqo, vaqs, vaqo, kp, vp, spl, a.num_heads, a.scale, a.pre_tokens,
          a.next_tokens, layout.data(), a.num_key_value_heads, a.sparse_mode, a.inner_precise,
          a.block_size, a.antiquant_mode, a.softmax_lse_flag, a.key_antiquant_mode,
          a.value_antiquant_mode, out, lse, sl.ws_slot, sl.exec_slot);
      break;
    case 3:
      st = aclnnFusedInferAttentionScoreV3GetWorkspaceSize(
          q, k, v, pse, mask, asl, askv, nullptr, nullptr, nullptr, qs2, qo2, aqs, aqo, bt, qpad,
          kvpad, kaqs, kaqo, vaqs, vaqo, kp, vp, spl, qr, kr, nullptr, a.num_heads, a.scale,
          a.pre_tokens, a.next_tokens, layout.data(), a.num_key_value_heads, a.sparse_mode,
          a.inner_precise, a.block_size, a.antiquant_mode, a.softmax_lse_flag, a.key_antiquant_mode,
          a.value_antiquant_mode, out, lse, sl.ws_slot, sl.exec_slot);
      break;
    case 4:
      st = aclnnFusedInferAttentionScoreV4GetWorkspaceSize(
          q, k, v, pse, mask, asl, askv, nullptr, nullptr, nullptr, qs2, qo2, aqs, aqo, bt, qpad,
          kvpad, kaqs, kaqo, vaqs, vaqo, kp, vp, spl, qr, kr, nullptr, nullptr, sink, a.num_heads,
          a.scale, a.pre_tokens, a.next_tokens, layout.data(), a.num_key_value_heads,
          a.sparse_mode, a.inner_precise, a.block_size, a.antiquant_mode, a.softmax_lse_flag,
          a.key_antiquant_mode, a.value_antiquant_mode, 0, out, lse, sl.ws_slot, sl.exec_slot);
      break;
    default:
      st = aclnnFusedInferAttentionScoreV5GetWorkspaceSize(
          q, k, v, pse, mask, asl, askv, nullptr, nullptr, nullptr, qs2, qo2, aqs, aqo, bt, qpad,
          kvpad, kaqs, kaqo, vaqs, vaqo, kp, vp, spl, qr, kr, nullptr, nullptr, sink, q_start,
          kv_start, a.num_heads, a.scale, a.pre_tokens, a.next_tokens, layout.data(),
          a.num_key_value_heads, a.sparse_mode, a.inner_precise, a.block_size, a.antiquant_mode,
          a.softmax_lse_flag, a.key_antiquant_mode, a.value_antiquant_mode, 0, pse_type, out, lse,
          sl.ws_slot, sl.exec_slot);
      break;
  }
  static constexpr AclnnPhase2 kPhase2[] = {
      aclnnFusedInferAttentionScore, aclnnFusedInferAttentionScoreV2,
      aclnnFusedInferAttentionScoreV3, aclnnFusedInferAttentionScoreV4,
      aclnnFusedInferAttentionScoreV5};
  AclnnProtocol p;
  p.op = kOp;
  p.names = &fia_names();
  p.phase2 = kPhase2[version - 1];
  p.foreign = aclnnIncreFlashAttention;
  p.affordable = [&](uint64_t ws_size) { return fia_affordable(f, ws_size); };
  p.check_memory = [&](bool, const char* what) { check_fia_guards(f, what); };
  p.destroy_handles = [&] { h.destroy_all(); };
  AclnnPhase1 phase1;
  phase1.status = st;
  phase1.null_required = !q || !k || !v || !out;
  const std::optional<AclnnRun> run = drive_aclnn(in, p, phase1, sl);
  if (run) check_fia_run(f, run->status, "aclnnFusedInferAttentionScore");
}

}  // namespace
}  // namespace kvflash::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kvflash::fuzz::FuzzInput in(data, size);
  ++kvflash::fuzz::stats().inputs;
  kvflash::fuzz::run(in);
  return 0;
}
