#include "li_fuzz.hpp"

#include <algorithm>
#include <cstdint>

#include "core/strings.hpp"
#include "li_reference.hpp"
#include "support/li_compare.hpp"

namespace kvflash::fuzz {
namespace {

using core::str;
using testing::LiCase;
using testing::LiKLayout;
using testing::LiQLayout;
using testing::LiValues;

}  // namespace

const std::vector<const char*>& li_names() {
  static const std::vector<const char*> names = {
      "query", "key", "weights", "actual_seq_lengths_query", "actual_seq_lengths_key",
      "block_table", "layout_query", "layout_key", "sparse_count", "sparse_mode", "pre_tokens",
      "next_tokens", "return_value", "sparse_indices", "sparse_values", "num_threads", "workspace",
      "workspace_size", "plan", "stream",
      // aclnn spellings
      "actualSeqLengthsQueryOptional", "actualSeqLengthsKeyOptional", "blockTableOptional",
      "layoutQueryOptional", "layoutKeyOptional", "sparseCount", "sparseMode", "preTokens",
      "nextTokens", "returnValues", "sparseIndicesOut", "sparseValuesOut", "workspaceSize",
      "executor"};
  return names;
}

std::vector<Slot> LiFuzzCase::slots() {
  std::vector<Slot> s;
  LightningIndexerArgs& a = args;
  s.push_back({&a.query, "query", Role::kData, false, true});
  s.push_back({&a.key, "key", Role::kData, false, true});
  s.push_back({&a.weights, "weights", Role::kData, false, true});
  s.push_back({&a.sparse_indices, "sparse_indices", Role::kOutput, true, false});
  const struct {
    std::optional<TensorView>* v;
    const char* name;
    Role role;
    bool output;
  } opt[] = {{&a.actual_seq_lengths_query, "actual_seq_lengths_query", Role::kLengths, false},
             {&a.actual_seq_lengths_key, "actual_seq_lengths_key", Role::kLengths, false},
             {&a.block_table, "block_table", Role::kIds, false},
             {&a.sparse_values, "sparse_values", Role::kOutput, true}};
  for (const auto& o : opt) {
    if (o.v->has_value()) s.push_back({&**o.v, o.name, o.role, o.output, false});
  }
  return s;
}

bool decode_li(FuzzInput& in, bool extensions, LiFuzzCase* f) {
  LiCase c;
  c.q_layout = in.flag() ? LiQLayout::kTnd : LiQLayout::kBsnd;
  switch (in.below(3)) {
    case 1:
      c.k_layout = LiKLayout::kPaBsnd;
      break;
    default:
      c.k_layout = c.q_layout == LiQLayout::kTnd ? LiKLayout::kTnd : LiKLayout::kBsnd;
      break;
  }
  c.dtype = in.flag() ? DType::kBFloat16 : DType::kFloat16;
  c.w_dtype = in.flag() ? DType::kFloat32 : c.dtype;
  c.num_heads = 1 + in.below(20);
  static constexpr int64_t kCounts[] = {1, 2, 7, 16, 33, 64};
  c.sparse_count = kCounts[in.below(6)];
  const int64_t batch = 1 + in.below(3);
  c.q_lens.resize(batch);
  c.kv_lens.resize(batch);
  for (int64_t b = 0; b < batch; ++b) {
    c.q_lens[b] = (in.below(4) + 1) % 4;
    c.kv_lens[b] = (in.below(81) + 16) % 81;
  }
  c.q_slack = in.below(2);
  c.kv_slack = in.below(4);
  c.block_size = 16 * (1 + in.below(2));
  c.sparse_mode = in.flag() ? 0 : 3;
  c.pass_q_lens = !in.rare(3);
  c.pass_kv_lens = !in.rare(3);
  c.return_value = in.flag();
  c.strided = in.rare(2);
  c.values = static_cast<LiValues>(in.below(3));
  c.expect_mostly_empty = true;

  f->spec = c;
  f->data = std::make_unique<testing::LiCaseData>(c);
  f->args = f->data->call();
  f->rng = testing::TestRng(testing::fnv1a(c.name()) ^ 0x11);
  set_context(c.name());
  LightningIndexerArgs& a = f->args;
  CaseMemory& mem = f->mem;
  testing::TestRng& rng = f->rng;
  const int64_t B = batch;

  // ---- structural mutations ------------------------------------------------------------------
  for (int n = in.below(3); n > 0; --n) {
    std::string note;
    switch (in.below(8)) {
      case 0:
        a.block_table.reset();
        note = "-block_table";
        break;
      case 1:
        a.block_table = mem.make(DType::kInt32, {B, in.in(1, 3)}, Role::kIds, rng);
        note = "+block_table";
        break;
      case 2:
        a.actual_seq_lengths_query.reset();
        note = "-actual_seq_lengths_query";
        break;
      case 3:
        a.actual_seq_lengths_query = mem.make(DType::kInt32, {B}, Role::kLengths, rng);
        note = "+actual_seq_lengths_query";
        break;
      case 4:
        a.actual_seq_lengths_key.reset();
        note = "-actual_seq_lengths_key";
        break;
      case 5:
        a.actual_seq_lengths_key = mem.make(DType::kInt32, {B}, Role::kLengths, rng);
        note = "+actual_seq_lengths_key";
        break;
      case 6:
        a.return_value = !a.return_value;
        if (in.flag()) a.sparse_values.reset();
        note = std::string("return_value=") + (a.return_value ? "1" : "0");
        break;
      default:
        a.sparse_values = TensorView::contiguous(a.sparse_indices.data, a.query.dtype,
                                                 {a.sparse_indices.numel()});
        note = "+sparse_values (flat, over the indices)";
        break;
    }
    add_context(note);
  }

  // ---- attributes ----------------------------------------------------------------------------
  for (int n = in.below(3); n > 0; --n) {
    switch (in.below(7)) {
      case 0:
        a.sparse_count = in.flag() ? in.in(0, 9000) : in.special(a.sparse_count);
        break;
      case 1: {
        static const char* kLayouts[] = {"BSND", "TND", "PA_BSND", "bsnd", "BSH", "", "TND "};
        const uint32_t k = in.below(8);
        a.layout_query = k < 7 ? kLayouts[k] : in.text();
        break;
      }
      case 2: {
        static const char* kLayouts[] = {"BSND", "TND", "PA_BSND", "PA_TND", "BNSD", "", "PA"};
        const uint32_t k = in.below(8);
        a.layout_key = k < 7 ? kLayouts[k] : in.text();
        break;
      }
      case 3:
        a.sparse_mode = in.flag() ? in.in(0, 4) : in.special(3);
        break;
      case 4:
        a.pre_tokens = in.special(0);
        break;
      case 5:
        a.next_tokens = in.special(0);
        break;
      default:
        if (extensions) a.num_threads = static_cast<int>(in.special(2));
        break;
    }
    add_context("attr K=" + str(a.sparse_count) + " layouts=" + a.layout_query + "/" +
                a.layout_key + " mode=" + str(a.sparse_mode) + " threads=" + str(a.num_threads));
  }

  // ---- outputs, metadata, device data, non-finite values -------------------------------------
  for (const Slot& slot : f->slots())
    if (slot.output) mem.guard_output(slot, 0);
  for (int n = in.below(4); n > 0; --n) {
    std::vector<Slot> s = f->slots();
    const Slot& slot = s[in.below(static_cast<uint32_t>(s.size()))];
    if (!extensions && in.flag()) continue;  // aclnn: fewer metadata mutations, more handles
    add_context(mutate_view(in, slot, mem, rng));
  }
  const int64_t max_kv = *std::max_element(c.kv_lens.begin(), c.kv_lens.end());
  for (int n = in.below(4); n > 0; --n) {
    for (const Slot& slot : f->slots()) {
      if (slot.name == "block_table" && in.flag())
        add_context(poke_int(in, slot, f->data->num_blocks()));
      if (slot.name == "actual_seq_lengths_query" && in.rare(3)) add_context(poke_int(in, slot, 4));
      if (slot.name == "actual_seq_lengths_key" && in.rare(3))
        add_context(poke_int(in, slot, max_kv + 1));
    }
  }
  for (int n = in.below(3); n > 0; --n) {
    std::vector<Slot> s = f->slots();
    const Slot& slot = s[in.below(static_cast<uint32_t>(s.size()))];
    if (!slot.output) add_context(inject_nonfinite(in, slot));
  }
  return true;
}

bool li_affordable(const LiFuzzCase& f, const LightningIndexerArgs& args, uint64_t workspace_size) {
  if (f.mem.unbacked || workspace_size > (uint64_t{1} << 26)) return false;
  // Rows x keys x heads bounds the reference's work (zero-strided views may claim any size).
  const bool q_tnd = args.layout_query == "TND";
  const int64_t rows =
      q_tnd ? args.query.shape[0] : sat_mul(args.query.shape[0], args.query.shape[1]);
  const int64_t heads = args.query.shape[q_tnd ? 1 : 2];
  const TensorView& k = args.key;
  const int64_t keys = args.layout_key == "PA_BSND"
                           ? sat_mul(args.block_table->shape[1], k.shape[1])
                           : (args.layout_key == "TND" ? k.shape[0] : k.shape[1]);
  return rows <= 4096 && sat_mul(sat_mul(rows, keys), heads) <= (int64_t{1} << 22);
}

void check_li_run(LiFuzzCase& f, const LightningIndexerArgs& args, int64_t status,
                  const std::string& message, const std::string& where) {
  ++stats().ran;
  const reference::LiReference ref = reference::li_reference(args);
  const int64_t want = ref.fault.empty() ? 0 : 161002;
  if (!ref.fault.empty()) ++stats().faulted;
  if (status != want) {
    violated(where + ": the run returned " + str(status) + " but the device data implies " +
             str(want) + " (" + message + "; reference: " + ref.fault + ")");
  }
  if (want != 0 && message.find(ref.fault) == std::string::npos)
    violated(where + ": the message '" + message + "' does not name " + ref.fault);
  const ::testing::AssertionResult r =
      testing::compare_li_output(f.spec.name(), args, ref, /*expect_mostly_empty=*/true);
  if (!r) violated(where + ": the output differs from the fp64 reference: " + r.message());
  ++stats().compared;
}

}  // namespace kvflash::fuzz
