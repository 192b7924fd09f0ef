// Fuzz target: aclnnPromptFlashAttention / V2 / V3 through the C API, both phases and the
// stream, over mutated prompt cases of the shared list (fia_fuzz.hpp), with the invariants of
// fuzz_fia_aclnn.cpp.
#include <cstdint>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "aclnn_protocol.hpp"
#include "aclnnop/aclnn_fused_infer_attention_score_v3.h"
#include "aclnnop/aclnn_prompt_flash_attention.h"
#include "aclnnop/aclnn_prompt_flash_attention_v2.h"
#include "aclnnop/aclnn_prompt_flash_attention_v3.h"
#include "fia_acl_handles.hpp"
#include "fia_fuzz.hpp"
#include "fuzz_input.hpp"
#include "harness.hpp"

namespace kvflash::fuzz {
namespace {

constexpr const char* kOp = "fused_infer_attention_score";
constexpr const char* kPfa = "prompt_flash_attention";

void run(FuzzInput& in) {
  FiaFuzzCase f;
  if (!decode_fia(in, /*pfa=*/true, &f)) {
    ++stats().skipped;
    return;
  }
  const int version = 1 + static_cast<int>(in.below(3));
  add_context("aclnn PFA V" + std::to_string(version));
  reference::FiaCall& a = f.call;
  if (version == 1) {  // V1 has no actualSeqLengthsKv, sparseMode (0) or innerPrecise (1)
    a.actual_seq_lengths_kv.reset();
    a.sparse_mode = 0;
    a.inner_precise = 1;
    f.mutated = true;  // no longer the listed case: not compared with the oracle
  } else if (version == 2) {
    a.inner_precise = 1;
  }
  FiaAclHandles h;
  std::string layout = a.input_layout;
  AclnnSlots sl;
  sl.maybe_null(in);
  aclTensor* q = h.make(a.query);
  aclTensor* k = a.key.empty() ? nullptr : h.make(a.key[0]);
  aclTensor* v = a.value.empty() ? nullptr : h.make(a.value[0]);
  aclTensor* pse = h.opt(a.pse_shift);
  aclTensor* mask = h.opt(a.atten_mask);
  aclIntArray* asl = h.ints(a.actual_seq_lengths);
  aclIntArray* askv = h.ints(a.actual_seq_lengths_kv);
  aclTensor* qs2 = h.opt(a.quant_scale2);
  aclTensor* qo2 = h.opt(a.quant_offset2);
  aclTensor* out = h.make(a.attention_out);
  aclnnStatus st = 0;
  if (version == 1) {
    st = aclnnPromptFlashAttentionGetWorkspaceSize(
        q, k, v, pse, mask, asl, a.num_heads, a.scale, a.pre_tokens, a.next_tokens,
        layout.data(), a.num_key_value_heads, out, sl.ws_slot, sl.exec_slot);
  } else if (version == 2) {
    st = aclnnPromptFlashAttentionV2GetWorkspaceSize(
        q, k, v, pse, mask, asl, askv, nullptr, nullptr, nullptr, qs2, qo2, a.num_heads,
        a.scale, a.pre_tokens, a.next_tokens, layout.data(), a.num_key_value_heads,
        a.sparse_mode, out, sl.ws_slot, sl.exec_slot);
  } else {
    st = aclnnPromptFlashAttentionV3GetWorkspaceSize(
        q, k, v, pse, mask, asl, askv, nullptr, nullptr, nullptr, qs2, qo2, a.num_heads,
        a.scale, a.pre_tokens, a.next_tokens, layout.data(), a.num_key_value_heads,
        a.sparse_mode, a.inner_precise, out, sl.ws_slot, sl.exec_slot);
  }
  static constexpr AclnnPhase2 kPhase2[] = {aclnnPromptFlashAttention, aclnnPromptFlashAttentionV2,
                                            aclnnPromptFlashAttentionV3};
  AclnnProtocol p;
  p.op = kPfa;
  p.names = &fia_names();
  p.phase2 = kPhase2[version - 1];
  p.foreign = aclnnFusedInferAttentionScoreV3;
  p.affordable = [&](uint64_t ws_size) { return fia_affordable(f, ws_size); };
  p.check_memory = [&](bool, const char* what) { check_fia_guards(f, what); };
  p.destroy_handles = [&] { h.destroy_all(); };
  AclnnPhase1 phase1;
  phase1.status = st;
  // Null checks name PFA; validation names FIA (PFA is its subset).
  phase1.op = std::string(aclGetRecentErrMsg()).rfind("[prompt", 0) == 0 ? kPfa : kOp;
  phase1.null_required = !q || !k || !v || !out;
  const std::optional<AclnnRun> run = drive_aclnn(in, p, phase1, sl);
  if (run) check_fia_run(f, run->status, "aclnnPromptFlashAttention");
}

}  // namespace
}  // namespace kvflash::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kvflash::fuzz::FuzzInput in(data, size);
  ++kvflash::fuzz::stats().inputs;
  kvflash::fuzz::run(in);
  return 0;
}
