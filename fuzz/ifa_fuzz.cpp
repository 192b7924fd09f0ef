#include "ifa_fuzz.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/half.hpp"
#include "core/strings.hpp"
#include "ifa_reference.hpp"
#include "support/compare.hpp"

namespace kvflash::fuzz {
namespace {

using testing::IfaCase;
using testing::IfaLayout;
using testing::MaskShape;
using testing::PseShape;
using testing::QuantMode;

constexpr int64_t kHeadDims[] = {16, 8, 1, 3, 32, 64, 17, 128};
constexpr double kLogitScales[] = {1.5, 0.5, 3.0, -1.5, 0.0};

using core::str;

// ---- the model of a validated call: lengths, padded ranges, faults ----------------------------

struct IfaModel {
  int64_t batch = 0, heads = 0, dim = 0;
  std::vector<int64_t> len, begin;
  std::vector<char> empty, fault;
  bool any_fault = false;
  int64_t work = 0;  // sum of len * heads * dim (saturating)
};

int64_t read_i64(const TensorView& v) {
  int64_t x;
  std::memcpy(&x, static_cast<const char*>(v.data) + v.offset * 8, 8);
  return x;
}

int32_t read_i32(const TensorView& v, int64_t i, int64_t j) {
  int32_t x;
  std::memcpy(
      &x, static_cast<const char*>(v.data) + (v.offset + i * v.strides[0] + j * v.strides[1]) * 4,
      4);
  return x;
}

// Only for arguments IfaPlan::create accepted.
IfaModel model_ifa(const IfaArgs& a) {
  IfaModel m;
  const TensorView& q = a.query;
  m.batch = q.shape[0];
  m.heads = a.num_heads;
  const bool bsh = a.input_layout == "BSH", bnsd = a.input_layout == "BNSD";
  m.dim = bsh ? q.shape[2] / a.num_heads : q.shape[3];
  const bool paged = a.block_table.has_value();
  const bool list = !paged && a.key.size() > 1;
  std::vector<int64_t> cap(m.batch);
  for (int64_t b = 0; b < m.batch; ++b) {
    if (paged) {
      cap[b] = a.block_table->shape[1] * a.block_size;
    } else {
      const TensorView& k = a.key[list ? b : 0];
      cap[b] = bnsd ? k.shape[2] : k.shape[1];
    }
  }
  const bool given = a.actual_seq_lengths && !a.actual_seq_lengths->empty();
  m.len.assign(m.batch, 0);
  m.begin.assign(m.batch, 0);
  m.empty.assign(m.batch, 0);
  m.fault.assign(m.batch, 0);
  for (int64_t b = 0; b < m.batch; ++b) {
    m.len[b] = given ? (*a.actual_seq_lengths)[a.actual_seq_lengths->size() == 1 ? 0 : b] : cap[b];
  }
  // kv_padding_size is validated only when it applies: test that first.
  const bool padding = given && !paged && !list && a.kv_padding_size &&
                       a.kv_padding_size->numel() > 0 && a.kv_padding_size->dtype == DType::kInt64;
  const int64_t pad = padding ? std::max<int64_t>(read_i64(*a.kv_padding_size), 0) : 0;
  const bool mask = a.atten_mask && a.atten_mask->numel() > 0;
  const int64_t mask_cols = mask ? a.atten_mask->shape[a.atten_mask->rank - 1] : 0;
  for (int64_t b = 0; b < m.batch; ++b) {
    if (padding) {
      const int64_t room = cap[b] - m.len[b];
      if (pad > room) {
        m.empty[b] = 1;
        continue;
      }
      m.begin[b] = room - pad;
    }
    if (m.len[b] == 0) continue;
    if (mask && m.begin[b] + m.len[b] > mask_cols) m.fault[b] = 1;
    if (paged) {
      const int64_t bs = a.block_size, blocks = a.key[0].shape[0];
      for (int64_t s = m.begin[b] / bs; s <= (m.begin[b] + m.len[b] - 1) / bs; ++s) {
        const int32_t id = read_i32(*a.block_table, b, s);
        if (id < 0 || id >= blocks) m.fault[b] = 1;
      }
    }
    m.any_fault = m.any_fault || m.fault[b];
  }
  const int64_t row = m.heads * std::max<int64_t>(m.dim, 1);
  for (int64_t b = 0; b < m.batch; ++b) {
    const int64_t l = m.empty[b] ? 0 : m.len[b];
    if (l > (int64_t{1} << 40) / row) {
      m.work = std::numeric_limits<int64_t>::max();
      break;
    }
    m.work += l * row;
  }
  return m;
}


}  // namespace

IfaFeatures IfaFeatures::for_version(int version) {
  IfaFeatures f;
  f.extensions = false;
  f.pse = version >= 3;
  f.quant = version >= 2;
  f.antiquant_paged = version >= 3;
  f.padding = version >= 4;
  return f;
}

const std::vector<const char*>& ifa_names() {
  static const std::vector<const char*> names = {
      "query", "key", "value", "pse_shift", "atten_mask", "actual_seq_lengths", "dequant_scale1",
      "quant_scale1", "dequant_scale2", "quant_scale2", "quant_offset2", "antiquant_scale",
      "antiquant_offset", "block_table", "kv_padding_size", "num_heads", "scale_value",
      "input_layout", "num_key_value_heads", "block_size", "inner_precise", "attention_out",
      "softmax_lse", "zero_fully_masked_rows", "num_threads", "workspace", "workspace_size", "plan",
      "stream",
      // aclnn spellings
      "pseShift", "attenMask", "actualSeqLengths", "dequantScale1", "quantScale1", "dequantScale2",
      "quantScale2", "quantOffset2", "antiquantScale", "antiquantOffset", "blocktable",
      "kvPaddingSize", "numHeads", "scaleValue", "inputLayout", "numKeyValueHeads", "blockSize",
      "innerPrecise", "attentionOut", "workspaceSize", "executor"};
  return names;
}

std::vector<Slot> IfaFuzzCase::slots() {
  std::vector<Slot> s;
  IfaArgs& a = args;
  s.push_back({&a.query, "query", Role::kData, false, true});
  for (size_t i = 0; i < a.key.size(); ++i)
    s.push_back({&a.key[i], "key[" + std::to_string(i) + "]", Role::kData, false, true});
  for (size_t i = 0; i < a.value.size(); ++i)
    s.push_back({&a.value[i], "value[" + std::to_string(i) + "]", Role::kData, false, false});
  s.push_back({&a.attention_out, "attention_out", Role::kOutput, true, false});
  const struct {
    std::optional<TensorView>* v;
    const char* name;
    Role role;
    bool output, inf_ok;
  } opt[] = {{&a.pse_shift, "pse_shift", Role::kData, false, true},
             {&a.atten_mask, "atten_mask", Role::kMask, false, false},
             {&a.dequant_scale1, "dequant_scale1", Role::kScalar, false, false},
             {&a.quant_scale1, "quant_scale1", Role::kScalar, false, false},
             {&a.dequant_scale2, "dequant_scale2", Role::kScalar, false, false},
             {&a.quant_scale2, "quant_scale2", Role::kQuantScale, false, false},
             {&a.quant_offset2, "quant_offset2", Role::kQuantOffset, false, false},
             {&a.antiquant_scale, "antiquant_scale", Role::kAqScale, false, false},
             {&a.antiquant_offset, "antiquant_offset", Role::kAqOffset, false, false},
             {&a.block_table, "block_table", Role::kIds, false, false},
             {&a.kv_padding_size, "kv_padding_size", Role::kPadding, false, false},
             {&a.softmax_lse, "softmax_lse", Role::kOutput, true, false}};
  for (const auto& o : opt) {
    if (o.v->has_value()) s.push_back({&**o.v, o.name, o.role, o.output, o.inf_ok});
  }
  return s;
}

bool decode_ifa(FuzzInput& in, const IfaFeatures& features, IfaFuzzCase* f) {
  IfaCase c;
  c.layout = static_cast<IfaLayout>(in.below(3));
  c.q_dtype = in.flag() ? DType::kBFloat16 : DType::kFloat16;
  const bool int8_kv = in.below(4) == 3 && features.antiquant_paged;
  c.kv_dtype = int8_kv ? DType::kInt8 : c.q_dtype;
  if (int8_kv) {
    c.antiquant = in.flag() ? QuantMode::kPerTensor : QuantMode::kPerChannel;
    c.antiquant_shape = static_cast<int>(in.below(4));
    c.antiquant_offset = !in.rare(3);
  }
  const bool int8_out = in.below(4) == 3 && features.quant;
  c.out_dtype = int8_out ? DType::kInt8 : c.q_dtype;
  if (int8_out) {
    c.out_quant = in.flag() ? QuantMode::kPerTensor : QuantMode::kPerChannel;
    c.out_quant_shape = static_cast<int>(in.below(8));
    c.out_quant_offset = !in.rare(3);
    c.out_quant_bf16 = c.q_dtype == DType::kBFloat16 && in.flag();
  }
  c.num_kv_heads = 1 + in.below(3);
  c.num_heads = c.num_kv_heads * (1 + in.below(4));
  c.head_dim = kHeadDims[in.below(8)];
  c.batch = 1 + in.below(3);
  c.paged = features.antiquant_paged && in.below(4) == 1;
  if (c.paged) {
    c.block_size = (int8_kv ? 32 : 16) * (1 + in.below(2));
    c.cache_bnsd = c.layout == IfaLayout::kBnsd && in.flag();
  }
  c.list_mode = !c.paged && in.below(5) == 1;
  const int64_t max_len = c.paged ? 64 : 40;
  c.kv_lens.resize(c.batch);
  for (int64_t& l : c.kv_lens)
    l = (in.below(static_cast<uint32_t>(max_len + 1)) + 7) % (max_len + 1);
  c.pass_lengths = c.paged || !in.rare(3);
  bool uniform = true;
  for (int64_t l : c.kv_lens) uniform = uniform && l == c.kv_lens[0];
  if (!c.pass_lengths && !c.list_mode && !uniform) c.pass_lengths = true;
  c.broadcast_length = c.pass_lengths && uniform && in.rare(3);
  c.kvn_attr_zero = c.num_heads == c.num_kv_heads && in.rare(2);
  c.mask = static_cast<MaskShape>(in.below(7));
  static constexpr DType kMaskDtypes[] = {DType::kBool, DType::kInt8, DType::kUInt8};
  c.mask_dtype = kMaskDtypes[in.below(3)];
  c.mask_full_rows = in.rare(3);
  c.pse = features.pse ? static_cast<PseShape>(in.below(3)) : PseShape::kNone;
  c.kv_padding = features.padding && in.rare(3) ? in.in(0, 12) : -1;
  c.kv_slack = in.below(4);
  c.strided = in.rare(2);
  c.lse = features.extensions && in.rare(2);
  c.zero_fully_masked = features.extensions && in.rare(2);
  c.logit_scale = kLogitScales[in.below(5)];
  c.value_scale = in.rare(4) ? 4.0 : 1.0;
  c.expect_mostly_empty = true;
  if (!c.inconsistency().empty()) return false;

  f->spec = c;
  f->data = std::make_unique<testing::IfaCaseData>(c);
  f->args = f->data->args();
  f->rng = testing::TestRng(testing::fnv1a(c.name()) ^ 0x5eed);
  set_context(c.name());
  IfaArgs& a = f->args;
  CaseMemory& mem = f->mem;
  testing::TestRng& rng = f->rng;
  const int64_t B = c.batch, N = c.num_heads;

  // ---- structural mutations: optional tensors, lists ------------------------------------------
  for (int n = in.below(4); n > 0; --n) {
    const int op = in.below(18);
    std::string note;
    switch (op) {
      case 0:
        a.pse_shift.reset();
        note = "-pse_shift";
        break;
      case 1:
        a.atten_mask.reset();
        note = "-atten_mask";
        break;
      case 2:
        a.actual_seq_lengths.reset();
        note = "-actual_seq_lengths";
        break;
      case 3:
        a.actual_seq_lengths = std::vector<int64_t>{};
        note = "actual_seq_lengths={}";
        break;
      case 4:
        a.antiquant_scale.reset();
        note = "-antiquant_scale";
        break;
      case 5:
        a.antiquant_offset.reset();
        note = "-antiquant_offset";
        break;
      case 6:
        a.quant_scale2.reset();
        note = "-quant_scale2";
        break;
      case 7:
        a.quant_offset2.reset();
        note = "-quant_offset2";
        break;
      case 8:
        a.block_table.reset();
        note = "-block_table";
        break;
      case 9:
        if (!features.padding) break;
        a.kv_padding_size = mem.make(in.rare(4) ? DType::kInt32 : DType::kInt64, {in.in(0, 2)},
                                     Role::kPadding, rng);
        note = "+kv_padding_size";
        break;
      case 10: {
        auto* t = in.flag() ? &a.dequant_scale1 : in.flag() ? &a.quant_scale1 : &a.dequant_scale2;
        *t = mem.make(DType::kFloat32, {1}, Role::kScalar, rng);
        note = "+dequant/quant scale";
        break;
      }
      case 11:
        if (!features.quant) break;
        a.quant_scale2 =
            mem.make(in.flag() ? DType::kFloat32 : DType::kBFloat16, {1}, Role::kQuantScale, rng);
        note = "+quant_scale2";
        break;
      case 12:
        if (in.flag() && a.key.size() > 1) {
          a.key.pop_back();
        } else {
          a.key.push_back(a.key[in.below(static_cast<uint32_t>(a.key.size()))]);
        }
        note = "key list " + str(static_cast<int64_t>(a.key.size()));
        break;
      case 13:
        if (in.flag() && a.value.size() > 1) {
          a.value.pop_back();
        } else {
          a.value.push_back(a.value[in.below(static_cast<uint32_t>(a.value.size()))]);
        }
        note = "value list " + str(static_cast<int64_t>(a.value.size()));
        break;
      case 14:
        if (!features.antiquant_paged) break;
        a.antiquant_scale = mem.make(c.q_dtype, {2}, Role::kAqScale, rng);
        note = "+antiquant_scale";
        break;
      case 15:
        if (!features.antiquant_paged) break;
        a.block_table = mem.make(DType::kInt32, {B, in.in(1, 3)}, Role::kIds, rng);
        if (a.block_size == 0) a.block_size = 16 * in.in(0, 2);
        note = "+block_table";
        break;
      case 16:
        if (!features.extensions) break;
        a.softmax_lse = TensorView::contiguous(nullptr, DType::kFloat32, {B, N + in.in(-1, 1)});
        a.softmax_lse->data = f->data->args().attention_out.data;  // replaced by a guarded buffer
        note = "+softmax_lse";
        break;
      default:
        a.softmax_lse.reset();
        note = "-softmax_lse";
        break;
    }
    if (!note.empty()) add_context(note);
  }

  // ---- attributes and the host lengths ---------------------------------------------------------
  for (int n = in.below(3); n > 0; --n) {
    switch (in.below(9)) {
      case 0:
        a.num_heads = in.flag() ? sat_add(a.num_heads, in.in(-2, 2)) : in.special(a.num_heads);
        break;
      case 1:
        a.num_key_value_heads = in.flag() ? sat_add(a.num_key_value_heads, in.in(-1, 1))
                                          : in.special(a.num_key_value_heads);
        break;
      case 2: {
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
      case 3: {
        static const char* kLayouts[] = {"BSH", "BSND", "BNSD", "bsh", "TND", "BSH ", "", "BNSD\n"};
        const uint32_t k = in.below(9);
        a.input_layout = k < 8 ? kLayouts[k] : in.text();
        break;
      }
      case 4:
        a.block_size =
            in.flag() ? sat_add(a.block_size, 16 * in.in(-1, 1)) : in.special(a.block_size);
        break;
      case 5:
        a.inner_precise = in.special(1);
        break;
      case 6:
        if (features.extensions) a.num_threads = static_cast<int>(in.special(2));
        break;
      case 7:
        if (features.extensions) a.zero_fully_masked_rows = !a.zero_fully_masked_rows;
        break;
      default: {
        auto& asl = a.actual_seq_lengths;
        if (!asl) asl = std::vector<int64_t>(static_cast<size_t>(B), in.in(0, 40));
        switch (in.below(4)) {
          case 0:
            if (!asl->empty())
              (*asl)[in.below(static_cast<uint32_t>(asl->size()))] = in.special(10);
            break;
          case 1:
            asl->push_back(in.in(0, 70));
            break;
          case 2:
            if (!asl->empty()) asl->pop_back();
            break;
          default:
            if (!asl->empty()) (*asl)[in.below(static_cast<uint32_t>(asl->size()))] = in.in(0, 70);
            break;
        }
        break;
      }
    }
    add_context("attr num_heads=" + str(a.num_heads) + " kvn=" + str(a.num_key_value_heads) +
                " layout=" + a.input_layout + " block_size=" + str(a.block_size) +
                " inner_precise=" + str(a.inner_precise) + " threads=" + str(a.num_threads));
  }

  // ---- outputs get guarded buffers; then metadata, device data and non-finite values ----------
  {
    std::vector<Slot> s = f->slots();
    const size_t shift = in.below(4);  // elements: outputs need not be 64-byte aligned
    for (const Slot& slot : s)
      if (slot.output) mem.guard_output(slot, dtype_size(slot.view->dtype) * shift);
  }
  for (int n = in.below(4); n > 0; --n) {
    std::vector<Slot> s = f->slots();
    add_context(mutate_view(in, s[in.below(static_cast<uint32_t>(s.size()))], mem, rng));
  }
  for (int n = in.below(4); n > 0; --n) {
    std::vector<Slot> s = f->slots();
    for (const Slot& slot : s) {
      if (slot.name == "block_table" && in.flag())
        add_context(poke_int(in, slot, f->data->num_blocks()));
      if (slot.name == "kv_padding_size" && in.flag()) add_context(poke_int(in, slot, 8));
    }
  }
  for (int n = in.below(3); n > 0; --n) {
    std::vector<Slot> s = f->slots();
    const Slot& slot = s[in.below(static_cast<uint32_t>(s.size()))];
    if (!slot.output) add_context(inject_nonfinite(in, slot));
  }
  (void)N;
  return true;
}

bool ifa_affordable(const IfaFuzzCase& f, const IfaArgs& args, uint64_t workspace_size) {
  if (f.mem.unbacked || workspace_size > (uint64_t{1} << 25)) return false;
  return model_ifa(args).work <= (int64_t{1} << 22);
}

void check_ifa_run(IfaFuzzCase& f, const IfaArgs& args, int64_t status, const std::string& where) {
  const IfaModel m = model_ifa(args);
  ++stats().ran;
  if (m.any_fault) ++stats().faulted;
  const int64_t want = m.any_fault ? 161002 : 0;
  if (status != want) {
    violated(where + ": the run returned " + str(status) + " but the device data implies " +
             str(want) + " (" + last_error_message() + ")");
  }
  const TensorView& out = args.attention_out;
  const int64_t H = m.heads, D = m.dim;
  IfaArgs sane = args;
  if (m.any_fault) {
    std::vector<int64_t> lens(m.len);
    for (int64_t b = 0; b < m.batch; ++b) {
      if (m.fault[b]) lens[b] = 0;
      // A faulted batch is NaN (int8: 0) in every element, its LSE NaN.
      for (int64_t e = b * H * D; m.fault[b] && e < (b + 1) * H * D; ++e) {
        const double x = load_element(out, e);
        if (out.dtype == DType::kInt8 ? x != 0 : !std::isnan(x))
          violated(where + ": batch " + str(b) + " has a bad block id or padded range but output " +
                   "element " + str(e) + " is " + std::to_string(x) + ", not NaN (int8: 0)");
      }
      if (m.fault[b] && args.softmax_lse) {
        for (int64_t h = 0; h < H; ++h) {
          float x;
          std::memcpy(&x, static_cast<const float*>(args.softmax_lse->data) + b * H + h, 4);
          if (!std::isnan(x)) violated(where + ": faulted batch " + str(b) + " LSE is not NaN");
        }
      }
    }
    sane.actual_seq_lengths = lens;
  }
  if (!f.differential) return;
  const reference::IfaReference ref = reference::ifa_reference(sane);
  for (int64_t b = 0; b < m.batch; ++b) {
    if (!m.fault[b]) continue;
    for (int64_t h = 0; h < H; ++h) {
      for (int64_t d = 0; d < D; ++d)
        store_element(out, (b * H + h) * D + d, ref.rounded[ref.index(b, h, d)]);
      if (args.softmax_lse) {
        const float x = -std::numeric_limits<float>::infinity();
        std::memcpy(static_cast<float*>(args.softmax_lse->data) + b * H + h, &x, 4);
      }
    }
  }
  testing::IfaCompareOptions options;
  options.allow_mostly_empty = true;
  const ::testing::AssertionResult r =
      testing::compare_ifa_output(f.spec.name(), args, ref, options);
  if (!r) violated(where + ": the output differs from the fp64 reference: " + r.message());
  ++stats().compared;
}

}  // namespace kvflash::fuzz
