#include "fa_fuzz.hpp"

#include <optional>

#include "core/strings.hpp"
#include "fia_reference.hpp"
#include "ops/fa/fa_fields.hpp"
#include "ops/fia/fia_fields.hpp"

namespace kvflash::fuzz {
namespace {

constexpr uint64_t kMaxBacked = uint64_t{1} << 24;

void back(FaFuzzCase* f, TensorView* t) {
  const std::optional<uint64_t> bytes = view_bytes(*t);
  if (!bytes || *bytes > kMaxBacked) {
    t->data = unreadable_page();
    f->runnable = false;
    return;
  }
  f->memory.push_back(std::make_unique<Guarded>(static_cast<size_t>(*bytes), 0, 0));
  t->data = f->memory.back()->data();
}

testing::FiaCase fa_case(FuzzInput& in) {
  using testing::FiaLayout;
  using testing::FiaMask;
  static constexpr FiaLayout kLayouts[] = {FiaLayout::kBsh, FiaLayout::kBsnd, FiaLayout::kBnsd,
                                           FiaLayout::kTnd};
  static constexpr DType kDtypes[] = {DType::kFloat16, DType::kBFloat16, DType::kFloat32};
  testing::FiaCase c;
  c.prompt = true;
  c.layout = kLayouts[in.below(4)];
  c.q_dtype = c.kv_dtype = c.out_dtype = kDtypes[in.below(3)];
  c.num_kv_heads = in.in(1, 2);
  c.num_heads = c.num_kv_heads * in.in(1, 3);
  c.head_dim = 16 * in.in(1, 3);
  if (in.rare(3)) c.value_dim = 16;
  c.sparse_mode = in.in(0, 4);
  const int64_t B = in.in(1, 3);
  if (c.layout == FiaLayout::kTnd) {
    c.q_lens.clear(), c.kv_lens.clear();
    for (int64_t b = 0; b < B; ++b) {
      c.q_lens.push_back(in.in(b == 0 ? 1 : 0, 6));
      c.kv_lens.push_back(in.in(0, 9));
    }
  } else {
    c.q_lens.assign(static_cast<size_t>(B), in.in(1, 6));
    c.kv_lens.assign(static_cast<size_t>(B), in.in(1, 9));
    c.kv_slack = 0, c.pass_q_lens = false, c.pass_kv_lens = false;
  }
  if (c.sparse_mode >= 2) c.mask = FiaMask::kCompressed;
  if (c.sparse_mode == 1) c.mask = c.layout == FiaLayout::kTnd ? FiaMask::kFull2 : FiaMask::kFull4;
  if (c.sparse_mode == 4) c.pre_tokens = in.in(0, 4), c.next_tokens = in.in(0, 4);
  if (c.sparse_mode == 0 && in.flag()) {
    c.mask = FiaMask::kFull2;
    c.pre_tokens = in.in(0, 6), c.next_tokens = in.in(0, 6);
  }
  return c;
}

void mutate(FuzzInput& in, FaFuzzCase* f) {
  FlashAttentionScoreArgs& a = f->args;
  static const char* const kLayouts[] = {"BSH", "BSND", "BNSD", "TND",  "SBH",
                                         "sbh", "NTD",  "",     "bsnd", "TND_NTD"};
  for (int m = static_cast<int>(in.below(4)); m > 0; --m) {
    f->mutated = true;
    std::vector<TensorView*> vs = {&a.query,       &a.key,         &a.value,
                                   &a.softmax_max, &a.softmax_sum, &a.attention_out};
    if (a.atten_mask) vs.push_back(&*a.atten_mask);
    TensorView* t = vs[in.below(static_cast<uint32_t>(vs.size()))];
    switch (in.below(9)) {
      case 0:
        if (t->rank > 0) {
          const int i = static_cast<int>(in.below(static_cast<uint32_t>(t->rank)));
          t->shape[i] = in.special(t->shape[i]);
        }
        back(f, t);
        break;
      case 1:
        if (t->rank > 0) {
          const int i = static_cast<int>(in.below(static_cast<uint32_t>(t->rank)));
          t->strides[i] = in.special(t->strides[i]);
        }
        back(f, t);
        break;
      case 2:
        t->dtype = static_cast<DType>(in.in(-1, 30));
        back(f, t);
        break;
      case 3: {
        int64_t* attrs[] = {&a.head_num, &a.sparse_mode, &a.pre_tokens, &a.next_tokens,
                            &a.inner_precise};
        int64_t* x = attrs[in.below(5)];
        *x = in.special(*x);
        break;
      }
      case 4:
        a.keep_prob = in.flag() ? 0.5 : in.flag() ? 0.0 : 1.5;
        break;
      case 5:
        a.input_layout = kLayouts[in.below(10)];
        break;
      case 6: {  // a refused or ignored tensor appears, or the mask disappears
        switch (in.below(5)) {
          case 0:
            a.real_shift = a.query;
            break;
          case 1:
            a.drop_mask = a.query;
            break;
          case 2:
            a.padding_mask = a.query;
            break;
          case 3:
            a.prefix = std::vector<int64_t>{in.special(1)};
            break;
          default:
            a.atten_mask.reset();
            break;
        }
        break;
      }
      case 7: {
        auto& l = in.flag() ? a.actual_seq_qlen : a.actual_seq_kvlen;
        if (!l || l->empty() || in.rare(4)) {
          l = std::vector<int64_t>(in.below(4), in.special(3));
        } else if (in.flag()) {
          l->push_back(0);  // a left-out trailing batch
        } else {
          (*l)[in.below(static_cast<uint32_t>(l->size()))] = in.special((*l)[0]);
        }
        break;
      }
      default:
        a.scale = in.flag() ? __builtin_nan("") : -a.scale;
        break;
    }
  }
}

}  // namespace

void decode_fa(FuzzInput& in, bool extensions, FaFuzzCase* f) {
  const testing::FiaCase c = fa_case(in);
  set_context("fa " + c.name());
  f->data = std::make_unique<testing::FiaCaseData>(c);
  f->max_sum = std::make_unique<testing::FiaMaxSum>(*f->data);
  const reference::FiaCall& call = f->data->call();
  FlashAttentionScoreArgs& a = f->args;
  a.query = call.query, a.key = call.key[0], a.value = call.value[0];
  a.atten_mask = call.atten_mask;
  if (call.input_layout == "TND") {
    a.actual_seq_qlen = call.actual_seq_lengths;
    a.actual_seq_kvlen = call.actual_seq_lengths_kv;
  }
  a.scale = call.scale;
  a.pre_tokens = call.pre_tokens, a.next_tokens = call.next_tokens;
  a.head_num = call.num_heads;
  a.input_layout = call.input_layout;
  a.sparse_mode = call.sparse_mode;
  a.softmax_max = f->max_sum->max_view();
  a.softmax_sum = f->max_sum->sum_view();
  a.attention_out = call.attention_out;
  if (extensions) a.num_threads = static_cast<int>(in.below(5));
  mutate(in, f);
}

const std::vector<const char*>& fa_names() {
  static const std::vector<const char*> names = [] {
    std::vector<const char*> n = {"workspace",
                                  "workspaceSize",
                                  "executor",
                                  "stream",
                                  "plan",
                                  "num_threads",
                                  "input_layout",
                                  "pre_tokens",
                                  "next_tokens",
                                  "actual_seq_lengths",
                                  "actual_seq_lengths_kv",
                                  "key",
                                  "value"};
    const auto add = [&](const auto& table) {
      core::for_each_field(table, [&](const auto& fld) {
        n.push_back(fld.name);
        if (fld.acl_name != nullptr) n.push_back(fld.acl_name);
      });
    };
    add(fa::kFields);
    add(fia::kFields);
    return n;
  }();
  return names;
}

bool fa_affordable(const FaFuzzCase& f, uint64_t ws_size) {
  return f.runnable && ws_size <= (uint64_t{1} << 28);
}

void check_fa_guards(const FaFuzzCase& f, const char* where) {
  for (const auto& m : f.memory) m->check_guards(where);
}

void check_fa_run(FaFuzzCase& f, int64_t status, const char* where) {
  check_fa_guards(f, where);
  if (status != 0)
    violated(std::string(where) + ": a planned call failed with " + core::str(status));
  ++stats().ran;
  if (f.mutated) return;
  ++stats().compared;
  const reference::FiaReference ref = reference::fia_reference(f.data->call());
  const auto r =
      testing::compare_fia_output(f.data->spec().name(), f.data->call(), ref, nullptr, true);
  if (!r) violated(std::string(where) + ": output differs from the oracle: " + r.message());
  const auto m = testing::compare_fia_max_sum(*f.data, ref, *f.max_sum);
  if (!m)
    violated(std::string(where) + ": softmax max / sum differ from the oracle: " + m.message());
}

}  // namespace kvflash::fuzz
