// Fuzz target: aclnnSparseFlashAttention V1/V2 through the C API, both phases and the stream.
// The invariants are those of fuzz_ifa_aclnn.cpp, for SFA (docs/testing.md).
#include <cstdint>
#include <string>

#include "acl/acl.h"
#include "acl_handles.hpp"
#include "aclnn_protocol.hpp"
#include "aclnnop/aclnn_incre_flash_attention.h"
#include "aclnnop/aclnn_sparse_flash_attention.h"
#include "aclnnop/aclnn_sparse_flash_attention_v2.h"
#include "fuzz_input.hpp"
#include "harness.hpp"
#include "sfa_fuzz.hpp"

namespace kvflash::fuzz {
namespace {

constexpr const char* kOp = "sparse_flash_attention";

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
  AclnnSlots sl;
  sl.maybe_null(in);

  h.destroy_broken();
  f.mem.snapshot(slots);
  const aclnnStatus st =
      version == 1
          ? aclnnSparseFlashAttentionGetWorkspaceSize(
                q, k, v, si, bt, lq, lkv, qr, kr, a.scale_value, a.sparse_block_size, layout_q,
                layout_kv, a.sparse_mode, a.pre_tokens, a.next_tokens, a.attention_mode,
                a.return_softmax_lse, out, smax, ssum, sl.ws_slot, sl.exec_slot)
          : aclnnSparseFlashAttentionV2GetWorkspaceSize(
                q, k, v, si, bt, lq, lkv, qr, kr, sinks, a.scale_value, a.sparse_block_size,
                layout_q, layout_kv, a.sparse_mode, a.pre_tokens, a.next_tokens, a.attention_mode,
                a.return_softmax_lse, out, smax, ssum, sl.ws_slot, sl.exec_slot);
  AclnnProtocol p;
  p.op = kOp;
  p.names = &sfa_names();
  p.phase2 = version == 1 ? aclnnSparseFlashAttention : aclnnSparseFlashAttentionV2;
  p.foreign = aclnnIncreFlashAttention;
  p.affordable = [&](uint64_t ws_size) { return sfa_affordable(f, e, ws_size); };
  p.check_memory = [&](bool ran, const char* what) { f.mem.check_after(slots, ran, what); };
  p.destroy_handles = [&] { h.destroy_all(); };
  AclnnPhase1 phase1;
  phase1.status = st;
  phase1.null_required = !q || !k || !si || !out || !layout_q || !layout_kv ||
                         (a.return_softmax_lse && (!smax || !ssum));
  phase1.broken = broken;
  const std::optional<AclnnRun> run = drive_aclnn(in, p, phase1, sl);
  if (run) check_sfa_run(f, e, run->status, "aclnnSparseFlashAttention");
}

}  // namespace
}  // namespace kvflash::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kvflash::fuzz::FuzzInput in(data, size);
  ++kvflash::fuzz::stats().inputs;
  kvflash::fuzz::run(in);
  return 0;
}
