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
#include "aclnn_protocol.hpp"
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
  AclnnSlots sl;
  sl.maybe_null(in);

  h.destroy_broken();
  f.mem.snapshot(slots);
  aclnnStatus st = 0;
  switch (version) {
    case 1:
      st = aclnnIncreFlashAttentionGetWorkspaceSize(q, k, v, pse, mask, asl, a.num_heads,
                                                    a.scale_value, layout, a.num_key_value_heads,
                                                    out, sl.ws_slot, sl.exec_slot);
      break;
    case 2:
      st = aclnnIncreFlashAttentionV2GetWorkspaceSize(
          q, k, v, pse, mask, asl, dq1, q1, dq2, qs2, qo2, a.num_heads, a.scale_value, layout,
          a.num_key_value_heads, out, sl.ws_slot, sl.exec_slot);
      break;
    case 3:
      st = aclnnIncreFlashAttentionV3GetWorkspaceSize(
          q, k, v, pse, mask, asl, dq1, q1, dq2, qs2, qo2, aqs, aqo, bt, a.num_heads, a.scale_value,
          layout, a.num_key_value_heads, a.block_size, a.inner_precise, out, sl.ws_slot,
          sl.exec_slot);
      break;
    default:
      st = aclnnIncreFlashAttentionV4GetWorkspaceSize(
          q, k, v, pse, mask, asl, dq1, q1, dq2, qs2, qo2, aqs, aqo, bt, pad, a.num_heads,
          a.scale_value, layout, a.num_key_value_heads, a.block_size, a.inner_precise, out,
          sl.ws_slot, sl.exec_slot);
      break;
  }
  static constexpr AclnnPhase2 kPhase2[] = {aclnnIncreFlashAttention, aclnnIncreFlashAttentionV2,
                                            aclnnIncreFlashAttentionV3, aclnnIncreFlashAttentionV4};
  AclnnProtocol p;
  p.op = kOp;
  p.names = &ifa_names();
  p.phase2 = kPhase2[version - 1];
  p.foreign = aclnnSparseFlashAttention;
  p.affordable = [&](uint64_t ws_size) { return ifa_affordable(f, e, ws_size); };
  p.check_memory = [&](bool ran, const char* what) { f.mem.check_after(slots, ran, what); };
  p.destroy_handles = [&] { h.destroy_all(); };
  AclnnPhase1 phase1;
  phase1.status = st;
  phase1.null_required = !q || !k || !v || !out || !layout;
  phase1.broken = broken;
  const std::optional<AclnnRun> run = drive_aclnn(in, p, phase1, sl);
  if (run) check_ifa_run(f, e, run->status, "aclnnIncreFlashAttention");
}

}  // namespace
}  // namespace kvflash::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kvflash::fuzz::FuzzInput in(data, size);
  ++kvflash::fuzz::stats().inputs;
  kvflash::fuzz::run(in);
  return 0;
}
