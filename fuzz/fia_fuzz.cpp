#include "fia_fuzz.hpp"

#include <cstring>
#include <optional>
#include <type_traits>

#include "ops/fia/fia_fields.hpp"

namespace kvflash::fuzz {
namespace {

constexpr uint64_t kMaxBacked = uint64_t{1} << 24;

std::vector<testing::FiaCase> usable_cases(bool pfa) {
  std::vector<testing::FiaCase> out;
  for (const testing::FiaCase& c : testing::fia_cases(testing::Tier::kSmoke)) {
    // FIA's entry points cannot say prompt (PFA's cases go to PFA's); aclnn has no fp32 output.
    if (c.dv() % 16 != 0 || c.out_dtype == DType::kFloat32 || (c.prompt && !pfa)) continue;
    if (pfa && (c.paged || c.list_mode || c.lse || c.sink || c.rope_dim || c.prefix_len ||
                c.q_padding >= 0 || c.kv_padding >= 0 || c.kv_dtype == DType::kInt8))
      continue;
    out.push_back(c);
  }
  return out;
}

// The views of a call in the field table's order (absent optionals are skipped).
std::vector<TensorView*> views(FiaArgs& a) {
  std::vector<TensorView*> v;
  core::for_each_view(fia::kFields, a, [&](TensorView& t, const char*) {
    v.push_back(&t);
    return Status::kSuccess;
  });
  return v;
}

// The members of type T of a call, in the field table's order.
template <class T>
std::vector<T*> members(FiaArgs& a) {
  std::vector<T*> out;
  core::for_each_field(fia::kFields, [&](const auto& f) {
    if constexpr (std::is_same_v<typename std::remove_cvref_t<decltype(f)>::Type, T>)
      out.push_back(&(a.*f.member));
  });
  return out;
}

// Gives a mutated view memory of its own (or the unreadable page).
void back(FiaFuzzCase* f, TensorView* t) {
  const std::optional<uint64_t> bytes = view_bytes(*t);
  if (!bytes || *bytes > kMaxBacked) {
    t->data = unreadable_page();
    f->runnable = false;
    return;
  }
  f->memory.push_back(std::make_unique<Guarded>(static_cast<size_t>(*bytes), 0, 0));
  t->data = f->memory.back()->data();
}

void mutate(FuzzInput& in, FiaFuzzCase* f) {
  reference::FiaCall& a = f->call;
  static const char* const kLayouts[] = {"BSH",       "BSND",     "BNSD",    "TND",     "NTD",
                                         "BNSD_BSND", "BSH_NBSD", "TND_NTD", "NTD_TND", "BSH_BNSD",
                                         "NSD",       "",         "bsnd",    "TND_TND"};
  const int n = static_cast<int>(in.below(4));
  for (int m = 0; m < n; ++m) {
    f->mutated = true;
    std::vector<TensorView*> vs = views(a);
    TensorView* t = vs[in.below(static_cast<uint32_t>(vs.size()))];
    switch (in.below(10)) {
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
        t->offset = in.special(t->offset);
        back(f, t);
        break;
      case 3:
        t->dtype = static_cast<DType>(in.in(-1, 40));
        back(f, t);
        break;
      case 4: {
        const std::vector<int64_t*> attrs = members<int64_t>(a);
        int64_t* x = attrs[in.below(static_cast<uint32_t>(attrs.size()))];
        *x = in.special(*x);
        break;
      }
      case 5:
        a.input_layout = kLayouts[in.below(sizeof kLayouts / sizeof kLayouts[0])];
        break;
      case 6: {  // an optional tensor appears (a copy of the query's view) or disappears
        const std::vector<std::optional<TensorView>*> opts = members<std::optional<TensorView>>(a);
        std::optional<TensorView>* o = opts[in.below(static_cast<uint32_t>(opts.size()))];
        if (*o) {
          o->reset();
        } else {
          *o = a.query;
        }
        break;
      }
      case 7: {
        auto& l = in.flag() ? a.actual_seq_lengths : a.actual_seq_lengths_kv;
        if (!l || l->empty() || in.rare(4)) {
          l = std::vector<int64_t>(in.below(5), in.special(3));
        } else {
          (*l)[in.below(static_cast<uint32_t>(l->size()))] = in.special((*l)[0]);
        }
        break;
      }
      case 8:
        a.softmax_lse_flag = !a.softmax_lse_flag;
        break;
      default:
        if (!a.key.empty() && in.flag()) {
          a.key.pop_back();
        } else {
          a.value.push_back(a.value.empty() ? a.query : a.value.back());
        }
        break;
    }
  }
}

}  // namespace

bool decode_fia(FuzzInput& in, bool pfa, FiaFuzzCase* f) {
  static const std::vector<testing::FiaCase> kCases[2] = {usable_cases(false), usable_cases(true)};
  const auto& cases = kCases[pfa ? 1 : 0];
  if (cases.empty()) return false;
  testing::FiaCase c = cases[in.below(static_cast<uint32_t>(cases.size()))];
  if (pfa) c.prompt = true;
  f->data = std::make_unique<testing::FiaCaseData>(c);
  f->call = f->data->call();
  set_context(c.name());
  mutate(in, f);
  return true;
}

const std::vector<const char*>& fia_names() {
  static const std::vector<const char*> names = [] {
    // Every member and aclnn parameter name of both tables, and the phase arguments.
    std::vector<const char*> n = {"workspace", "workspaceSize", "executor", "stream", "plan"};
    const auto add = [&](const auto& table) {
      core::for_each_field(table, [&](const auto& f) {
        n.push_back(f.name);
        if (f.acl_name != nullptr) n.push_back(f.acl_name);
      });
    };
    add(fia::kFields);
    add(fia::kPfaAclFields);
    return n;
  }();
  return names;
}

bool fia_affordable(const FiaFuzzCase& f, uint64_t ws_size) {
  return f.runnable && ws_size <= (uint64_t{1} << 28);
}

void check_fia_guards(const FiaFuzzCase& f, const char* where) {
  for (const auto& m : f.memory) m->check_guards(where);
}

void check_fia_run(FiaFuzzCase& f, int64_t status, const char* where) {
  check_fia_guards(f, where);
  if (status != 0) {
    ++stats().faulted;
    return;
  }
  ++stats().ran;
  if (f.mutated) return;
  ++stats().compared;
  const reference::FiaReference ref = reference::fia_reference(f.call);
  const auto r = testing::compare_fia_output(f.data->spec().name(), f.call, ref, nullptr,
                                             f.data->spec().expect_mostly_empty);
  if (!r) violated(std::string(where) + ": output differs from the oracle: " + r.message());
}

}  // namespace kvflash::fuzz
