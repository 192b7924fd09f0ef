// Fuzz target: aclnnFusedInferAttentionScoreV3 / V4 through the C API, both phases and the
// stream, over mutated cases of the shared list (fia_fuzz.hpp). Invariants: every status is
// documented and its message names an argument; a failed phase 1 leaves *executor null; an
// accepted call runs without touching memory outside its views (guards, ASan) and, when the case
// was not mutated, matches the fp64 oracle.
#include <cstdint>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "aclnnop/aclnn_fused_infer_attention_score_v3.h"
#include "aclnnop/aclnn_fused_infer_attention_score_v4.h"
#include "fia_acl_handles.hpp"
#include "fia_fuzz.hpp"
#include "fuzz_input.hpp"
#include "harness.hpp"

namespace kvflash::fuzz {
namespace {

constexpr const char* kOp = "fused_infer_attention_score";

void run(FuzzInput& in) {
  FiaFuzzCase f;
  if (!decode_fia(in, /*pfa=*/false, &f)) {
    ++stats().skipped;
    return;
  }
  const bool v3 = in.flag();
  add_context(v3 ? "aclnn V3" : "aclnn V4");
  reference::FiaCall& a = f.call;
  if (v3) a.learnable_sink.reset();  // V3 has none: the oracle runs without it too
  FiaAclHandles h;
  std::string layout = a.input_layout;
  aclTensor* sink = h.opt(a.learnable_sink);
  uint64_t ws_size = 12345;
  aclOpExecutor* exec = reinterpret_cast<aclOpExecutor*>(uintptr_t{0xdead0});
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
  const aclnnStatus st =
      v3 ? aclnnFusedInferAttentionScoreV3GetWorkspaceSize(
               q, k, v, pse, mask, asl, askv, nullptr, nullptr, nullptr, qs2, qo2, aqs, aqo, bt,
               qpad, kvpad, kaqs, kaqo, vaqs, vaqo, kp, vp, spl, qr, kr, nullptr, a.num_heads,
               a.scale_value, a.pre_tokens, a.next_tokens, layout.data(), a.num_key_value_heads,
               a.sparse_mode, a.inner_precise, a.block_size, a.antiquant_mode, a.softmax_lse_flag,
               a.key_antiquant_mode, a.value_antiquant_mode, out, lse, &ws_size, &exec)
         : aclnnFusedInferAttentionScoreV4GetWorkspaceSize(
               q, k, v, pse, mask, asl, askv, nullptr, nullptr, nullptr, qs2, qo2, aqs, aqo, bt,
               qpad, kvpad, kaqs, kaqo, vaqs, vaqo, kp, vp, spl, qr, kr, nullptr, nullptr, sink,
               a.num_heads, a.scale_value, a.pre_tokens, a.next_tokens, layout.data(),
               a.num_key_value_heads, a.sparse_mode, a.inner_precise, a.block_size,
               a.antiquant_mode, a.softmax_lse_flag, a.key_antiquant_mode, a.value_antiquant_mode,
               0, out, lse, &ws_size, &exec);
  check_status(st, aclGetRecentErrMsg(), kOp, fia_names(), "phase 1");
  if (st != 0) {
    if (exec != nullptr) violated("phase 1 failed but *executor is not null");
    ++stats().refused;
    return;
  }
  if (exec == nullptr) violated("phase 1 succeeded without an executor");
  if (!f.runnable || ws_size > (uint64_t{1} << 28)) {
    if (aclDestroyAclOpExecutor(exec) != 0) violated("aclDestroyAclOpExecutor failed");
    ++stats().planned_only;
    return;
  }
  Guarded ws(static_cast<size_t>(ws_size), in.below(64));
  const aclnnStatus s2 = v3 ? aclnnFusedInferAttentionScoreV3(ws.data(), ws_size, exec, nullptr)
                            : aclnnFusedInferAttentionScoreV4(ws.data(), ws_size, exec, nullptr);
  if (s2 != 0) violated("phase 2 returned " + std::to_string(s2) + ": " + aclGetRecentErrMsg());
  const aclError sync = aclrtSynchronizeStream(nullptr);
  ws.check_guards("the workspace");
  if (sync == ACL_ERROR_RT_AICORE_EXCEPTION) {
    ++stats().faulted;
    check_status(161002, aclGetRecentErrMsg(), kOp, fia_names(), "aclrtSynchronizeStream");
    return;
  }
  if (sync != ACL_SUCCESS)
    violated("aclrtSynchronizeStream returned " + std::to_string(sync) + ": " +
             aclGetRecentErrMsg());
  ++stats().ran;
  check_fia_run(f, "aclnnFusedInferAttentionScore");
}

}  // namespace
}  // namespace kvflash::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kvflash::fuzz::FuzzInput in(data, size);
  ++kvflash::fuzz::stats().inputs;
  kvflash::fuzz::run(in);
  return 0;
}
