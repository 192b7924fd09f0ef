// Fuzz target: aclnnScatterPaKvCache through the C API, both phases and the stream, over mutated
// cases (kv_cache_fuzz.hpp), with the two-phase protocol's invariants (aclnn_protocol.hpp):
// documented statuses with a message naming an argument, nothing written but the caches and the
// workspace, 507015 at synchronisation exactly when the slots are bad (caches unchanged), the
// oracle's bytes otherwise. Null modes mean "Norm" / "None"; a 0-D value pair is the key only.
#include <cstdint>
#include <string>

#include "acl/acl.h"
#include "acl_handles.hpp"
#include "aclnn_protocol.hpp"
#include "aclnnop/aclnn_lightning_indexer.h"
#include "aclnnop/aclnn_scatter_pa_kv_cache.h"
#include "fuzz_input.hpp"
#include "harness.hpp"
#include "kv_cache_fuzz.hpp"

namespace kvflash::fuzz {
namespace {

constexpr const char* kOp = "scatter_pa_kv_cache";

void run(FuzzInput& in) {
  KvCacheFuzzCase f;
  decode_kv_cache(in, /*extensions=*/false, &f);
  add_context("aclnn");
  ScatterPaKvCacheArgs& a = f.args;
  std::vector<Slot> slots = f.slots();
  AclHandles h;
  bool broken = false;
  const auto req = [&](const TensorView& v, const char* name) {
    return h.maybe_break(in, h.tensor(in, v, name), &broken);
  };
  const aclTensor* key = req(a.key, "key");
  const aclTensor* kc = req(a.key_cache, "key_cache");
  const aclTensor* sm = req(a.slot_mapping, "slot_mapping");
  // The key only: 0-D value handles (upstream's scenario 6).
  const TensorView zero_d = TensorView::contiguous(a.key.data, a.key.dtype, {});
  const aclTensor* v = a.value ? req(*a.value, "value") : h.tensor(in, zero_d, "value");
  const aclTensor* vc = a.value_cache ? req(*a.value_cache, "value_cache")
                        : a.value     ? nullptr
                                      : h.tensor(in, zero_d, "value_cache");
  const aclTensor* seq = h.optional(in, a.seq_lens, "seq_lens");
  aclIntArray* strides = h.int_array(in, a.strides);
  std::string cm = a.cache_mode, sc = a.scatter_mode;
  char* cache_mode = cm == "Norm" && in.flag() ? nullptr : cm.data();
  char* scatter_mode = sc == "None" && in.flag() ? nullptr : sc.data();
  AclnnSlots sl;
  sl.maybe_null(in);
  h.destroy_broken();
  f.mem.snapshot(slots);
  const aclnnStatus st = aclnnScatterPaKvCacheGetWorkspaceSize(
      key, const_cast<aclTensor*>(kc), sm, v, const_cast<aclTensor*>(vc), nullptr, nullptr, seq,
      cache_mode, scatter_mode, strides, nullptr, sl.ws_slot, sl.exec_slot);
  // The oracle reads the caches before phase 2 writes them (phase 1 reads no tensor); only an
  // accepted call's arguments are valid for it.
  if (st == ACLNN_SUCCESS && kv_cache_affordable(f)) expect_kv_cache(f);
  AclnnProtocol p;
  p.op = kOp;
  p.names = &kv_cache_names();
  p.phase2 = aclnnScatterPaKvCache;
  p.foreign = aclnnLightningIndexer;
  p.affordable = [&](uint64_t ws_size) { return kv_cache_affordable(f) && ws_size < (1u << 26); };
  p.check_memory = [&](bool ran, const char* what) { f.mem.check_after(slots, ran, what); };
  p.destroy_handles = [&] { h.destroy_all(); };
  AclnnPhase1 phase1;
  phase1.status = st;
  phase1.null_required = !key || !kc || !sm || !v || !vc;
  phase1.broken = broken;
  const std::optional<AclnnRun> run = drive_aclnn(in, p, phase1, sl);
  if (run) check_kv_cache_run(f, run->status, run->message, "aclnnScatterPaKvCache");
}

}  // namespace
}  // namespace kvflash::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kvflash::fuzz::FuzzInput in(data, size);
  ++kvflash::fuzz::stats().inputs;
  kvflash::fuzz::run(in);
  return 0;
}
