// Fuzz target: aclnnIncreFlashAttention V1-V4 through the C API, both phases and the stream.
//
// Invariants (docs/testing.md): no crash, hang or sanitizer report; aclCreateTensor refuses
// exactly the documented descriptors; phase 1 returns a documented status with a message naming
// an argument, sets *executor to null on failure; phase 2's documented misuses (small workspace,
// null workspace, dead stream, another operator's executor) are refused and leave the executor
// usable; aclrtSynchronizeStream returns 507015 exactly when the device data is bad; inputs are
// unchanged, nothing outside an output or the workspace is written; and a call that succeeds
// matches the fp64 reference.
#include <cstdint>
#include <cstring>
#include <string>

#include "acl/acl.h"
#include "acl_handles.hpp"
#include "aclnnop/aclnn_incre_flash_attention.h"
#include "aclnnop/aclnn_incre_flash_attention_v2.h"
#include "aclnnop/aclnn_incre_flash_attention_v3.h"
#include "aclnnop/aclnn_incre_flash_attention_v4.h"
#include "aclnnop/aclnn_sparse_flash_attention.h"
#include "fuzz_input.hpp"
#include "harness.hpp"
#include "ifa_fuzz.hpp"

namespace kvflash::fuzz {
namespace {

constexpr const char* kOp = "incre_flash_attention";

aclrtStream created_stream() {
  static aclrtStream s = [] {
    aclrtStream h = nullptr;
    if (aclrtCreateStream(&h) != ACL_SUCCESS) violated("aclrtCreateStream failed");
    return h;
  }();
  return s;
}

using Phase2 = aclnnStatus (*)(void*, uint64_t, aclOpExecutor*, aclrtStream);

// What the library sees from a version (the wrappers drop the rest, docs/semantics.md §2.1).
IfaArgs effective(const IfaArgs& a, int version) {
  IfaArgs e = a;
  e.softmax_lse.reset();
  e.zero_fully_masked_rows = false;
  e.num_threads = 0;
  if (version < 4) e.kv_padding_size.reset();
  if (version < 3) {
    e.pse_shift.reset();
    e.antiquant_scale.reset();
    e.antiquant_offset.reset();
    e.block_table.reset();
    e.block_size = 0;
    e.inner_precise = 1;
  }
  if (version < 2) {
    e.dequant_scale1.reset();
    e.quant_scale1.reset();
    e.dequant_scale2.reset();
    e.quant_scale2.reset();
    e.quant_offset2.reset();
  }
  for (TensorView* v : {&e.query, &e.attention_out}) v->device = Device{};
  for (auto* list : {&e.key, &e.value})
    for (TensorView& v : *list) v.device = Device{};
  for (auto* o : {&e.pse_shift, &e.atten_mask, &e.dequant_scale1, &e.quant_scale1,
                  &e.dequant_scale2, &e.quant_scale2, &e.quant_offset2, &e.antiquant_scale,
                  &e.antiquant_offset, &e.block_table, &e.kv_padding_size})
    if (*o) (*o)->device = Device{};
  return e;
}

void run(FuzzInput& in) {
  const int version = 1 + static_cast<int>(in.below(4));
  IfaFuzzCase f;
  if (!decode_ifa(in, IfaFeatures::for_version(version), &f)) {
    ++stats().skipped;
    return;
  }
  add_context("aclnn V" + std::to_string(version));
  IfaArgs& a = f.args;
  // aclCreateTensor has no device: every view is host memory.
  IfaArgs e = effective(a, version);
  a = effective(a, 4);  // keeps the version's arguments; devices cleared
  std::vector<Slot> slots = f.slots();

  AclHandles h;
  bool broken = false;
  // An optional tensor aclCreateTensor refused is passed as null: the library then sees the call
  // without it.
  IfaArgs& eff = e;
  const auto opt = [&](std::optional<TensorView>& view, std::optional<TensorView>& seen,
                       const char* name, bool breakable) -> const aclTensor* {
    const aclTensor* t = h.optional(in, view, name);
    if (view && t == nullptr) seen.reset();
    return breakable ? h.maybe_break(in, t, &broken) : t;
  };
  const aclTensor* q = h.maybe_break(in, h.tensor(in, a.query, "query"), &broken);
  const aclTensorList* k = h.maybe_break(in, h.list(in, a.key, "key"), &broken);
  const aclTensorList* v = h.maybe_break(in, h.list(in, a.value, "value"), &broken);
  const aclTensor* pse = opt(a.pse_shift, eff.pse_shift, "pse_shift", version >= 3);
  const aclTensor* mask = opt(a.atten_mask, eff.atten_mask, "atten_mask", true);
  const aclIntArray* asl = h.maybe_break(in, h.int_array(in, a.actual_seq_lengths), &broken);
  const aclTensor* dq1 = opt(a.dequant_scale1, eff.dequant_scale1, "dequant_scale1", false);
  const aclTensor* q1 = opt(a.quant_scale1, eff.quant_scale1, "quant_scale1", false);
  const aclTensor* dq2 = opt(a.dequant_scale2, eff.dequant_scale2, "dequant_scale2", false);
  const aclTensor* qs2 = opt(a.quant_scale2, eff.quant_scale2, "quant_scale2", version >= 2);
  const aclTensor* qo2 = opt(a.quant_offset2, eff.quant_offset2, "quant_offset2", false);
  const aclTensor* aqs = opt(a.antiquant_scale, eff.antiquant_scale, "antiquant_scale", false);
  const aclTensor* aqo = opt(a.antiquant_offset, eff.antiquant_offset, "antiquant_offset", false);
  const aclTensor* bt = opt(a.block_table, eff.block_table, "block_table", version >= 3);
  const aclTensor* pad = opt(a.kv_padding_size, eff.kv_padding_size, "kv_padding_size", false);
  const aclTensor* out = h.maybe_break(in, h.tensor(in, a.attention_out, "attention_out"), &broken);
  std::string layout_buf = a.input_layout;
  char* layout = in.rare(32) ? nullptr : layout_buf.data();
  uint64_t ws_size = 12345;
  aclOpExecutor* exec = reinterpret_cast<aclOpExecutor*>(uintptr_t{0xdead0});
  uint64_t* ws_slot = in.rare(32) ? nullptr : &ws_size;
  aclOpExecutor** exec_slot = in.rare(32) ? nullptr : &exec;

  h.destroy_broken();
  f.mem.snapshot(slots);
  aclnnStatus st = 0;
  switch (version) {
    case 1:
      st = aclnnIncreFlashAttentionGetWorkspaceSize(q, k, v, pse, mask, asl, a.num_heads,
                                                    a.scale_value, layout, a.num_key_value_heads,
                                                    out, ws_slot, exec_slot);
      break;
    case 2:
      st = aclnnIncreFlashAttentionV2GetWorkspaceSize(
          q, k, v, pse, mask, asl, dq1, q1, dq2, qs2, qo2, a.num_heads, a.scale_value, layout,
          a.num_key_value_heads, out, ws_slot, exec_slot);
      break;
    case 3:
      st = aclnnIncreFlashAttentionV3GetWorkspaceSize(
          q, k, v, pse, mask, asl, dq1, q1, dq2, qs2, qo2, aqs, aqo, bt, a.num_heads, a.scale_value,
          layout, a.num_key_value_heads, a.block_size, a.inner_precise, out, ws_slot, exec_slot);
      break;
    default:
      st = aclnnIncreFlashAttentionV4GetWorkspaceSize(
          q, k, v, pse, mask, asl, dq1, q1, dq2, qs2, qo2, aqs, aqo, bt, pad, a.num_heads,
          a.scale_value, layout, a.num_key_value_heads, a.block_size, a.inner_precise, out, ws_slot,
          exec_slot);
      break;
  }
  check_status(st, aclGetRecentErrMsg(), kOp, ifa_names(), "phase 1");
  const bool null_required = !q || !k || !v || !out || !layout || !ws_slot || !exec_slot;
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
  if (broken) violated("phase 1 accepted a destroyed, foreign or null handle");
  if (exec == nullptr) violated("phase 1 succeeded without an executor");
  if (!ifa_affordable(f, e, ws_size)) {
    if (aclDestroyAclOpExecutor(exec) != 0)
      violated("aclDestroyAclOpExecutor of a live executor failed");
    ++stats().planned_only;
    f.mem.check_after(slots, false, "planned only");
    return;
  }
  if (in.rare(3)) h.destroy_all();  // the executor keeps what it needs

  static constexpr Phase2 kPhase2[] = {aclnnIncreFlashAttention, aclnnIncreFlashAttentionV2,
                                       aclnnIncreFlashAttentionV3, aclnnIncreFlashAttentionV4};
  const Phase2 phase2 = kPhase2[version - 1];
  Guarded ws(static_cast<size_t>(ws_size), in.below(64));
  aclrtStream stream = in.flag() ? nullptr : created_stream();
  const auto expect = [&](aclnnStatus got, aclnnStatus want, const char* what) {
    if (got != want)
      violated(std::string("phase 2 ") + what + " returned " + std::to_string(got) + ", want " +
               std::to_string(want) + ": " + aclGetRecentErrMsg());
    check_status(got, aclGetRecentErrMsg(), kOp, ifa_names(), std::string("phase 2 ") + what);
  };
  switch (in.below(8)) {  // a refused phase 2 first: the executor must stay usable
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
      const aclnnStatus got = aclnnSparseFlashAttention(ws.data(), ws_size, exec, stream);
      if (got != 161002) violated("an IFA executor in SFA phase 2 returned " + std::to_string(got));
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
    check_status(status, msg.c_str(), kOp, ifa_names(), "aclrtSynchronizeStream");
  } else if (sync != ACL_SUCCESS) {
    violated("aclrtSynchronizeStream returned " + std::to_string(sync) + ": " +
             aclGetRecentErrMsg());
  }
  f.mem.check_after(slots, true, "after the run");
  ws.check_guards("the workspace");
  check_ifa_run(f, e, status, "aclnnIncreFlashAttention");
}

}  // namespace
}  // namespace kvflash::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kvflash::fuzz::FuzzInput in(data, size);
  ++kvflash::fuzz::stats().inputs;
  kvflash::fuzz::run(in);
  return 0;
}
