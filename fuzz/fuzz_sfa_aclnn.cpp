// Fuzz target: aclnnSparseFlashAttention V1/V2 through the C API, both phases and the stream.
// The invariants are those of fuzz_ifa_aclnn.cpp, for SFA (docs/testing.md).
#include <cstdint>
#include <string>

#include "acl/acl.h"
#include "acl_handles.hpp"
#include "aclnnop/aclnn_incre_flash_attention.h"
#include "aclnnop/aclnn_sparse_flash_attention.h"
#include "aclnnop/aclnn_sparse_flash_attention_v2.h"
#include "fuzz_input.hpp"
#include "harness.hpp"
#include "sfa_fuzz.hpp"

namespace kvflash::fuzz {
namespace {

constexpr const char* kOp = "sparse_flash_attention";

aclrtStream created_stream() {
  static aclrtStream s = [] {
    aclrtStream h = nullptr;
    if (aclrtCreateStream(&h) != ACL_SUCCESS) violated("aclrtCreateStream failed");
    return h;
  }();
  return s;
}

using Phase2 = aclnnStatus (*)(void*, uint64_t, aclOpExecutor*, aclrtStream);

void run(FuzzInput& in) {
  const int version = 1 + static_cast<int>(in.below(2));
  SfaFuzzCase f;
  if (!decode_sfa(in, version == 2, /*extensions=*/false, &f)) {
    ++stats().skipped;
    return;
  }
  add_context("aclnn V" + std::to_string(version));
  SfaArgs& a = f.args;
  for (TensorView* t :
       {&a.query, &a.key, &a.sparse_indices, &a.query_rope, &a.key_rope, &a.attention_out})
    t->device = Device{};
  for (auto* o : {&a.value, &a.block_table, &a.actual_seq_lengths_query, &a.actual_seq_lengths_kv,
                  &a.sinks, &a.softmax_max, &a.softmax_sum})
    if (*o) (*o)->device = Device{};
  SfaArgs e = a;  // what the library sees
  if (version == 1) e.sinks.reset();
  if (!e.return_softmax_lse) {
    e.softmax_max.reset();
    e.softmax_sum.reset();
  }
  std::vector<Slot> slots = f.slots();
  if (!a.return_softmax_lse) {  // not even looked at (decision #18)
    if (a.softmax_max) f.mem.forbid(&*a.softmax_max);
    if (a.softmax_sum) f.mem.forbid(&*a.softmax_sum);
  }

  AclHandles h;
  bool broken = false;
  const auto opt = [&](std::optional<TensorView>& view, std::optional<TensorView>& seen,
                       const char* name, bool breakable) -> const aclTensor* {
    const aclTensor* t = h.optional(in, view, name);
    if (view && t == nullptr) seen.reset();
    return breakable ? h.maybe_break(in, t, &broken) : t;
  };
  const auto req = [&](const TensorView& view, const char* name) {
    return h.maybe_break(in, h.tensor(in, view, name), &broken);
  };
  const aclTensor* q = req(a.query, "query");
  const aclTensor* k = req(a.key, "key");
  const aclTensor* v = opt(a.value, e.value, "value", true);
  const aclTensor* si = req(a.sparse_indices, "sparse_indices");
  const aclTensor* bt = opt(a.block_table, e.block_table, "block_table", true);
  const aclTensor* lq = opt(a.actual_seq_lengths_query, e.actual_seq_lengths_query,
                            "actual_seq_lengths_query", false);
  const aclTensor* lkv =
      opt(a.actual_seq_lengths_kv, e.actual_seq_lengths_kv, "actual_seq_lengths_kv", true);
  const aclTensor* qr = req(a.query_rope, "query_rope");
  const aclTensor* kr = req(a.key_rope, "key_rope");
  const aclTensor* sinks = opt(a.sinks, e.sinks, "sinks", version == 2);
  const aclTensor* out = req(a.attention_out, "attention_out");
  const aclTensor* smax = opt(a.softmax_max, e.softmax_max, "softmax_max", a.return_softmax_lse);
  const aclTensor* ssum = opt(a.softmax_sum, e.softmax_sum, "softmax_sum", false);
  std::string lq_buf = a.layout_query, lkv_buf = a.layout_kv;
  char* layout_q = in.rare(32) ? nullptr : lq_buf.data();
  char* layout_kv = in.rare(32) ? nullptr : lkv_buf.data();
  uint64_t ws_size = 12345;
  aclOpExecutor* exec = reinterpret_cast<aclOpExecutor*>(uintptr_t{0xdead0});
  uint64_t* ws_slot = in.rare(32) ? nullptr : &ws_size;
  aclOpExecutor** exec_slot = in.rare(32) ? nullptr : &exec;

  h.destroy_broken();
  f.mem.snapshot(slots);
  const aclnnStatus st =
      version == 1
          ? aclnnSparseFlashAttentionGetWorkspaceSize(
                q, k, v, si, bt, lq, lkv, qr, kr, a.scale_value, a.sparse_block_size, layout_q,
                layout_kv, a.sparse_mode, a.pre_tokens, a.next_tokens, a.attention_mode,
                a.return_softmax_lse, out, smax, ssum, ws_slot, exec_slot)
          : aclnnSparseFlashAttentionV2GetWorkspaceSize(
                q, k, v, si, bt, lq, lkv, qr, kr, sinks, a.scale_value, a.sparse_block_size,
                layout_q, layout_kv, a.sparse_mode, a.pre_tokens, a.next_tokens, a.attention_mode,
                a.return_softmax_lse, out, smax, ssum, ws_slot, exec_slot);
  check_status(st, aclGetRecentErrMsg(), kOp, sfa_names(), "phase 1");
  const bool null_required = !q || !k || !si || !out || !layout_q || !layout_kv || !ws_slot ||
                             !exec_slot || (a.return_softmax_lse && (!smax || !ssum));
  if (null_required && st != 161001)
    violated("phase 1 with a null required argument returned " + std::to_string(st));
  if (st != 0) {
    if (exec_slot && exec != nullptr) violated("phase 1 failed but *executor is not null");
    if (ws_slot && ws_size != 12345 && ws_size != 0)
      violated("phase 1 failed but changed *workspaceSize");
    ++stats().refused;
    f.mem.check_after(slots, false, "phase 1 failed");
    return;
  }
  if (broken) violated("phase 1 accepted a destroyed or foreign handle");
  if (exec == nullptr) violated("phase 1 succeeded without an executor");
  if (!sfa_affordable(f, e, ws_size)) {
    if (aclDestroyAclOpExecutor(exec) != 0)
      violated("aclDestroyAclOpExecutor of a live executor failed");
    ++stats().planned_only;
    f.mem.check_after(slots, false, "planned only");
    return;
  }
  if (in.rare(3)) h.destroy_all();

  const Phase2 phase2 = version == 1 ? aclnnSparseFlashAttention : aclnnSparseFlashAttentionV2;
  Guarded ws(static_cast<size_t>(ws_size), in.below(64));
  aclrtStream stream = in.flag() ? nullptr : created_stream();
  const auto expect = [&](aclnnStatus got, aclnnStatus want, const char* what) {
    if (got != want)
      violated(std::string("phase 2 ") + what + " returned " + std::to_string(got) + ", want " +
               std::to_string(want) + ": " + aclGetRecentErrMsg());
    check_status(got, aclGetRecentErrMsg(), kOp, sfa_names(), std::string("phase 2 ") + what);
  };
  switch (in.below(8)) {
    case 0:
      if (ws_size > 0)
        expect(phase2(ws.data(), ws_size - 1, exec, stream), 161002, "small workspace");
      break;
    case 1:
      if (ws_size > 0) expect(phase2(nullptr, ws_size, exec, stream), 161001, "null workspace");
      break;
    case 2: {
      int64_t not_a_stream = 0;
      expect(phase2(ws.data(), ws_size, exec, &not_a_stream), 161002, "dead stream");
      break;
    }
    case 3: {
      const aclnnStatus got = aclnnIncreFlashAttention(ws.data(), ws_size, exec, stream);
      if (got != 161002) violated("an SFA executor in IFA phase 2 returned " + std::to_string(got));
      break;
    }
    default:
      break;
  }
  const bool repeat = in.rare(6);
  if (repeat && aclSetAclOpExecutorRepeatable(exec) != 0)
    violated("aclSetAclOpExecutorRepeatable failed");
  expect(phase2(ws.data(), ws_size, exec, stream), 0, "");
  if (repeat) {
    expect(phase2(ws.data(), ws_size, exec, stream), 0, "(repeat)");
    if (aclDestroyAclOpExecutor(exec) != 0)
      violated("aclDestroyAclOpExecutor of a repeatable executor failed");
  } else if (in.rare(4)) {
    expect(phase2(ws.data(), ws_size, exec, stream), 161002, "(consumed executor)");
  }
  const aclError sync = aclrtSynchronizeStream(stream);
  int64_t status = 0;
  if (sync == ACL_ERROR_RT_AICORE_EXCEPTION) {
    status = 161002;
    const std::string msg = aclGetRecentErrMsg();
    if (msg.find("status 161002") == std::string::npos)
      violated("aclrtSynchronizeStream returned 507015 with message '" + msg + "'");
    check_status(status, msg.c_str(), kOp, sfa_names(), "aclrtSynchronizeStream");
  } else if (sync != ACL_SUCCESS) {
    violated("aclrtSynchronizeStream returned " + std::to_string(sync) + ": " +
             aclGetRecentErrMsg());
  }
  f.mem.check_after(slots, true, "after the run");
  ws.check_guards("the workspace");
  check_sfa_run(f, e, status, "aclnnSparseFlashAttention");
}

}  // namespace
}  // namespace kvflash::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kvflash::fuzz::FuzzInput in(data, size);
  ++kvflash::fuzz::stats().inputs;
  kvflash::fuzz::run(in);
  return 0;
}
