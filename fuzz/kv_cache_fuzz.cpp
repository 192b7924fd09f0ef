#include "kv_cache_fuzz.hpp"

#include <cstdint>
#include <optional>
#include <unordered_set>

#include "core/strings.hpp"
#include "kv_cache_reference.hpp"
#include "ops/kv_cache/kv_cache_fields.hpp"

namespace kvflash::fuzz {
namespace {

using core::str;

// The oracle of the last expect_kv_cache() (one fuzz input at a time).
std::optional<reference::KvCacheReference>& expectation() {
  static std::optional<reference::KvCacheReference> e;
  return e;
}
// Whether that call's key and value caches share a byte (the run must refuse it).
bool& caches_shared() {
  static bool shared = false;
  return shared;
}

bool backed(const TensorView& v) { return v.data != unreadable_page(); }

// Calls f(byte address) for every byte of every element of v (small views: affordable).
template <class F>
void for_each_byte(const TensorView& v, F f) {
  const int64_t es = static_cast<int64_t>(dtype_size(v.dtype));
  int64_t n = 1;
  for (int k = 0; k < v.rank; ++k) n *= v.shape[k];
  for (int64_t e = 0; e < n; ++e) {
    int64_t rest = e, off = v.offset;
    for (int k = v.rank - 1; k >= 0; --k) {
      off += rest % v.shape[k] * v.strides[k];
      rest /= v.shape[k];
    }
    const auto base = reinterpret_cast<uintptr_t>(v.data) + static_cast<uintptr_t>(off * es);
    for (int64_t b = 0; b < es; ++b) f(base + static_cast<uintptr_t>(b));
  }
}

// An independent model of the run's check: the caches' byte sets intersect.
bool share_bytes(const TensorView& a, const TensorView& b) {
  std::unordered_set<uintptr_t> bytes;
  for_each_byte(a, [&](uintptr_t p) { bytes.insert(p); });
  bool shared = false;
  for_each_byte(b, [&](uintptr_t p) { shared |= bytes.count(p) != 0; });
  return shared;
}

// Views whose bytes the checks enumerate: at most 2^20 bytes each.
bool small(const TensorView& v) {
  const std::optional<uint64_t> bytes = view_bytes(v);
  int64_t n = 1;
  for (int k = 0; k < v.rank; ++k) {
    if (v.shape[k] > (int64_t{1} << 20)) return false;
    n *= v.shape[k];
    if (n > (int64_t{1} << 20)) return false;
  }
  return bytes.has_value() && n * static_cast<int64_t>(dtype_size(v.dtype)) <= (int64_t{1} << 20);
}

}  // namespace

std::vector<Slot> KvCacheFuzzCase::slots() {
  ScatterPaKvCacheArgs& a = args;
  std::vector<Slot> s;
  s.push_back({&a.key, "key", Role::kData});
  s.push_back({&a.key_cache, "key_cache", Role::kOutput, true});
  s.push_back({&a.slot_mapping, "slot_mapping", Role::kIds});
  if (a.value) s.push_back({&*a.value, "value", Role::kData});
  if (a.value_cache) s.push_back({&*a.value_cache, "value_cache", Role::kOutput, true});
  for (auto* o : {&a.compress_lens, &a.compress_seq_offsets, &a.seq_lens})
    if (*o) s.push_back({&**o, "compress_lens", Role::kLengths});
  return s;
}

const std::vector<const char*>& kv_cache_names() {
  static const std::vector<const char*> names = [] {
    std::vector<const char*> n = {"workspace", "workspaceSize", "executor", "stream",
                                  "plan",      "num_threads",   "value",    "valueCacheRef"};
    core::for_each_field(kv_cache::kFields, [&](const auto& f) {
      n.push_back(f.name);
      n.push_back(f.acl_name);
    });
    return n;
  }();
  return names;
}

void decode_kv_cache(FuzzInput& in, bool extensions, KvCacheFuzzCase* f) {
  static constexpr DType kDtypes[] = {DType::kFloat16, DType::kBFloat16, DType::kFloat32,
                                      DType::kInt8, DType::kInt32};
  testing::KvCacheCase c;
  c.tokens = in.in(0, 12);
  c.kv_heads = in.in(1, 3);
  c.key_dim = in.in(1, 40);
  c.value_dim = in.flag() ? c.key_dim : in.in(1, 40);
  c.num_blocks = in.in(1, 6);
  c.block_size = in.in(1, 9);
  c.dtype = kDtypes[in.below(5)];
  c.slot_dtype = in.flag() ? DType::kInt32 : DType::kInt64;
  c.with_value = !in.rare(4);
  c.strided_rows = in.flag();
  c.fused_cache = c.with_value && c.value_dim == c.key_dim && in.rare(3);
  c.skip_every = in.in(0, 3);
  if (c.tokens > c.num_blocks * c.block_size) c.tokens = c.num_blocks * c.block_size;
  set_context(c.name());
  testing::fill_kv_cache_case(c, &f->data, static_cast<uint32_t>(in.u64()));
  f->rng = testing::TestRng(in.u64() | 1);
  ScatterPaKvCacheArgs& a = f->args;
  a = f->data.args;
  if (extensions) a.num_threads = static_cast<int>(in.below(5));
  // ---- attributes and refused tensors ----
  static const char* const kModes[] = {"Norm", "", "PA_NZ", "None", "Nct", "Rope", "x"};
  for (int n = static_cast<int>(in.below(3)); n > 0; --n) {
    switch (in.below(6)) {
      case 0:
        a.cache_mode = kModes[in.below(7)];
        add_context("cache_mode=" + a.cache_mode);
        break;
      case 1:
        a.scatter_mode = kModes[in.below(7)];
        add_context("scatter_mode=" + a.scatter_mode);
        break;
      case 2:
        a.seq_lens = a.slot_mapping;
        add_context("+seq_lens");
        break;
      case 3:
        if (a.value) {
          a.value_cache.reset();
          add_context("-value_cache");
        }
        break;
      case 4:
        a.strides = std::vector<int64_t>{in.special(1), 1};
        break;
      default:
        if (extensions) a.num_threads = static_cast<int>(in.special(2));
        break;
    }
  }
  // ---- caches in guarded memory, metadata mutations, slot values ----
  for (const Slot& slot : f->slots())
    if (slot.output) f->mem.guard_output(slot, in.below(8));
  for (int n = static_cast<int>(in.below(3)); n > 0; --n) {
    std::vector<Slot> s = f->slots();
    add_context(mutate_view(in, s[in.below(static_cast<uint32_t>(s.size()))], f->mem, f->rng));
  }
  for (int n = static_cast<int>(in.below(3)); n > 0; --n) {
    std::vector<Slot> s = f->slots();
    add_context(poke_int(in, s[2], c.num_blocks * c.block_size));
  }
}

bool kv_cache_affordable(const KvCacheFuzzCase& f) {
  if (f.mem.unbacked) return false;
  const ScatterPaKvCacheArgs& a = f.args;
  for (const TensorView* v : {&a.key, &a.key_cache, &a.slot_mapping})
    if (!backed(*v)) return false;
  if (a.value && !backed(*a.value)) return false;
  if (a.value_cache && (!backed(*a.value_cache) || !small(*a.value_cache))) return false;
  return small(a.key_cache);
}

void expect_kv_cache(KvCacheFuzzCase& f) {
  const ScatterPaKvCacheArgs& a = f.args;
  caches_shared() = a.value_cache && share_bytes(a.key_cache, *a.value_cache);
  if (caches_shared()) {  // refused by the run: the caches stay as they are
    reference::KvCacheReference same;
    same.key_cache = reference::element_bytes(a.key_cache);
    same.value_cache = reference::element_bytes(*a.value_cache);
    expectation() = same;
  } else {
    expectation() = reference::kv_cache_reference(a);
  }
}

void check_kv_cache_run(KvCacheFuzzCase& f, int64_t status, const std::string& message,
                        const std::string& where) {
  const reference::KvCacheReference& ref = *expectation();
  if (caches_shared()) {
    if (status != KVFLASH_ERR_PARAM_INVALID)
      violated(where + ": caches sharing memory ran with status " + str(status));
    if (message.find("key_cache and value_cache share memory") == std::string::npos)
      violated(where + ": the refusal of shared caches does not say so: " + message);
    ++stats().faulted;
  } else if (!ref.slots_ok) {
    if (status != KVFLASH_ERR_PARAM_INVALID)
      violated(where + ": bad slots ran with status " + str(status));
    if (message.find("slot_mapping[") == std::string::npos)
      violated(where + ": the fault message does not name slot_mapping: " + message);
    ++stats().faulted;
  } else if (status != 0) {
    violated(where + ": valid slots failed with " + str(status) + ": " + message);
  } else {
    ++stats().ran;
  }
  if (reference::element_bytes(f.args.key_cache) != ref.key_cache)
    violated(where + ": key_cache differs from the oracle's bytes");
  if (f.args.value_cache && reference::element_bytes(*f.args.value_cache) != ref.value_cache)
    violated(where + ": value_cache differs from the oracle's bytes");
  ++stats().compared;
}

}  // namespace kvflash::fuzz
