// Fuzz target: aclnnLightningIndexer through the C API, both phases and the stream. The
// invariants are those of fuzz_sfa_aclnn.cpp, for the indexer (docs/testing.md): documented
// statuses with a message naming an argument, the two-phase protocol (aclnn_protocol.hpp),
// nothing written but the outputs and the workspace, 507015 at synchronisation exactly when the
// device data is bad, and the fp64 reference's result.
#include <cstdint>
#include <string>

#include "acl/acl.h"
#include "acl_handles.hpp"
#include "aclnn_protocol.hpp"
#include "aclnnop/aclnn_lightning_indexer.h"
#include "aclnnop/aclnn_sparse_flash_attention.h"
#include "fuzz_input.hpp"
#include "harness.hpp"
#include "li_fuzz.hpp"

namespace kvflash::fuzz {
namespace {

constexpr const char* kOp = "lightning_indexer";

void run(FuzzInput& in) {
  LiFuzzCase f;
  if (!decode_li(in, /*extensions=*/false, &f)) {
    ++stats().skipped;
    return;
  }
  add_context("aclnn");
  LightningIndexerArgs& a = f.args;
  for (TensorView* t : {&a.query, &a.key, &a.weights, &a.sparse_indices}) t->device = Device{};
  for (auto* o :
       {&a.actual_seq_lengths_query, &a.actual_seq_lengths_key, &a.block_table, &a.sparse_values})
    if (*o) (*o)->device = Device{};
  LightningIndexerArgs e = a;  // what the library sees
  if (!e.return_value) e.sparse_values.reset();
  std::vector<Slot> slots = f.slots();
  if (!a.return_value && a.sparse_values) f.mem.forbid(&*a.sparse_values);  // not looked at

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
  const aclTensor* w = req(a.weights, "weights");
  const aclTensor* lq =
      opt(a.actual_seq_lengths_query, e.actual_seq_lengths_query, "actual_seq_lengths_query", true);
  const aclTensor* lk =
      opt(a.actual_seq_lengths_key, e.actual_seq_lengths_key, "actual_seq_lengths_key", false);
  const aclTensor* bt = opt(a.block_table, e.block_table, "block_table", true);
  const aclTensor* si = req(a.sparse_indices, "sparse_indices");
  const aclTensor* sv = opt(a.sparse_values, e.sparse_values, "sparse_values", a.return_value);
  // A null layout means "BSND" (the parameters are *Optional).
  std::string lq_buf = a.layout_query, lk_buf = a.layout_key;
  char* layout_q = lq_buf == "BSND" && in.rare(4) ? nullptr : lq_buf.data();
  char* layout_k = lk_buf == "BSND" && in.rare(4) ? nullptr : lk_buf.data();
  AclnnSlots sl;
  sl.maybe_null(in);

  h.destroy_broken();
  f.mem.snapshot(slots);
  const aclnnStatus st = aclnnLightningIndexerGetWorkspaceSize(
      q, k, w, lq, lk, bt, layout_q, layout_k, a.sparse_count, a.sparse_mode, a.pre_tokens,
      a.next_tokens, a.return_value, si, sv, sl.ws_slot, sl.exec_slot);
  AclnnProtocol p;
  p.op = kOp;
  p.names = &li_names();
  p.phase2 = aclnnLightningIndexer;
  p.foreign = aclnnSparseFlashAttention;
  p.affordable = [&](uint64_t ws_size) { return li_affordable(f, e, ws_size); };
  p.check_memory = [&](bool ran, const char* what) { f.mem.check_after(slots, ran, what); };
  p.destroy_handles = [&] { h.destroy_all(); };
  AclnnPhase1 phase1;
  phase1.status = st;
  phase1.null_required = !q || !k || !w || !si || (a.return_value && !sv);
  phase1.broken = broken;
  const std::optional<AclnnRun> run = drive_aclnn(in, p, phase1, sl);
  if (run) check_li_run(f, e, run->status, run->message, "aclnnLightningIndexer");
}

}  // namespace
}  // namespace kvflash::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kvflash::fuzz::FuzzInput in(data, size);
  ++kvflash::fuzz::stats().inputs;
  kvflash::fuzz::run(in);
  return 0;
}
