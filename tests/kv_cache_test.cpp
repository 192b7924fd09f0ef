// ScatterPaKvCache (kvflash/kv_cache.hpp): every case of the shared list (support/kv_cache_cases)
// against the oracle's exact bytes at several thread counts, the slot rules (negative skipped;
// out of range or twice refused before anything is written), one test per validation rule, and
// the plan's match of a run.
#include "kvflash/kv_cache.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kv_cache_reference.hpp"
#include "support/kv_cache_cases.hpp"
#include "support/workspace_buffer.hpp"

namespace kvflash {
namespace {

using testing::fill_kv_cache_case;
using testing::KvCacheCase;
using testing::KvCacheCaseData;

::testing::AssertionResult caches_equal(const std::string& name, const ScatterPaKvCacheArgs& a,
                                        const reference::KvCacheReference& ref) {
  if (reference::element_bytes(a.key_cache) != ref.key_cache) {
    return ::testing::AssertionFailure() << name << ": key_cache differs from the reference";
  }
  if (a.value_cache && reference::element_bytes(*a.value_cache) != ref.value_cache) {
    return ::testing::AssertionFailure() << name << ": value_cache differs from the reference";
  }
  return ::testing::AssertionSuccess();
}

Status run_once(const ScatterPaKvCacheArgs& a) {
  std::unique_ptr<ScatterPaKvCachePlan> plan;
  if (const Status s = ScatterPaKvCachePlan::create(a, &plan); s != Status::kSuccess) return s;
  testing::WorkspaceBuffer ws(plan->workspace_size());
  return plan->run(a, ws.data(), ws.size());
}

bool message_has(const char* needle) {
  return std::string(last_error_message()).find(needle) != std::string::npos;
}

TEST(KvCache, MatchesReferenceAtEveryThreadCount) {
  uint32_t seed = 1;
  for (const KvCacheCase& c : testing::kv_cache_cases()) {
    for (int threads : {1, 2, 5}) {
      KvCacheCaseData d;
      fill_kv_cache_case(c, &d, seed);
      d.args.num_threads = threads;
      const reference::KvCacheReference ref = reference::kv_cache_reference(d.args);
      ASSERT_TRUE(ref.slots_ok) << c.name();
      ASSERT_EQ(run_once(d.args), Status::kSuccess) << c.name() << ": " << last_error_message();
      EXPECT_TRUE(caches_equal(c.name() + " threads=" + std::to_string(threads), d.args, ref));
    }
    ++seed;
  }
}

// A slot past the cache fails the call naming the entry, and nothing is written, even the rows
// of the tokens before it.
TEST(KvCache, OutOfRangeSlotIsRefusedBeforeAnythingIsWritten) {
  for (DType sd : {DType::kInt32, DType::kInt64}) {
    KvCacheCase c;
    c.tokens = 9, c.slot_dtype = sd, c.skip_every = 0;
    KvCacheCaseData d;
    fill_kv_cache_case(c, &d, 5);
    d.set_slot(6, sd == DType::kInt64 ? (int64_t{1} << 40) : c.num_blocks * c.block_size);
    const std::vector<uint8_t> key_before = reference::element_bytes(d.args.key_cache);
    const std::vector<uint8_t> value_before = reference::element_bytes(*d.args.value_cache);
    EXPECT_EQ(run_once(d.args), Status::kInvalid);
    EXPECT_TRUE(message_has("slot_mapping[6]")) << last_error_message();
    EXPECT_TRUE(message_has("outside the cache")) << last_error_message();
    EXPECT_TRUE(message_has("nothing was written")) << last_error_message();
    EXPECT_EQ(reference::element_bytes(d.args.key_cache), key_before);
    EXPECT_EQ(reference::element_bytes(*d.args.value_cache), value_before);
    EXPECT_FALSE(reference::kv_cache_reference(d.args).slots_ok);
  }
}

TEST(KvCache, DuplicateSlotIsRefusedBeforeAnythingIsWritten) {
  KvCacheCase c;
  c.tokens = 7, c.skip_every = 0;
  KvCacheCaseData d;
  fill_kv_cache_case(c, &d, 9);
  d.set_slot(5, 17);
  d.set_slot(2, 17);
  const std::vector<uint8_t> before = reference::element_bytes(d.args.key_cache);
  EXPECT_EQ(run_once(d.args), Status::kInvalid);
  EXPECT_TRUE(message_has("slot_mapping[2] and slot_mapping[5] are both 17"))
      << last_error_message();
  EXPECT_EQ(reference::element_bytes(d.args.key_cache), before);
}

// Every negative value skips its token (vLLM pads with -1; any negative is a skip).
TEST(KvCache, NegativeSlotsSkipTheirTokens) {
  KvCacheCase c;
  c.tokens = 6, c.skip_every = 0, c.slot_dtype = DType::kInt64;
  KvCacheCaseData d;
  fill_kv_cache_case(c, &d, 2);
  d.set_slot(0, -1);
  d.set_slot(3, INT64_MIN);
  d.set_slot(4, -7);
  const reference::KvCacheReference ref = reference::kv_cache_reference(d.args);
  ASSERT_TRUE(ref.slots_ok);
  ASSERT_EQ(run_once(d.args), Status::kSuccess) << last_error_message();
  EXPECT_TRUE(caches_equal("negative slots", d.args, ref));
}

// One rule per test row: the mutation, the status and a piece of the message.
struct Rule {
  const char* what;
  void (*mutate)(ScatterPaKvCacheArgs&);
  Status status;
  const char* message;
};

const Rule kRules[] = {
    {"null key", [](ScatterPaKvCacheArgs& a) { a.key.data = nullptr; }, Status::kNullPtr,
     "key is null"},
    {"null key_cache", [](ScatterPaKvCacheArgs& a) { a.key_cache.data = nullptr; },
     Status::kNullPtr, "key_cache is null"},
    {"null slot_mapping", [](ScatterPaKvCacheArgs& a) { a.slot_mapping.data = nullptr; },
     Status::kNullPtr, "slot_mapping is null"},
    {"PA_NZ", [](ScatterPaKvCacheArgs& a) { a.cache_mode = "PA_NZ"; }, Status::kInvalid,
     "cache_mode \"PA_NZ\" (a FRACTAL_NZ cache"},
    {"unknown cache_mode", [](ScatterPaKvCacheArgs& a) { a.cache_mode = "nz"; }, Status::kInvalid,
     "cache_mode must be \"Norm\" or \"PA_NZ\", got \"nz\""},
    {"Nct", [](ScatterPaKvCacheArgs& a) { a.scatter_mode = "Nct"; }, Status::kInvalid,
     "scatter_mode \"Nct\" is not supported"},
    {"unknown scatter_mode", [](ScatterPaKvCacheArgs& a) { a.scatter_mode = "x"; },
     Status::kInvalid, "scatter_mode must be"},
    {"compress_lens", [](ScatterPaKvCacheArgs& a) { a.compress_lens = a.slot_mapping; },
     Status::kInvalid, "compress_lens (the compressed cache writes) is not supported"},
    {"compress_seq_offsets",
     [](ScatterPaKvCacheArgs& a) { a.compress_seq_offsets = a.slot_mapping; }, Status::kInvalid,
     "compress_seq_offsets"},
    {"seq_lens", [](ScatterPaKvCacheArgs& a) { a.seq_lens = a.slot_mapping; }, Status::kInvalid,
     "seq_lens (the compressed cache writes)"},
    {"4-D key",
     [](ScatterPaKvCacheArgs& a) {
       a.key = TensorView::contiguous(a.key.data, a.key.dtype, {1, 5, 2, 16});
     },
     Status::kInvalid, "a 4-D key"},
    {"5-D cache",
     [](ScatterPaKvCacheArgs& a) {
       a.key_cache = TensorView::contiguous(a.key_cache.data, a.key_cache.dtype, {4, 2, 1, 8, 16});
     },
     Status::kInvalid, "a 5-D key_cache (a FRACTAL_NZ cache)"},
    {"NZ-shaped 4-D cache",
     [](ScatterPaKvCacheArgs& a) {
       a.key_cache = TensorView::contiguous(a.key_cache.data, a.key_cache.dtype, {4, 2, 8, 16});
     },
     Status::kInvalid, "key_cache must be (num_blocks, block_size, KV_N, D) = (*, *, 2, 16)"},
    {"cache dtype", [](ScatterPaKvCacheArgs& a) { a.key_cache.dtype = DType::kBFloat16; },
     Status::kInvalid, "key_cache dtype (bf16) must be key's (fp16)"},
    {"value dtype", [](ScatterPaKvCacheArgs& a) { a.value->dtype = DType::kBFloat16; },
     Status::kInvalid, "value dtype (bf16) must be key's (fp16)"},
    {"value without cache", [](ScatterPaKvCacheArgs& a) { a.value_cache.reset(); },
     Status::kInvalid, "value_cache is required with value"},
    {"cache without value", [](ScatterPaKvCacheArgs& a) { a.value.reset(); }, Status::kInvalid,
     "value is required with value_cache"},
    {"value heads",
     [](ScatterPaKvCacheArgs& a) {
       a.value = TensorView::contiguous(a.value->data, a.value->dtype, {5, 1, 32});
     },
     Status::kInvalid, "value must be (T, KV_N, D) = (5, 2, D)"},
    {"value_cache blocks",
     [](ScatterPaKvCacheArgs& a) {
       a.value_cache =
           TensorView::contiguous(a.value_cache->data, a.value_cache->dtype, {2, 8, 2, 16});
     },
     Status::kInvalid, "value_cache's (num_blocks, block_size) (2, 8) must be key_cache's (4, 8)"},
    {"slot dtype", [](ScatterPaKvCacheArgs& a) { a.slot_mapping.dtype = DType::kFloat32; },
     Status::kInvalid, "slot_mapping dtype must be int32 or int64, got fp32"},
    {"slot length",
     [](ScatterPaKvCacheArgs& a) {
       a.slot_mapping = TensorView::contiguous(a.slot_mapping.data, a.slot_mapping.dtype, {4});
     },
     Status::kInvalid, "slot_mapping must be (T,) = (5,)"},
    {"block_size 0",
     [](ScatterPaKvCacheArgs& a) {
       a.key_cache = TensorView::contiguous(a.key_cache.data, a.key_cache.dtype, {4, 0, 2, 16});
     },
     Status::kInvalid, "block_size (dim 1) must be >= 1"},
    {"device",
     [](ScatterPaKvCacheArgs& a) {
       a.slot_mapping.device = {DeviceType::kCuda, 0};
     },
     Status::kInvalid, "every tensor of a call must be on one device"},
    {"negative stride", [](ScatterPaKvCacheArgs& a) { a.key.strides[0] = -1; }, Status::kInvalid,
     "key"},
    {"num_threads", [](ScatterPaKvCacheArgs& a) { a.num_threads = -1; }, Status::kInvalid,
     "num_threads (-1) must be >= 0"},
};

// The caches' memory. One buffer may hold both caches in any layout where no element is both
// (vLLM's (2, blocks, ...), FlashInfer's (blocks, 2, ...), a (.., Dk + Dv) split): the write is
// the oracle's. A cache whose strides give two elements one address is refused when planned; a
// key and a value cache with an element in common are refused by the run (the addresses are
// the run's), and nothing is written.
TEST(KvCache, CachesInOneBufferAndSharedMemory) {
  const int64_t nb = 4, bs = 8, kvn = 2, d = 16, es = 2;
  KvCacheCaseData data;
  fill_kv_cache_case(KvCacheCase{}, &data, 11);
  std::vector<uint8_t> buffer(static_cast<size_t>(2 * nb * bs * kvn * d * es));
  for (size_t i = 0; i < buffer.size(); ++i) buffer[i] = static_cast<uint8_t>(i * 7 + 3);
  const auto view = [&](std::vector<int64_t> strides, int64_t offset, int64_t dim) {
    TensorView v = TensorView::contiguous(buffer.data(), DType::kFloat16, {nb, bs, kvn, dim});
    for (int k = 0; k < 4; ++k) v.strides[k] = strides[static_cast<size_t>(k)];
    v.offset = offset;
    return v;
  };
  struct Layout {
    const char* what;
    TensorView key_cache, value_cache;
  };
  const int64_t blk = bs * kvn * d;
  const Layout apart[] = {
      {"(2, blocks, ...)", view({blk, kvn * d, d, 1}, 0, d),
       view({blk, kvn * d, d, 1}, nb * blk, d)},
      {"(blocks, 2, ...)", view({2 * blk, kvn * d, d, 1}, 0, d),
       view({2 * blk, kvn * d, d, 1}, blk, d)},
      {"(.., Dk + Dv) split", view({2 * blk, 2 * kvn * d, 2 * d, 1}, 0, d),
       view({2 * blk, 2 * kvn * d, 2 * d, 1}, d, d)},
  };
  for (const Layout& l : apart) {
    ScatterPaKvCacheArgs a = data.args;
    a.key_cache = l.key_cache;
    a.value_cache = l.value_cache;
    const reference::KvCacheReference ref = reference::kv_cache_reference(a);
    ASSERT_EQ(run_once(a), Status::kSuccess) << l.what << ": " << last_error_message();
    EXPECT_TRUE(caches_equal(l.what, a, ref));
  }
  // Refused when planned: positions 1 element apart in a cache of rows of KV_N * D.
  ScatterPaKvCacheArgs self = data.args;
  self.key_cache.strides[1] = 1;
  std::unique_ptr<ScatterPaKvCachePlan> plan;
  EXPECT_EQ(ScatterPaKvCachePlan::create(self, &plan), Status::kInvalid);
  EXPECT_TRUE(message_has("key_cache's strides give two of its elements one address (dim"))
      << last_error_message();
  // Refused by the run: the same cache twice, and a value cache starting inside the key cache.
  const Layout shared[] = {
      {"one cache twice", view({blk, kvn * d, d, 1}, 0, d), view({blk, kvn * d, d, 1}, 0, d)},
      {"interleaved by half a block", view({2 * blk, kvn * d, d, 1}, 0, d),
       view({2 * blk, kvn * d, d, 1}, blk / 2, d)},
      {"other strides, ranges crossing", view({blk, kvn * d, d, 1}, 0, d),
       view({blk, kvn * d, 1, kvn}, blk, d)},
  };
  for (const Layout& l : shared) {
    ScatterPaKvCacheArgs a = data.args;
    a.key_cache = l.key_cache;
    a.value_cache = l.value_cache;
    ASSERT_EQ(ScatterPaKvCachePlan::create(a, &plan), Status::kSuccess) << l.what;
    const std::vector<uint8_t> before = buffer;
    testing::WorkspaceBuffer ws(plan->workspace_size());
    EXPECT_EQ(plan->run(a, ws.data(), ws.size()), Status::kInvalid) << l.what;
    EXPECT_TRUE(message_has("key_cache and value_cache share memory")) << l.what;
    EXPECT_TRUE(message_has("nothing was written")) << l.what;
    EXPECT_EQ(buffer, before) << l.what;
  }
}

TEST(KvCache, EveryValidationRuleNamesItsArgument) {
  for (const Rule& r : kRules) {
    KvCacheCaseData d;
    fill_kv_cache_case(KvCacheCase{}, &d, 1);
    r.mutate(d.args);
    std::unique_ptr<ScatterPaKvCachePlan> plan;
    EXPECT_EQ(ScatterPaKvCachePlan::create(d.args, &plan), r.status) << r.what;
    EXPECT_TRUE(message_has(r.message)) << r.what << ": " << last_error_message();
    EXPECT_TRUE(message_has("[scatter_pa_kv_cache]")) << r.what << ": " << last_error_message();
    EXPECT_EQ(plan, nullptr) << r.what;
  }
}

// "Norm" and "None" may also be given empty (aclnn's null cacheMode / scatterMode); strides and
// offsets are ignored with scatter mode "None" (op-plugin passes {1, 1} and {0, 0}).
TEST(KvCache, DefaultModesAndIgnoredStrides) {
  KvCacheCaseData d;
  fill_kv_cache_case(KvCacheCase{}, &d, 4);
  d.args.cache_mode = "";
  d.args.scatter_mode = "";
  d.args.strides = std::vector<int64_t>{1, 1};
  d.args.offsets = std::vector<int64_t>{0, 0};
  const reference::KvCacheReference ref = reference::kv_cache_reference(d.args);
  ASSERT_EQ(run_once(d.args), Status::kSuccess) << last_error_message();
  EXPECT_TRUE(caches_equal("default modes", d.args, ref));
}

// One plan serves every call with the same metadata; another shape is refused naming it.
TEST(KvCache, PlanRunsNewDataAndRefusesOtherMetadata) {
  KvCacheCaseData d1, d2;
  fill_kv_cache_case(KvCacheCase{}, &d1, 1);
  fill_kv_cache_case(KvCacheCase{}, &d2, 2);
  std::unique_ptr<ScatterPaKvCachePlan> plan;
  ASSERT_EQ(ScatterPaKvCachePlan::create(d1.args, &plan), Status::kSuccess);
  testing::WorkspaceBuffer ws(plan->workspace_size());
  const reference::KvCacheReference ref = reference::kv_cache_reference(d2.args);
  ASSERT_EQ(plan->run(d2.args, ws.data(), ws.size()), Status::kSuccess) << last_error_message();
  EXPECT_TRUE(caches_equal("second data", d2.args, ref));
  EXPECT_EQ(plan->status(ws.data()), Status::kSuccess);

  KvCacheCase other;
  other.tokens = 6;
  KvCacheCaseData d3;
  fill_kv_cache_case(other, &d3, 3);
  EXPECT_EQ(plan->run(d3.args, ws.data(), ws.size()), Status::kInvalid);
  EXPECT_TRUE(message_has("key")) << last_error_message();
  EXPECT_EQ(plan->run(d2.args, ws.data(), ws.size() - 1), Status::kInvalid);
  EXPECT_TRUE(message_has("workspace_size")) << last_error_message();
}

TEST(KvCache, FingerprintsAgreeOnEqualMetadata) {
  KvCacheCaseData d1, d2;
  fill_kv_cache_case(KvCacheCase{}, &d1, 1);
  fill_kv_cache_case(KvCacheCase{}, &d2, 2);
  std::string f1, f2;
  ASSERT_EQ(ScatterPaKvCachePlan::fingerprint(d1.args, &f1), Status::kSuccess);
  ASSERT_EQ(ScatterPaKvCachePlan::fingerprint(d2.args, &f2), Status::kSuccess);
  EXPECT_EQ(f1, f2);
  d2.args.cache_mode = "";
  ASSERT_EQ(ScatterPaKvCachePlan::fingerprint(d2.args, &f2), Status::kSuccess);
  EXPECT_NE(f1, f2);
}

}  // namespace
}  // namespace kvflash
