#include "sfa_fuzz.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/half.hpp"
#include "core/strings.hpp"
#include "sfa_reference.hpp"
#include "support/sfa_compare.hpp"

namespace kvflash::fuzz {
namespace {

using testing::SfaCase;
using testing::SfaIndexPattern;
using testing::SfaKvLayout;
using testing::SfaQLayout;

constexpr int64_t kNope = 512, kRope = 64;
constexpr double kLogitScales[] = {1.5, 0.5, 3.0, -1.5, 0.0};

using core::str;

int32_t read_i32(const TensorView& v, int64_t elem) {
  int32_t x;
  std::memcpy(&x, static_cast<const char*>(v.data) + elem * 4, 4);
  return x;
}

// An entry of a length tensor: int32 or int64 (docs/semantics.md decision 23).
int64_t read_length(const TensorView& v, int64_t elem) {
  if (v.dtype != DType::kInt64) return read_i32(v, elem);
  int64_t x;
  std::memcpy(&x, static_cast<const char*>(v.data) + elem * 8, 8);
  return x;
}

struct SfaModel {
  int64_t batch = 0, rows = 0, heads = 0;
  bool lengths_fault = false;
  std::vector<char> row_fault;
  bool any_row_fault = false;
  int64_t work = 0;
};

// Element offset of sparse index k of query row r.
int64_t index_elem(const TensorView& v, bool tnd, int64_t s1, int64_t r, int64_t k) {
  if (tnd) return v.offset + r * v.strides[0] + k * v.strides[2];
  return v.offset + (r / s1) * v.strides[0] + (r % s1) * v.strides[1] + k * v.strides[3];
}

// Only for arguments SfaPlan::create accepted.
SfaModel model_sfa(const SfaArgs& a) {
  SfaModel m;
  const bool q_tnd = a.layout_query == "TND", kv_tnd = a.layout_kv == "TND";
  const bool paged = a.layout_kv == "PA_BSND";
  m.heads = q_tnd ? a.query.shape[1] : a.query.shape[2];
  m.batch = q_tnd ? a.actual_seq_lengths_query->shape[0] : a.query.shape[0];
  const int64_t s1 = q_tnd ? 0 : a.query.shape[1];
  m.rows = q_tnd ? a.query.shape[0] : m.batch * s1;
  const int64_t kv_rows = kv_tnd ? a.key.shape[0] : a.key.shape[1];
  const int64_t kv_limit = paged ? sat_mul(a.block_table->shape[1], a.key.shape[1]) : kv_rows;
  const int64_t q_limit = q_tnd ? m.rows : s1;
  std::vector<int64_t> lq(m.batch, s1), lkv(m.batch, kv_rows), q0(m.batch, 0);
  m.row_fault.assign(m.rows, 0);
  const auto read_lengths = [&](const TensorView& t, bool prefix, int64_t limit,
                                std::vector<int64_t>* count, std::vector<int64_t>* first) {
    int64_t prev = 0;
    for (int64_t b = 0; b < m.batch; ++b) {
      const int64_t x = read_length(t, t.offset + b * t.strides[0]);
      if (!prefix) {
        if (x < 0 || x > limit) return false;
        (*count)[b] = x;
        continue;
      }
      if (x < prev || x > limit) return false;
      if (first) (*first)[b] = prev;
      (*count)[b] = x - prev;
      prev = x;
    }
    return true;
  };
  if (a.actual_seq_lengths_query &&
      !read_lengths(*a.actual_seq_lengths_query, q_tnd, q_limit, &lq, &q0)) {
    m.lengths_fault = true;
  }
  if (!m.lengths_fault && a.actual_seq_lengths_kv &&
      !read_lengths(*a.actual_seq_lengths_kv, kv_tnd, kv_limit, &lkv, nullptr)) {
    m.lengths_fault = true;
  }
  if (m.lengths_fault) return m;
  const int64_t kk = a.sparse_indices.shape[a.sparse_indices.rank - 1];
  const int64_t sbs = a.sparse_block_size;
  for (int64_t b = 0; b < m.batch; ++b) {
    for (int64_t i = 0; i < lq[b]; ++i) {
      const int64_t r = q_tnd ? q0[b] + i : b * s1 + i;
      const int64_t thr = a.sparse_mode == 3 ? lkv[b] - lq[b] + i + 1 : lkv[b];
      if (thr <= 0) continue;
      std::vector<int32_t> idx(kk);
      for (int64_t k = 0; k < kk; ++k)
        idx[k] = read_i32(a.sparse_indices, index_elem(a.sparse_indices, q_tnd, s1, r, k));
      const std::vector<int64_t> sel = reference::sfa_reference_select(idx, thr, sbs);
      m.work += static_cast<int64_t>(sel.size()) * m.heads * (kNope + kRope);
      if (!paged) continue;
      const TensorView& bt = *a.block_table;
      const int64_t bs = a.key.shape[1], blocks = a.key.shape[0];
      for (int64_t j : sel) {
        const int32_t id = read_i32(bt, bt.offset + b * bt.strides[0] + (j / bs) * bt.strides[1]);
        if (id < 0 || id >= blocks) m.row_fault[r] = 1;
      }
      m.any_row_fault = m.any_row_fault || m.row_fault[r];
    }
  }
  return m;
}


// Row r of every output must be NaN.
void expect_nan_row(const SfaArgs& a, int64_t r, int64_t heads, const std::string& where,
                    const char* why) {
  for (int64_t e = r * heads * kNope; e < (r + 1) * heads * kNope; ++e) {
    if (!std::isnan(load_element(a.attention_out, e)))
      violated(where + ": " + why + " but attention_out element " + str(e) + " is not NaN");
  }
  if (!a.return_softmax_lse) return;
  for (int64_t h = 0; h < heads; ++h) {
    if (!std::isnan(load_element(*a.softmax_max, r * heads + h)) ||
        !std::isnan(load_element(*a.softmax_sum, r * heads + h)))
      violated(where + ": " + why + " but softmax max/sum of row " + str(r) + " is not NaN");
  }
}

}  // namespace

const std::vector<const char*>& sfa_names() {
  static const std::vector<const char*> names = {
      "query", "key", "value", "sparse_indices", "block_table", "actual_seq_lengths_query",
      "actual_seq_lengths_kv", "query_rope", "key_rope", "sinks", "scale_value",
      "sparse_block_size", "layout_query", "layout_kv", "sparse_mode", "pre_tokens", "next_tokens",
      "attention_mode", "return_softmax_lse", "attention_out", "softmax_max", "softmax_sum",
      "num_threads", "workspace", "workspace_size", "plan", "stream",
      // aclnn spellings
      "sparseIndices", "blockTable", "actualSeqLengthsQuery", "actualSeqLengthsKv", "queryRope",
      "keyRope", "sinksOptional", "scaleValue", "sparseBlockSize", "layoutQuery", "layoutKv",
      "sparseMode", "preTokens", "nextTokens", "attentionMode", "returnSoftmaxLse", "attentionOut",
      "softmaxMaxOut", "softmaxSumOut", "workspaceSize", "executor"};
  return names;
}

std::vector<Slot> SfaFuzzCase::slots() {
  std::vector<Slot> s;
  SfaArgs& a = args;
  const bool separate_value = a.value.has_value();
  s.push_back({&a.query, "query", Role::kData, false, true});
  s.push_back({&a.key, "key", Role::kData, false, separate_value});
  s.push_back({&a.sparse_indices, "sparse_indices", Role::kIds, false, false});
  s.push_back({&a.query_rope, "query_rope", Role::kData, false, true});
  s.push_back({&a.key_rope, "key_rope", Role::kData, false, true});
  s.push_back({&a.attention_out, "attention_out", Role::kOutput, true, false});
  const struct {
    std::optional<TensorView>* v;
    const char* name;
    Role role;
    bool output, inf_ok;
  } opt[] = {
      {&a.value, "value", Role::kData, false, false},
      {&a.block_table, "block_table", Role::kIds, false, false},
      {&a.actual_seq_lengths_query, "actual_seq_lengths_query", Role::kLengths, false, false},
      {&a.actual_seq_lengths_kv, "actual_seq_lengths_kv", Role::kLengths, false, false},
      {&a.sinks, "sinks", Role::kSink, false, true},
      {&a.softmax_max, "softmax_max", Role::kOutput, true, false},
      {&a.softmax_sum, "softmax_sum", Role::kOutput, true, false}};
  for (const auto& o : opt) {
    if (o.v->has_value()) s.push_back({&**o.v, o.name, o.role, o.output, o.inf_ok});
  }
  return s;
}

bool decode_sfa(FuzzInput& in, bool sinks, bool extensions, SfaFuzzCase* f) {
  SfaCase c;
  c.q_layout = in.flag() ? SfaQLayout::kTnd : SfaQLayout::kBsnd;
  switch (in.below(3)) {
    case 1:
      c.kv_layout = SfaKvLayout::kPaBsnd;
      break;
    default:
      c.kv_layout = c.q_layout == SfaQLayout::kTnd ? SfaKvLayout::kTnd : SfaKvLayout::kBsnd;
      break;
  }
  c.dtype = in.flag() ? DType::kBFloat16 : DType::kFloat16;
  c.num_heads = int64_t{1} << in.below(3);
  c.sparse_size = 1 + in.below(8);
  c.sparse_block_size = int64_t{1} << in.below(3);
  const int64_t batch = 1 + in.below(2);
  c.q_lens.resize(batch);
  c.kv_lens.resize(batch);
  for (int64_t b = 0; b < batch; ++b) {
    c.q_lens[b] = (in.below(4) + 1) % 4;
    c.kv_lens[b] = (in.below(33) + 16) % 33;
  }
  c.q_slack = in.below(2);
  c.kv_slack = in.below(4);
  c.block_size = 16 * (1 + in.below(2));
  c.sparse_mode = in.flag() ? 0 : 3;
  c.indices = static_cast<SfaIndexPattern>(in.below(4));
  c.sinks = sinks && in.rare(2);
  c.lse = in.rare(2);
  c.value_separate = in.rare(3);
  c.strided = in.rare(2);
  c.pass_kv_lens = !in.rare(3);
  c.logit_scale = kLogitScales[in.below(5)];
  c.expect_mostly_empty = true;

  f->spec = c;
  f->data = std::make_unique<testing::SfaCaseData>(c);
  f->args = f->data->args();
  f->rng = testing::TestRng(testing::fnv1a(c.name()) ^ 0x5eed);
  set_context(c.name());
  SfaArgs& a = f->args;
  CaseMemory& mem = f->mem;
  testing::TestRng& rng = f->rng;
  const int64_t B = batch, N1 = c.num_heads;

  // ---- structural mutations ------------------------------------------------------------------
  for (int n = in.below(4); n > 0; --n) {
    std::string note;
    switch (in.below(12)) {
      case 0:
        a.value.reset();
        note = "-value";
        break;
      case 1:
        a.value = a.key;
        note = "value=key";
        break;
      case 2:
        a.block_table.reset();
        note = "-block_table";
        break;
      case 3:
        a.block_table = mem.make(DType::kInt32, {B, in.in(1, 3)}, Role::kIds, rng);
        note = "+block_table";
        break;
      case 4:
        a.actual_seq_lengths_query.reset();
        note = "-actual_seq_lengths_query";
        break;
      case 5:
        a.actual_seq_lengths_query = mem.make(DType::kInt32, {B}, Role::kLengths, rng);
        note = "+actual_seq_lengths_query";
        break;
      case 6:
        a.actual_seq_lengths_kv.reset();
        note = "-actual_seq_lengths_kv";
        break;
      case 7:
        a.actual_seq_lengths_kv = mem.make(DType::kInt32, {B}, Role::kLengths, rng);
        note = "+actual_seq_lengths_kv";
        break;
      case 8:
        a.sinks.reset();
        note = "-sinks";
        break;
      case 9:
        if (sinks) {
          a.sinks = mem.make(DType::kFloat32, {N1 + in.in(-1, 1)}, Role::kSink, rng);
          note = "+sinks";
        }
        break;
      case 10:
        a.return_softmax_lse = !a.return_softmax_lse;
        if (in.flag()) {
          a.softmax_max.reset();
          a.softmax_sum.reset();
        }
        note = std::string("return_softmax_lse=") + (a.return_softmax_lse ? "1" : "0");
        break;
      default: {
        const bool tnd = a.layout_query == "TND";
        const std::vector<int64_t> shape = tnd ? std::vector<int64_t>{1, a.query.shape[0], N1}
                                               : std::vector<int64_t>{B, 1, a.query.shape[1], N1};
        auto& t = in.flag() ? a.softmax_max : a.softmax_sum;
        t = TensorView::contiguous(a.attention_out.data, DType::kFloat32, shape);
        note = "+softmax output";
        break;
      }
    }
    if (!note.empty()) add_context(note);
  }

  // ---- attributes
  // --------------------------------------------------------------------------------
  for (int n = in.below(3); n > 0; --n) {
    switch (in.below(9)) {
      case 0: {
        static constexpr double kScales[] = {0.0,
                                             -0.0,
                                             1e30,
                                             -1e30,
                                             1e-30,
                                             16.0,
                                             std::numeric_limits<double>::quiet_NaN(),
                                             std::numeric_limits<double>::infinity(),
                                             1e300};
        a.scale_value = kScales[in.below(9)];
        if (!std::isfinite(a.scale_value) || std::fabs(a.scale_value) > 2.0)
          f->differential = false;
        break;
      }
      case 1:
        a.sparse_block_size =
            in.flag() ? sat_mul(a.sparse_block_size, 2) : in.special(a.sparse_block_size);
        break;
      case 2: {
        static const char* kLayouts[] = {"BSND", "TND", "PA_BSND", "bsnd", "BSH", "", "TND "};
        const uint32_t k = in.below(8);
        a.layout_query = k < 7 ? kLayouts[k] : in.text();
        break;
      }
      case 3: {
        static const char* kLayouts[] = {"BSND", "TND", "PA_BSND", "PA_TND", "BNSD", "", "PA"};
        const uint32_t k = in.below(8);
        a.layout_kv = k < 7 ? kLayouts[k] : in.text();
        break;
      }
      case 4:
        a.sparse_mode = in.flag() ? in.in(0, 4) : in.special(3);
        break;
      case 5:
        a.pre_tokens = in.special(0);
        break;
      case 6:
        a.next_tokens = in.special(0);
        break;
      case 7:
        a.attention_mode = in.flag() ? in.in(0, 3) : in.special(2);
        break;
      default:
        if (extensions) a.num_threads = static_cast<int>(in.special(2));
        break;
    }
    add_context("attr sbs=" + str(a.sparse_block_size) + " layouts=" + a.layout_query + "/" +
                a.layout_kv + " mode=" + str(a.sparse_mode) +
                " attention_mode=" + str(a.attention_mode) + " threads=" + str(a.num_threads));
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
  for (int n = in.below(5); n > 0; --n) {
    std::vector<Slot> s = f->slots();
    for (const Slot& slot : s) {
      if (slot.name == "sparse_indices" && in.flag())
        add_context(poke_int(in, slot, (max_kv + c.sparse_block_size - 1) / c.sparse_block_size));
      if (slot.name == "block_table" && in.flag())
        add_context(poke_int(in, slot, f->data->num_blocks()));
      if (slot.name == "actual_seq_lengths_query" && in.rare(3)) add_context(poke_int(in, slot, 4));
      if (slot.name == "actual_seq_lengths_kv" && in.rare(3))
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

bool sfa_affordable(const SfaFuzzCase& f, const SfaArgs& args, uint64_t workspace_size) {
  if (f.mem.unbacked || workspace_size > (uint64_t{1} << 26)) return false;
  const TensorView& si = args.sparse_indices;  // K: a zero-strided view may claim any size
  if (si.shape[si.rank - 1] > 4096) return false;
  const SfaModel m = model_sfa(args);
  return m.rows <= 4096 && m.work <= (int64_t{1} << 24);
}

void check_sfa_run(SfaFuzzCase& f, const SfaArgs& args, int64_t status, const std::string& where) {
  const SfaModel m = model_sfa(args);
  ++stats().ran;
  if (m.lengths_fault || m.any_row_fault) ++stats().faulted;
  const int64_t want = m.lengths_fault || m.any_row_fault ? 161002 : 0;
  if (status != want) {
    violated(where + ": the run returned " + str(status) + " but the device data implies " +
             str(want) + " (" + last_error_message() + ")");
  }
  if (m.lengths_fault) {
    for (int64_t r = 0; r < m.rows; ++r)
      expect_nan_row(args, r, m.heads, where, "the lengths are bad");
    return;
  }
  SfaArgs sane = args;
  std::vector<int32_t> cleared;  // a copy of sparse_indices with faulted rows selecting nothing
  if (m.any_row_fault) {
    // A contiguous copy: the rows of a strided sparse_indices may share elements, so clearing a
    // faulted row in place could clear a good row as well.
    const TensorView& si = args.sparse_indices;
    const bool tnd = args.layout_query == "TND";
    const int64_t s1 = tnd ? 0 : args.query.shape[1];
    const int64_t kk = si.shape[si.rank - 1];
    TensorView c = si;
    c.offset = 0;
    int64_t numel = 1;
    for (int i = c.rank - 1; i >= 0; --i) {
      c.strides[i] = numel;
      numel *= c.shape[i];
    }
    cleared.assign(static_cast<size_t>(numel), -1);
    c.data = cleared.data();
    for (int64_t r = 0; r < m.rows; ++r) {
      if (m.row_fault[r])
        expect_nan_row(args, r, m.heads, where, "a selected position has a bad block id");
      for (int64_t k = 0; k < kk && !m.row_fault[r]; ++k)
        cleared[index_elem(c, tnd, s1, r, k)] = read_i32(si, index_elem(si, tnd, s1, r, k));
    }
    sane.sparse_indices = c;
  }
  if (!f.differential) return;
  const reference::SfaReference ref = reference::sfa_reference(sane);
  for (int64_t r = 0; r < m.rows; ++r) {
    if (!m.row_fault[r]) continue;
    for (int64_t h = 0; h < m.heads; ++h) {
      for (int64_t d = 0; d < kNope; ++d)
        store_element(args.attention_out, (r * m.heads + h) * kNope + d, ref.rounded[ref.index(r, h, d)]);
      if (args.return_softmax_lse) {
        store_element(*args.softmax_max, r * m.heads + h, ref.softmax_max[ref.row(r, h)]);
        store_element(*args.softmax_sum, r * m.heads + h, ref.softmax_sum[ref.row(r, h)]);
      }
    }
  }
  const ::testing::AssertionResult r = testing::compare_sfa_output(f.spec.name(), args, ref, true);
  if (!r) violated(where + ": the output differs from the fp64 reference: " + r.message());
  ++stats().compared;
}

}  // namespace kvflash::fuzz
