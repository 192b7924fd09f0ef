// Fuzz target: aclnnLightningIndexer through the C API, both phases and the stream. The
// invariants are those of fuzz_sfa_aclnn.cpp, for the indexer (docs/testing.md): documented
// statuses with a message naming an argument, *executor null on failure, nothing written but the
// outputs and the workspace, 507015 at synchronisation exactly when the device data is bad, and
// the fp64 reference's result.
#include <cstdint>
#include <string>

#include "acl/acl.h"
#include "acl_handles.hpp"
#include "aclnnop/aclnn_lightning_indexer.h"
#include "aclnnop/aclnn_sparse_flash_attention.h"
#include "fuzz_input.hpp"
#include "harness.hpp"
#include "li_fuzz.hpp"

namespace kvflash::fuzz {
namespace {

constexpr const char* kOp = "lightning_indexer";

aclrtStream created_stream() {
  static aclrtStream s = [] {
    aclrtStream h = nullptr;
    if (aclrtCreateStream(&h) != ACL_SUCCESS) violated("aclrtCreateStream failed");
    return h;
  }();
  return s;
}

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
  uint64_t ws_size = 12345;
  aclOpExecutor* exec = reinterpret_cast<aclOpExecutor*>(uintptr_t{0xdead0});
  uint64_t* ws_slot = in.rare(32) ? nullptr : &ws_size;
  aclOpExecutor** exec_slot = in.rare(32) ? nullptr : &exec;

  h.destroy_broken();
  f.mem.snapshot(slots);
  const aclnnStatus st = aclnnLightningIndexerGetWorkspaceSize(
      q, k, w, lq, lk, bt, layout_q, layout_k, a.sparse_count, a.sparse_mode, a.pre_tokens,
      a.next_tokens, a.return_value, si, sv, ws_slot, exec_slot);
  check_status(st, aclGetRecentErrMsg(), kOp, li_names(), "phase 1");
  const bool null_required =
      !q || !k || !w || !si || !ws_slot || !exec_slot || (a.return_value && !sv);
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
  if (!li_affordable(f, e, ws_size)) {
    if (aclDestroyAclOpExecutor(exec) != 0)
      violated("aclDestroyAclOpExecutor of a live executor failed");
    ++stats().planned_only;
    f.mem.check_after(slots, false, "planned only");
    return;
  }
  if (in.rare(3)) h.destroy_all();

  Guarded ws(static_cast<size_t>(ws_size), in.below(64));
  aclrtStream stream = in.flag() ? nullptr : created_stream();
  const auto expect = [&](aclnnStatus got, aclnnStatus want, const char* what) {
    if (got != want)
      violated(std::string("phase 2 ") + what + " returned " + std::to_string(got) + ", want " +
               std::to_string(want) + ": " + aclGetRecentErrMsg());
    check_status(got, aclGetRecentErrMsg(), kOp, li_names(), std::string("phase 2 ") + what);
  };
  switch (in.below(6)) {
    case 0:
      if (ws_size > 0)
        expect(aclnnLightningIndexer(ws.data(), ws_size - 1, exec, stream), 161002,
               "small workspace");
      break;
    case 1:
      if (ws_size > 0)
        expect(aclnnLightningIndexer(nullptr, ws_size, exec, stream), 161001, "null workspace");
      break;
    case 2: {
      const aclnnStatus got = aclnnSparseFlashAttention(ws.data(), ws_size, exec, stream);
      if (got != 161002)
        violated("an indexer executor in SFA phase 2 returned " + std::to_string(got));
      break;
    }
    default:
      break;
  }
  expect(aclnnLightningIndexer(ws.data(), ws_size, exec, stream), 0, "");
  if (in.rare(4))
    expect(aclnnLightningIndexer(ws.data(), ws_size, exec, stream), 161002, "(consumed executor)");
  const aclError sync = aclrtSynchronizeStream(stream);
  int64_t status = 0;
  std::string msg;
  if (sync == ACL_ERROR_RT_AICORE_EXCEPTION) {
    status = 161002;
    msg = aclGetRecentErrMsg();
    if (msg.find("status 161002") == std::string::npos)
      violated("aclrtSynchronizeStream returned 507015 with message '" + msg + "'");
    check_status(status, msg.c_str(), kOp, li_names(), "aclrtSynchronizeStream");
  } else if (sync != ACL_SUCCESS) {
    violated("aclrtSynchronizeStream returned " + std::to_string(sync) + ": " +
             aclGetRecentErrMsg());
  }
  f.mem.check_after(slots, true, "after the run");
  ws.check_guards("the workspace");
  check_li_run(f, e, status, msg, "aclnnLightningIndexer");
}

}  // namespace
}  // namespace kvflash::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kvflash::fuzz::FuzzInput in(data, size);
  ++kvflash::fuzz::stats().inputs;
  kvflash::fuzz::run(in);
  return 0;
}
