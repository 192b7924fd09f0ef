// Fuzz target: the merge operator's C++ API (MergePlan: create, run, reuse; and the one-shot
// merge_attention_states).
//
// The input describes a small valid merge (K parts, 0 to 2 row dims, D, the lse or max/sum form,
// a sink, the dtypes, padded or broadcast input strides, which outputs are given, the thread
// count), then mutates it: metadata of any tensor (mutate_view), optional tensors added or
// removed, NaN / inf written into the inputs. Some inputs give the parts as the list form
// (partial_out_list / partial_lse_list: K tensors in memory of their own, aclnnAttentionUpdate's).
//
// Invariants (docs/testing.md): create returns a documented status with a message naming an
// argument and leaves *plan empty on failure; a run with other metadata than the plan's is refused
// and writes nothing; inputs are unchanged and nothing outside an output is written; a run at
// another thread count and the one-shot call give the same status and bits; and the outputs match
// the fp64 reference (reference/merge_reference.hpp) within the documented tolerance, non-finite
// values exactly.
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/strings.hpp"
#include "cpu/isa.hpp"
#include "fuzz_input.hpp"
#include "harness.hpp"
#include "kvflash/merge.hpp"
#include "merge_reference.hpp"
#include "mutate.hpp"
#include "support/merge_compare.hpp"

namespace kvflash::fuzz {
namespace {

using core::str;

constexpr int64_t kHeadDims[] = {16, 1, 3, 33, 64, 130, 8, 512};
constexpr DType kDtypes[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};

const std::vector<const char*>& merge_names() {
  static const std::vector<const char*> names = {"partial_out",
                                                 "partial_lse",
                                                 "partial_max",
                                                 "partial_sum",
                                                 "sink",
                                                 "partial_out_list",
                                                 "partial_lse_list",
                                                 "out",
                                                 "out_lse",
                                                 "out_max",
                                                 "out_sum",
                                                 "num_threads",
                                                 "workspace",
                                                 "workspace_size",
                                                 "plan",
                                                 "stream"};
  return names;
}

struct MergeFuzzCase {
  MergeArgs args;
  CaseMemory mem;
  testing::TestRng rng{1};

  std::vector<Slot> slots() {
    std::vector<Slot> s;
    if (args.partial_out) s.push_back({&*args.partial_out, "partial_out", Role::kData});
    for (TensorView& v : args.partial_out_list) s.push_back({&v, "partial_out_list", Role::kData});
    for (TensorView& v : args.partial_lse_list)
      s.push_back({&v, "partial_lse_list", Role::kData, false, true});
    // Statistics may hold +-inf: -inf marks an empty part, +inf is an IEEE case of the rule.
    if (args.partial_lse)
      s.push_back({&*args.partial_lse, "partial_lse", Role::kData, false, true});
    if (args.partial_max)
      s.push_back({&*args.partial_max, "partial_max", Role::kData, false, true});
    // Sums are positive (a refill keeps them so: sums of opposite signs would cancel, which no
    // attention operator produces and fp32 cannot follow).
    if (args.partial_sum)
      s.push_back({&*args.partial_sum, "partial_sum", Role::kQuantScale, false, true});
    if (args.sink) s.push_back({&*args.sink, "sink", Role::kSink, false, true});
    s.push_back({&args.out, "out", Role::kOutput, true});
    if (args.out_lse) s.push_back({&*args.out_lse, "out_lse", Role::kOutput, true});
    if (args.out_max) s.push_back({&*args.out_max, "out_max", Role::kOutput, true});
    if (args.out_sum) s.push_back({&*args.out_sum, "out_sum", Role::kOutput, true});
    return s;
  }
};

// An input in fresh memory: contiguous, or with its innermost dim padded, or broadcasting dim 1
// (stride 0), or (when its dim 0 may shrink: partial_out's K) at an offset.
TensorView input(FuzzInput& in, MergeFuzzCase& f, DType dtype, std::vector<int64_t> shape,
                 Role role, bool dim0_may_shrink) {
  const uint32_t how = in.below(6);
  std::vector<int64_t> alloc = shape;
  const int rank = static_cast<int>(shape.size());
  if (how == 1 && rank >= 1) alloc[rank - 1] += 3;  // padded innermost rows
  TensorView v = f.mem.make(dtype, alloc, role, f.rng);
  for (int i = 0; i < rank; ++i) v.shape[i] = shape[i];
  if (how == 2 && rank >= 2 && shape[1] > 1) {  // dim 1 broadcast
    v.strides[1] = 0;
  } else if (how == 3 && dim0_may_shrink && alloc[0] > 1) {  // an offset into the same memory
    v.shape[0] = alloc[0] - 1;
    v.offset = v.strides[0];
  }
  return v;
}

bool decode(FuzzInput& in, MergeFuzzCase* f) {
  MergeArgs& a = f->args;
  const int64_t K = in.in(1, 5);
  std::vector<int64_t> rows;
  for (int i = static_cast<int>(in.below(3)); i > 0; --i) rows.push_back(in.in(0, 5));
  const int64_t D = kHeadDims[in.below(8)];
  const bool lse_form = in.flag();
  const bool sink = in.rare(3);
  const DType part_dtype = kDtypes[in.below(3)];
  const DType out_dtype = kDtypes[in.below(3)];
  f->rng = testing::TestRng(in.u64() | 1);
  set_context("merge K" + str(K) + " rows" + core::dims_str(rows) + " D" + str(D) +
              (lse_form ? " lse" : " max/sum") + (sink ? " sink" : "") +
              " in=" + dtype_name(part_dtype) + " out=" + dtype_name(out_dtype));

  std::vector<int64_t> po_shape{K}, stat_shape{K}, out_shape = rows;
  po_shape.insert(po_shape.end(), rows.begin(), rows.end());
  stat_shape.insert(stat_shape.end(), rows.begin(), rows.end());
  po_shape.push_back(D);
  out_shape.push_back(D);
  // Keep the shapes of partial_out and the statistics consistent: an offset view drops one part
  // of the first tensor only if every tensor starts from the same K.
  a.partial_out = input(in, *f, part_dtype, po_shape, Role::kData, true);
  const int64_t k_used = a.partial_out->shape[0];
  stat_shape[0] = k_used;
  if (lse_form) {
    a.partial_lse = f->mem.make(DType::kFloat32, stat_shape, Role::kData, f->rng);
  } else {
    a.partial_max = f->mem.make(DType::kFloat32, stat_shape, Role::kData, f->rng);
    a.partial_sum = f->mem.make(DType::kFloat32, stat_shape, Role::kQuantScale, f->rng);
  }
  if (sink) a.sink = input(in, *f, DType::kFloat32, rows, Role::kSink, false);
  // The list form: each part in memory of its own (the lse form's statistics).
  if (lse_form && in.rare(3)) {
    std::vector<int64_t> part_shape = rows;
    part_shape.push_back(D);
    for (int64_t k = 0; k < K; ++k) {
      a.partial_out_list.push_back(input(in, *f, part_dtype, part_shape, Role::kData, false));
      a.partial_lse_list.push_back(f->mem.make(DType::kFloat32, rows, Role::kData, f->rng));
      for (int64_t e = 0, n = safe_numel(a.partial_lse_list.back()); e < n && in.rare(4); ++e)
        store_element_flat(a.partial_lse_list.back(), e, -__builtin_inf());  // empty parts
    }
    a.partial_out.reset();
    a.partial_lse.reset();
    add_context("list form");
  }
  // Empty parts: some lse -inf (or sum 0), as a shard with nothing to attend leaves them.
  const TensorView& stat = !a.partial_lse_list.empty() ? a.partial_lse_list[0]
                           : lse_form                  ? *a.partial_lse
                                                       : *a.partial_sum;
  const int64_t n_stat = safe_numel(stat);
  for (int n = static_cast<int>(in.below(4)); n > 0 && n_stat > 0; --n) {
    const int64_t e = in.below(static_cast<uint32_t>(n_stat));
    store_element_flat(stat, e, lse_form ? -__builtin_inf() : 0.0);
  }
  // Outputs get their guarded buffers below (guard_output); until then any non-null pointer.
  static std::byte placeholder;
  a.out = TensorView::contiguous(&placeholder, out_dtype, out_shape);
  if (in.flag()) a.out_lse = TensorView::contiguous(&placeholder, DType::kFloat32, rows);
  if (in.flag()) {
    a.out_max = TensorView::contiguous(&placeholder, DType::kFloat32, rows);
    a.out_sum = TensorView::contiguous(&placeholder, DType::kFloat32, rows);
  }
  a.num_threads = static_cast<int>(in.below(5));

  // ---- structural mutations ------------------------------------------------------------------
  for (int n = static_cast<int>(in.below(3)); n > 0; --n) {
    switch (in.below(8)) {
      case 0:  // both forms
        a.partial_lse = f->mem.make(DType::kFloat32, stat_shape, Role::kData, f->rng);
        a.partial_max = f->mem.make(DType::kFloat32, stat_shape, Role::kData, f->rng);
        a.partial_sum = f->mem.make(DType::kFloat32, stat_shape, Role::kQuantScale, f->rng);
        add_context("both forms");
        break;
      case 1:  // neither form
        a.partial_lse.reset();
        a.partial_max.reset();
        a.partial_sum.reset();
        add_context("no statistics");
        break;
      case 2:  // half of the max/sum pair
        if (a.partial_sum) a.partial_sum.reset();
        add_context("-partial_sum");
        break;
      case 3:
        a.out_sum.reset();
        add_context("-out_sum");
        break;
      case 4:
        a.sink.reset();
        add_context("-sink");
        break;
      case 6:  // a list one entry short
        if (a.partial_lse_list.size() > 1) {
          a.partial_lse_list.pop_back();
          add_context("-partial_lse_list[K-1]");
        }
        break;
      case 5:
        a.num_threads = static_cast<int>(in.special(2));
        add_context("threads=" + str(a.num_threads));
        break;
      default:
        break;
    }
  }
  // ---- outputs in guarded memory, metadata mutations, non-finite values -----------------------
  for (const Slot& slot : f->slots())
    if (slot.output) f->mem.guard_output(slot, in.below(8));
  // At most two: merge has no device backend, so moving every tensor to another device would
  // only be refused for want of a backend (and merges have at least three tensors).
  for (int n = static_cast<int>(in.below(3)); n > 0; --n) {
    std::vector<Slot> s = f->slots();
    add_context(mutate_view(in, s[in.below(static_cast<uint32_t>(s.size()))], f->mem, f->rng));
  }
  for (int n = static_cast<int>(in.below(3)); n > 0; --n) {
    std::vector<Slot> s = f->slots();
    const Slot& slot = s[in.below(static_cast<uint32_t>(s.size()))];
    if (!slot.output) add_context(inject_nonfinite(in, slot));
  }
  return true;
}

// Bytes of every output a call may write.
/// The outputs' bytes; with nan_class every NaN element replaced by one quiet NaN (which payload
/// survives where two NaNs meet depends on the instruction-set level: docs/perf-log.md, "The
/// merge operator at memory speed").
std::vector<std::byte> output_bytes(const MergeArgs& a, bool nan_class = false) {
  std::vector<std::byte> b;
  for (const TensorView* v :
       {&a.out, a.out_lse ? &*a.out_lse : nullptr, a.out_max ? &*a.out_max : nullptr,
        a.out_sum ? &*a.out_sum : nullptr}) {
    if (v == nullptr || v->data == nullptr) continue;
    const auto* p = static_cast<const std::byte*>(v->data);
    const size_t es = dtype_size(v->dtype), start = b.size();
    b.insert(b.end(), p, p + safe_numel(*v) * static_cast<int64_t>(es));
    for (size_t i = start; nan_class && i + es <= b.size(); i += es) {
      if (es == 4) {
        uint32_t u;
        std::memcpy(&u, &b[i], 4);
        if ((u & 0x7fffffffu) > 0x7f800000u) u = 0x7fc00000u;
        std::memcpy(&b[i], &u, 4);
      } else {
        uint16_t h;
        std::memcpy(&h, &b[i], 2);
        const uint16_t inf = v->dtype == DType::kBFloat16 ? 0x7f80u : 0x7c00u;
        if ((h & 0x7fffu) > inf) h = 0x7fffu;
        std::memcpy(&b[i], &h, 2);
      }
    }
  }
  return b;
}

bool affordable(const MergeFuzzCase& f, const MergeArgs& a) {
  if (f.mem.unbacked) return false;
  int64_t parts = a.partial_out ? safe_numel(*a.partial_out) : 0;
  for (const TensorView& v : a.partial_out_list) {
    const int64_t n = safe_numel(v);
    parts = parts < 0 || n < 0 ? -1 : sat_add(parts, n);
  }
  const int64_t out = safe_numel(a.out);
  return parts >= 0 && parts <= (int64_t{1} << 22) && out >= 0 && out <= (int64_t{1} << 20);
}

void run(FuzzInput& in, MergeFuzzCase& f) {
  MergeArgs& a = f.args;
  const char* op = "merge_attention_states";
  std::vector<Slot> slots = f.slots();
  f.mem.snapshot(slots);
  std::unique_ptr<MergePlan> plan;
  const Status st = MergePlan::create(a, &plan);
  check_status(static_cast<int64_t>(st), last_error_message(), op, merge_names(), "create");
  if (st != Status::kSuccess) {
    if (plan) violated("create failed but set *plan");
    ++stats().refused;
    f.mem.check_after(slots, false, "create failed");
    // The one-shot call validates the same way (and so reads no data either).
    const Status once = merge_attention_states(a);
    if (once != st)
      violated("merge_attention_states returned " + str(static_cast<int64_t>(once)) +
               " where create returned " + str(static_cast<int64_t>(st)));
    f.mem.check_after(slots, false, "one-shot after a failed create");
    return;
  }
  if (!plan) violated("create succeeded without a plan");
  if (!affordable(f, a)) {
    ++stats().planned_only;
    f.mem.check_after(slots, false, "planned only");
    return;
  }
  Guarded ws(static_cast<size_t>(plan->workspace_size()), in.below(64));
  if (in.rare(4)) {  // a run with other metadata: refused, nothing written
    MergeArgs other = a;
    TensorView& po = other.partial_out ? *other.partial_out : other.partial_out_list[0];
    // An empty partial_out matches whatever its strides, offset and pointer: only its dtype then.
    const uint32_t how = safe_numel(po) > 0 ? in.below(4) : 3;
    switch (how) {
      case 0:
        po.strides[0] = another_value(po.strides[0]);
        break;
      case 1:
        po.offset = another_value(po.offset);
        break;
      case 2:
        po.data = nullptr;
        break;
      default:
        po.dtype = po.dtype == DType::kFloat32 ? DType::kFloat16 : DType::kFloat32;
        break;
    }
    const Status rs = plan->run(other, ws.data(), ws.size());
    check_status(static_cast<int64_t>(rs), last_error_message(), op, merge_names(),
                 "mismatched run");
    if (rs == Status::kSuccess) violated("a run with other metadata than the plan's succeeded");
    f.mem.check_after(slots, false, "mismatched run");
  }
  const Status rs = plan->run(a, ws.data(), ws.size());
  check_status(static_cast<int64_t>(rs), last_error_message(), op, merge_names(), "run");
  if (rs != Status::kSuccess)
    violated("a planned merge failed to run: " + std::string(last_error_message()));
  f.mem.check_after(slots, true, "run");
  ws.check_guards("the workspace");
  ++stats().ran;
  const std::vector<std::byte> first = output_bytes(a);
  // The same bits at another thread count, and from the one-shot call.
  MergeArgs again = a;
  again.num_threads = static_cast<int>(1 + (int64_t{a.num_threads} + 1 + in.below(3)) % 4);
  if (plan->run(again, ws.data(), ws.size()) != Status::kSuccess)
    violated("the run at " + str(again.num_threads) + " threads failed");
  if (output_bytes(a) != first)
    violated("the outputs differ between " + str(a.num_threads) + " and " + str(again.num_threads) +
             " threads");
  if (merge_attention_states(a) != Status::kSuccess) violated("the one-shot merge failed");
  if (output_bytes(a) != first) violated("the one-shot merge gave other bits than the plan");
  // The portable level gives the same bits as the active one (the AVX2 / AVX-512 row kernels,
  // cpu/merge/merge_rows.hpp), NaNs taken as one class.
  const std::vector<std::byte> classed = output_bytes(a, true);
  cpu::set_isa_cap(cpu::Isa::kScalar);
  const Status scalar_status = merge_attention_states(a);
  cpu::set_isa_cap(std::nullopt);
  if (scalar_status != Status::kSuccess) violated("the merge at the scalar level failed");
  if (output_bytes(a, true) != classed) violated("the scalar level gave other bits");
  if (plan->status(ws.data()) != Status::kSuccess) violated("status() of a merge plan failed");
  f.mem.check_after(slots, true, "second runs");
  const ::testing::AssertionResult r =
      testing::compare_merge_output(context(), a, reference::merge_reference(a));
  if (!r) violated("the output differs from the fp64 reference: " + std::string(r.message()));
  ++stats().compared;
}

}  // namespace
}  // namespace kvflash::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kvflash::fuzz;
  FuzzInput in(data, size);
  ++stats().inputs;
  MergeFuzzCase f;
  if (decode(in, &f)) run(in, f);
  return 0;
}
