#include "support/kv_cache_cases.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "support/test_rng.hpp"

namespace kvflash::testing {

std::string KvCacheCase::name() const {
  std::string n = "T" + std::to_string(tokens) + "_N" + std::to_string(kv_heads) + "_Dk" +
                  std::to_string(key_dim) + "_Dv" + std::to_string(value_dim) + "_nb" +
                  std::to_string(num_blocks) + "_bs" + std::to_string(block_size) + "_" +
                  dtype_name(dtype) + "_slot" + dtype_name(slot_dtype);
  if (!with_value) n += "_keyonly";
  if (strided_rows) n += "_strided";
  if (fused_cache) n += "_fused";
  if (interleaved_blocks) n += "_interleaved";
  if (skip_every == 0) n += "_noskip";
  if (prefill_slots) n += blocks_in_order ? "_prefill_inorder" : "_prefill";
  return n;
}

void KvCacheCaseData::set_slot(int64_t t, int64_t v) {
  if (args.slot_mapping.dtype == DType::kInt64) {
    std::memcpy(slots.data() + t * 8, &v, 8);
  } else {
    const auto w = static_cast<int32_t>(v);
    std::memcpy(slots.data() + t * 4, &w, 4);
  }
}

namespace {

void random_bytes(TestRng& rng, std::vector<uint8_t>* v) {
  for (uint8_t& b : *v) b = static_cast<uint8_t>(rng.next());
}

// (T, KV_N, D) rows: contiguous, or each token's heads 2 * D apart in a row of 2 * KV_N * D + 3.
TensorView rows_view(const KvCacheCase& c, int64_t dim, std::vector<uint8_t>* buf) {
  const auto es = static_cast<int64_t>(dtype_size(c.dtype));
  TensorView v;
  v.dtype = c.dtype;
  v.rank = 3;
  v.shape = {c.tokens, c.kv_heads, dim};
  if (c.strided_rows) {
    v.strides = {2 * c.kv_heads * dim + 3, 2 * dim, 1};
    v.offset = 1;
  } else {
    v.strides = {c.kv_heads * dim, dim, 1};
  }
  buf->resize(static_cast<size_t>((c.tokens * v.strides[0] + 4) * es));
  v.data = buf->data();
  return v;
}

TensorView cache_view(const KvCacheCase& c, int64_t dim, void* data) {
  return TensorView::contiguous(data, c.dtype, {c.num_blocks, c.block_size, c.kv_heads, dim});
}

}  // namespace

void fill_kv_cache_case(const KvCacheCase& c, KvCacheCaseData* d, uint32_t seed) {
  TestRng rng(seed * 7919ull + fnv1a(c.name()));
  *d = KvCacheCaseData{};
  ScatterPaKvCacheArgs& a = d->args;
  a.key = rows_view(c, c.key_dim, &d->key);
  random_bytes(rng, &d->key);
  const auto es = static_cast<int64_t>(dtype_size(c.dtype));
  const int64_t slots = c.num_blocks * c.block_size;
  const int64_t kc = slots * c.kv_heads * c.key_dim, vc = slots * c.kv_heads * c.value_dim;
  if (c.interleaved_blocks) {
    // One buffer, block b's key rows then its value rows (the value's D must be the key's).
    d->key_cache.resize(static_cast<size_t>(2 * kc * es));
    random_bytes(rng, &d->key_cache);
    const int64_t block = c.block_size * c.kv_heads * c.key_dim;
    a.key_cache = cache_view(c, c.key_dim, d->key_cache.data());
    a.key_cache.strides[0] = 2 * block;
    if (c.with_value) {
      a.value_cache = a.key_cache;
      a.value_cache->offset = block;
    }
  } else if (c.fused_cache) {
    // One buffer: the key cache, then the value cache (the value's D must be the key's).
    d->key_cache.resize(static_cast<size_t>((kc + vc) * es));
    random_bytes(rng, &d->key_cache);
    a.key_cache = cache_view(c, c.key_dim, d->key_cache.data());
    if (c.with_value) {
      a.value_cache = cache_view(c, c.value_dim, d->key_cache.data());
      a.value_cache->offset = kc;
    }
  } else {
    d->key_cache.resize(static_cast<size_t>(kc * es));
    random_bytes(rng, &d->key_cache);
    a.key_cache = cache_view(c, c.key_dim, d->key_cache.data());
    if (c.with_value) {
      d->value_cache.resize(static_cast<size_t>(vc * es));
      random_bytes(rng, &d->value_cache);
      a.value_cache = cache_view(c, c.value_dim, d->value_cache.data());
    }
  }
  if (c.with_value) {
    a.value = rows_view(c, c.value_dim, &d->value);
    random_bytes(rng, &d->value);
  }
  d->slots.resize(static_cast<size_t>(std::max<int64_t>(c.tokens, 1) * 8));
  a.slot_mapping = TensorView::contiguous(d->slots.data(), c.slot_dtype, {c.tokens});
  // Distinct slots: a shuffled prefix of all the cache's, or for a prefill requests of lengths
  // 2 blocks + 3, 1, 5 and 1 block in turn, each from position 0 of the next shuffled blocks.
  std::vector<int64_t> all(static_cast<size_t>(slots));
  std::iota(all.begin(), all.end(), 0);
  if (c.prefill_slots) {
    std::vector<int64_t> blocks(static_cast<size_t>(c.num_blocks));
    std::iota(blocks.begin(), blocks.end(), 0);
    for (int64_t i = c.num_blocks - 1; i > 0 && !c.blocks_in_order; --i)
      std::swap(blocks[i], blocks[rng.below(i + 1)]);
    const int64_t bs = c.block_size, lengths[] = {2 * bs + 3, 1, 5, bs};
    size_t at = 0, next_block = 0;
    for (int64_t r = 0; at < all.size() && next_block < blocks.size(); ++r) {
      for (int64_t p = 0; p < lengths[r % 4] && at < all.size(); ++p) {
        if (p % bs == 0 && next_block == blocks.size()) break;
        const int64_t block = blocks[p % bs == 0 ? next_block++ : next_block - 1];
        all[at++] = block * bs + p % bs;
      }
    }
    all.resize(at);  // the blocks' unused tails are no one's
  } else {
    for (int64_t i = slots - 1; i > 0; --i) std::swap(all[i], all[rng.below(i + 1)]);
  }
  for (int64_t t = 0; t < c.tokens; ++t) {
    const bool skip = c.skip_every > 0 && t % c.skip_every == 1;
    d->set_slot(t, skip ? -1 : all[static_cast<size_t>(t) % all.size()]);
  }
}

std::vector<KvCacheCase> kv_cache_cases() {
  std::vector<KvCacheCase> cases;
  for (DType dt : {DType::kFloat16, DType::kBFloat16, DType::kFloat32, DType::kInt8}) {
    for (DType sd : {DType::kInt32, DType::kInt64}) {
      KvCacheCase c;
      c.dtype = dt, c.slot_dtype = sd;
      cases.push_back(c);
    }
  }
  KvCacheCase c;
  c.key_dim = 32, c.value_dim = 8;  // head dims differ (upstream's scenario 2)
  cases.push_back(c);
  c = KvCacheCase{};
  c.with_value = false;  // the key only (aclnn's 0-D value)
  cases.push_back(c);
  c = KvCacheCase{};
  c.strided_rows = true, c.dtype = DType::kBFloat16;
  cases.push_back(c);
  c = KvCacheCase{};
  c.fused_cache = true, c.strided_rows = true;
  cases.push_back(c);
  c = KvCacheCase{};
  c.tokens = 0;
  cases.push_back(c);
  c = KvCacheCase{};
  c.tokens = 1, c.skip_every = 0;
  cases.push_back(c);
  c = KvCacheCase{};
  c.tokens = 32, c.num_blocks = 4, c.block_size = 8, c.skip_every = 0;  // every slot written
  cases.push_back(c);
  c = KvCacheCase{};
  c.tokens = 300, c.kv_heads = 8, c.key_dim = 128, c.value_dim = 128, c.num_blocks = 40,
  c.block_size = 16, c.dtype = DType::kBFloat16;  // several parallel tasks
  cases.push_back(c);
  c = KvCacheCase{};
  c.kv_heads = 1, c.key_dim = 576, c.with_value = false, c.dtype = DType::kInt32;  // MLA latent
  cases.push_back(c);
  // Prefill slots: runs of tokens copied as one (cpu::kv_cache_run), cut by skipped tokens, block
  // ends and task ends; and where rows are not one run of bytes (strided rows, head dims apart).
  c = KvCacheCase{};
  c.tokens = 300, c.kv_heads = 8, c.key_dim = 128, c.value_dim = 128, c.num_blocks = 40,
  c.block_size = 16, c.dtype = DType::kBFloat16, c.prefill_slots = true, c.skip_every = 0;
  cases.push_back(c);
  c.skip_every = 7;
  cases.push_back(c);
  c = KvCacheCase{};
  c.tokens = 40, c.num_blocks = 10, c.prefill_slots = true;
  for (bool fused : {false, true}) {
    c.fused_cache = fused;
    cases.push_back(c);
  }
  c.fused_cache = false, c.blocks_in_order = true;
  for (bool interleaved : {false, true}) {
    c.interleaved_blocks = interleaved;
    cases.push_back(c);
  }
  c.interleaved_blocks = false, c.blocks_in_order = false, c.strided_rows = true;
  cases.push_back(c);
  c = KvCacheCase{};
  c.tokens = 40, c.num_blocks = 10, c.prefill_slots = true, c.key_dim = 32, c.value_dim = 8;
  cases.push_back(c);
  c = KvCacheCase{};
  c.tokens = 40, c.num_blocks = 10, c.prefill_slots = true, c.kv_heads = 1, c.key_dim = 576,
  c.with_value = false, c.skip_every = 0;
  cases.push_back(c);
  return cases;
}

}  // namespace kvflash::testing
