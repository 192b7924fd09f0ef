// Fuzz target: aclnnFlashAttentionScore and aclnnFlashAttentionVarLenScore through the C API,
// both phases and the stream, over mutated calls (fa_fuzz.hpp), with the two-phase protocol's
// invariants (aclnn_protocol.hpp) and an unmutated call compared with the oracle.
#include <cstdint>
#include <string>

#include "acl/acl.h"
#include "aclnn_protocol.hpp"
#include "aclnnop/aclnn_flash_attention_score.h"
#include "aclnnop/aclnn_lightning_indexer.h"
#include "fa_fuzz.hpp"
#include "fia_acl_handles.hpp"
#include "fuzz_input.hpp"
#include "harness.hpp"

namespace kvflash::fuzz {
namespace {

constexpr const char* kOp = "flash_attention_score";

void run(FuzzInput& in) {
  FaFuzzCase f;
  decode_fa(in, /*extensions=*/false, &f);
  FlashAttentionScoreArgs& a = f.args;
  // The VarLen entry takes the lengths; the other passes none (mutated otherwise).
  const bool varlen = a.actual_seq_qlen.has_value() || a.actual_seq_kvlen.has_value() || in.rare(8);
  add_context(varlen ? "aclnn VarLen" : "aclnn");
  FiaAclHandles h;
  aclTensor* q = h.make(a.query);
  aclTensor* k = h.make(a.key);
  aclTensor* v = h.make(a.value);
  aclTensor* pse = h.opt(a.real_shift);
  aclTensor* drop = h.opt(a.drop_mask);
  aclTensor* pad = h.opt(a.padding_mask);
  aclTensor* mask = h.opt(a.atten_mask);
  aclIntArray* prefix = h.ints(a.prefix);
  aclIntArray* qlen = h.ints(a.actual_seq_qlen);
  aclIntArray* kvlen = h.ints(a.actual_seq_kvlen);
  aclTensor* mx = h.make(a.softmax_max);
  aclTensor* sm = h.make(a.softmax_sum);
  aclTensor* out = h.make(a.attention_out);
  std::string layout = a.input_layout;
  AclnnSlots sl;
  sl.maybe_null(in);
  const aclnnStatus st =
      varlen ? aclnnFlashAttentionVarLenScoreGetWorkspaceSize(
                   q, k, v, pse, drop, pad, mask, prefix, qlen, kvlen, a.scale, a.keep_prob,
                   a.pre_tokens, a.next_tokens, a.head_num, layout.data(), a.inner_precise,
                   a.sparse_mode, mx, sm, nullptr, out, sl.ws_slot, sl.exec_slot)
             : aclnnFlashAttentionScoreGetWorkspaceSize(
                   q, k, v, pse, drop, pad, mask, prefix, a.scale, a.keep_prob, a.pre_tokens,
                   a.next_tokens, a.head_num, layout.data(), a.inner_precise, a.sparse_mode, mx, sm,
                   nullptr, out, sl.ws_slot, sl.exec_slot);
  AclnnProtocol p;
  p.op = kOp;
  p.names = &fa_names();
  p.phase2 = varlen ? aclnnFlashAttentionVarLenScore : aclnnFlashAttentionScore;
  p.foreign = aclnnLightningIndexer;
  p.affordable = [&](uint64_t ws_size) { return fa_affordable(f, ws_size); };
  p.check_memory = [&](bool, const char* what) { check_fa_guards(f, what); };
  p.destroy_handles = [&] { h.destroy_all(); };
  AclnnPhase1 phase1;
  phase1.status = st;
  // The prefill kernel's own refusals carry its name: the call is FIA's once mapped.
  const std::string msg = aclGetRecentErrMsg();
  phase1.op = msg.rfind("[fused_infer", 0) == 0 ? "fused_infer_attention_score" : kOp;
  phase1.null_required = !q || !k || !v || !mx || !sm || !out;
  const std::optional<AclnnRun> run = drive_aclnn(in, p, phase1, sl);
  if (run) check_fa_run(f, run->status, "aclnnFlashAttentionScore");
}

}  // namespace
}  // namespace kvflash::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kvflash::fuzz::FuzzInput in(data, size);
  ++kvflash::fuzz::stats().inputs;
  kvflash::fuzz::run(in);
  return 0;
}
