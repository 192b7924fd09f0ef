// Fuzz target: aclnnAttentionUpdate through the C API, both phases and the stream.
//
// The input describes a small valid update (sp parts of [rows..., D] in memory of their own with
// their fp32 lse, some parts empty (-inf), the dtype, updateType), then mutates it: any tensor's
// metadata (mutate_view), a list one entry short, updateType, lseOut given or not, out's dtype,
// non-finite values. Invariants: the two-phase protocol's (aclnn_protocol.hpp), documented
// statuses naming an argument, inputs unchanged and nothing written outside out / lseOut, and an
// accepted call's outputs those of the fp64 merge oracle (reference/merge_reference.hpp, the list
// form) within the merge's tolerance.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnn_protocol.hpp"
#include "aclnnop/aclnn_attention_update.h"
#include "aclnnop/aclnn_lightning_indexer.h"
#include "core/strings.hpp"
#include "fia_acl_handles.hpp"
#include "fuzz_input.hpp"
#include "harness.hpp"
#include "kvflash/merge.hpp"
#include "merge_reference.hpp"
#include "mutate.hpp"
#include "support/merge_compare.hpp"

namespace kvflash::fuzz {
namespace {

constexpr const char* kOp = "attention_update";
constexpr DType kDtypes[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};

const std::vector<const char*>& names() {
  static const std::vector<const char*> n = {
      "lse",    "localOut",         "updateType",       "out",
      "lseOut", "workspace",        "workspaceSize",    "executor",
      "stream", "partial_out_list", "partial_lse_list", "out_lse"};
  return n;
}

struct Case {
  MergeArgs args;
  int64_t update_type = 0;
  CaseMemory mem;
  testing::TestRng rng{1};
  std::vector<Slot> slots() {
    std::vector<Slot> s;
    for (TensorView& v : args.partial_out_list) s.push_back({&v, "localOut", Role::kData});
    for (TensorView& v : args.partial_lse_list) s.push_back({&v, "lse", Role::kData, false, true});
    s.push_back({&args.out, "out", Role::kOutput, true});
    if (args.out_lse) s.push_back({&*args.out_lse, "lseOut", Role::kOutput, true});
    return s;
  }
};

void decode(FuzzInput& in, Case* f) {
  MergeArgs& a = f->args;
  const int64_t sp = in.in(1, 5);
  std::vector<int64_t> rows;
  for (int i = static_cast<int>(in.below(3)); i > 0; --i) rows.push_back(in.in(0, 6));
  const int64_t D = 8 * in.in(1, 6) + (in.rare(4) ? 1 : 0);
  const DType dt = kDtypes[in.below(3)];
  f->update_type = in.flag() ? 1 : 0;
  f->rng = testing::TestRng(in.u64() | 1);
  set_context("update sp" + core::str(sp) + " rows" + core::dims_str(rows) + " D" + core::str(D) +
              " " + dtype_name(dt) + " type" + core::str(f->update_type));
  std::vector<int64_t> part = rows;
  part.push_back(D);
  for (int64_t k = 0; k < sp; ++k) {
    a.partial_out_list.push_back(f->mem.make(dt, part, Role::kData, f->rng));
    a.partial_lse_list.push_back(f->mem.make(DType::kFloat32, rows, Role::kData, f->rng));
    const TensorView& l = a.partial_lse_list.back();
    for (int64_t e = 0, n = safe_numel(l); e < n; ++e)
      if (in.rare(4)) store_element_flat(l, e, -__builtin_inf());  // an empty part
  }
  static std::byte placeholder;
  a.out = TensorView::contiguous(&placeholder, dt, part);
  if (f->update_type == 1) a.out_lse = TensorView::contiguous(&placeholder, DType::kFloat32, rows);
  for (int n = static_cast<int>(in.below(3)); n > 0; --n) {
    switch (in.below(5)) {
      case 0:
        f->update_type = in.special(1);
        add_context("updateType=" + core::str(f->update_type));
        break;
      case 1:
        if (a.out_lse) {
          a.out_lse.reset();
        } else {
          a.out_lse = TensorView::contiguous(&placeholder, DType::kFloat32, rows);
        }
        add_context("lseOut toggled");
        break;
      case 2:
        if (a.partial_lse_list.size() > 1) a.partial_lse_list.pop_back();
        add_context("lse one short");
        break;
      case 3:
        a.out.dtype = kDtypes[in.below(3)];
        add_context(std::string("out ") + dtype_name(a.out.dtype));
        break;
      default:
        break;
    }
  }
  for (const Slot& slot : f->slots())
    if (slot.output) f->mem.guard_output(slot, in.below(8));
  for (int n = static_cast<int>(in.below(3)); n > 0; --n) {
    std::vector<Slot> s = f->slots();
    add_context(mutate_view(in, s[in.below(static_cast<uint32_t>(s.size()))], f->mem, f->rng));
  }
  for (int n = static_cast<int>(in.below(2)); n > 0; --n) {
    std::vector<Slot> s = f->slots();
    const Slot& slot = s[in.below(static_cast<uint32_t>(s.size()))];
    if (!slot.output) add_context(inject_nonfinite(in, slot));
  }
}

void run(FuzzInput& in) {
  Case f;
  decode(in, &f);
  add_context("aclnn");
  MergeArgs& a = f.args;
  std::vector<Slot> slots = f.slots();
  FiaAclHandles h;
  aclTensorList* lse = h.list(a.partial_lse_list);
  aclTensorList* local = h.list(a.partial_out_list);
  aclTensor* out = h.make(a.out);
  aclTensor* lse_out = h.opt(a.out_lse);
  // What the call is given: a view with null data is passed as a null lseOut, which is then not
  // written (nor compared).
  if (lse_out == nullptr) a.out_lse.reset();
  AclnnSlots sl;
  sl.maybe_null(in);
  f.mem.snapshot(slots);
  const aclnnStatus st = aclnnAttentionUpdateGetWorkspaceSize(lse, local, f.update_type, out,
                                                              lse_out, sl.ws_slot, sl.exec_slot);
  // The oracle of an accepted call (a valid list form), before phase 2 writes anything.
  std::optional<reference::MergeReference> ref;
  if (st == ACLNN_SUCCESS && !f.mem.unbacked) ref = reference::merge_reference(a);
  AclnnProtocol p;
  p.op = kOp;
  p.names = &names();
  p.phase2 = aclnnAttentionUpdate;
  p.foreign = aclnnLightningIndexer;
  p.affordable = [&](uint64_t) { return !f.mem.unbacked; };
  p.check_memory = [&](bool ran, const char* what) { f.mem.check_after(slots, ran, what); };
  p.destroy_handles = [&] { h.destroy_all(); };
  AclnnPhase1 phase1;
  phase1.status = st;
  // The merge's own validation names it (the list form of merge_attention_states).
  const std::string msg = aclGetRecentErrMsg();
  phase1.op = msg.rfind("[merge_attention_states]", 0) == 0 ? "merge_attention_states" : kOp;
  phase1.null_required = !lse || !local || !out;
  const std::optional<AclnnRun> r = drive_aclnn(in, p, phase1, sl);
  if (!r) return;
  if (r->status != 0) violated("a planned update failed: " + r->message);
  ++stats().ran;
  const ::testing::AssertionResult c = testing::compare_merge_output(context(), a, *ref);
  if (!c) violated("the output differs from the fp64 reference: " + std::string(c.message()));
  ++stats().compared;
}

}  // namespace
}  // namespace kvflash::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kvflash::fuzz::FuzzInput in(data, size);
  ++kvflash::fuzz::stats().inputs;
  kvflash::fuzz::run(in);
  return 0;
}
