#include "ops/kv_cache/kv_cache_validate.hpp"

#include <cstdio>
#include <string>

#include "core/checked_math.hpp"
#include "core/error.hpp"
#include "core/plan_fields.hpp"
#include "core/view_check.hpp"
#include "ops/kv_cache/kv_cache_alias.hpp"
#include "ops/kv_cache/kv_cache_fields.hpp"

namespace kvflash::kv_cache {
namespace {

using core::str;

Status invalid(const std::string& msg) { return core::fail(Status::kInvalid, kOpName, msg); }
Status null_ptr(const std::string& msg) { return core::fail(Status::kNullPtr, kOpName, msg); }
Status refused(const std::string& feature) {
  return invalid(feature + " is not supported by kvflash (docs/api.md, \"KV cache writes\")");
}

// What kvflash does not implement, named before anything else is said about it.
Status check_refused(const ScatterPaKvCacheArgs& a) {
  const std::string& cm = a.cache_mode;
  if (cm == "PA_NZ") {
    return refused(
        "cache_mode \"PA_NZ\" (a FRACTAL_NZ cache; pass cache_mode \"Norm\" with a "
        "(num_blocks, block_size, KV_N, D) cache)");
  }
  if (!cm.empty() && cm != "Norm") {
    return invalid("cache_mode must be \"Norm\" or \"PA_NZ\", got \"" + cm + "\"");
  }
  const std::string& sm = a.scatter_mode;
  if (sm == "Nct" || sm == "Alibi" || sm == "Rope" || sm == "Omni" || sm == "NHSD") {
    return refused("scatter_mode \"" + sm + "\"");
  }
  if (!sm.empty() && sm != "None") {
    return invalid(
        "scatter_mode must be \"None\", \"Nct\", \"Alibi\", \"Rope\", \"Omni\" or "
        "\"NHSD\", got \"" +
        sm + "\"");
  }
  if (a.compress_lens) return refused("compress_lens (the compressed cache writes)");
  if (a.compress_seq_offsets) return refused("compress_seq_offsets (the compressed cache writes)");
  if (a.seq_lens) return refused("seq_lens (the compressed cache writes)");
  if (a.key.rank == 4) return refused("a 4-D key (the compressed cache writes)");
  if (a.key_cache.rank == 5) return refused("a 5-D key_cache (a FRACTAL_NZ cache)");
  if (a.value_cache && a.value_cache->rank == 5) {
    return refused("a 5-D value_cache (a FRACTAL_NZ cache)");
  }
  return Status::kSuccess;
}

// (T, KV_N, D) rows and a (num_blocks, block_size, KV_N, D) cache: one side of the write.
Status check_side(const TensorView& src, const char* src_name, const TensorView& cache,
                  const char* cache_name, int64_t tokens, int64_t kv_heads,
                  core::KvCacheSide* side) {
  if (src.rank != 3 || src.shape[0] != tokens || src.shape[1] != kv_heads) {
    return invalid(std::string(src_name) + " must be (T, KV_N, D) = (" + str(tokens) + ", " +
                   str(kv_heads) + ", D), got " + src.describe());
  }
  side->head_dim = src.shape[2];
  if (side->head_dim < 1) return invalid(std::string(src_name) + "'s head dim must be >= 1");
  if (cache.rank != 4 || cache.shape[2] != kv_heads || cache.shape[3] != side->head_dim) {
    return invalid(std::string(cache_name) +
                   " must be (num_blocks, block_size, KV_N, D) = (*, *, " + str(kv_heads) + ", " +
                   str(side->head_dim) + ") for " + src_name + " " + core::dims_str(src) +
                   ", got " + cache.describe());
  }
  if (cache.dtype != src.dtype) {
    return invalid(std::string(cache_name) + " dtype (" + dtype_name(cache.dtype) + ") must be " +
                   src_name + "'s (" + dtype_name(src.dtype) + ")");
  }
  int dim = 0;
  if (may_self_overlap(cache, &dim)) {
    return invalid(std::string(cache_name) +
                   "'s strides give two of its elements one address (dim " + str(dim) +
                   ", stride " + str(cache.strides[dim]) + ", got " + cache.describe() +
                   "): every element written must be memory of its own");
  }
  side->s_tok = src.strides[0], side->s_head = src.strides[1], side->s_dim = src.strides[2];
  side->c_block = cache.strides[0], side->c_pos = cache.strides[1];
  side->c_head = cache.strides[2], side->c_dim = cache.strides[3];
  return Status::kSuccess;
}

}  // namespace

Status validate(const ScatterPaKvCacheArgs& args, core::KvCacheProblem* problem) {
  if (core::is_null_view(args.key)) return null_ptr("key is null");
  if (core::is_null_view(args.key_cache)) return null_ptr("key_cache is null");
  if (core::is_null_view(args.slot_mapping)) return null_ptr("slot_mapping is null");
  KVFLASH_RETURN_IF_ERROR(check_refused(args));
  if (args.value.has_value() != args.value_cache.has_value()) {
    return invalid(args.value ? "value_cache is required with value"
                              : "value is required with value_cache");
  }
  if (args.num_threads < 0) {
    return invalid("num_threads (" + str(args.num_threads) +
                   ") must be >= 0 (0 = library default)");
  }
  // Strides of extent-1 dims never matter: normalise them before deriving anything.
  const ScatterPaKvCacheArgs a = core::with_canonical_strides(kFields, args);
  KVFLASH_RETURN_IF_ERROR(core::for_each_view(kFields, a, [](const TensorView& t, const char* n) {
    int64_t numel = 0;
    return core::check_view(kOpName, t, n, &numel);
  }));
  const Device dev = a.key.device;
  KVFLASH_RETURN_IF_ERROR(
      core::for_each_view(kFields, a, [dev](const TensorView& t, const char* n) {
        if (t.device == dev) return Status::kSuccess;
        return invalid(std::string(n) + " is on " + device_name(t.device) + " but key is on " +
                       device_name(dev) + ": every tensor of a call must be on one device");
      }));

  core::KvCacheProblem p;
  p.device = dev;
  p.dtype = a.key.dtype;
  if (a.key.rank != 3) return invalid("key must be (T, KV_N, Dk), got " + a.key.describe());
  p.tokens = a.key.shape[0];
  p.num_kv_heads = a.key.shape[1];
  if (p.num_kv_heads < 1) return invalid("key's KV_N must be >= 1, got " + a.key.describe());
  KVFLASH_RETURN_IF_ERROR(
      check_side(a.key, "key", a.key_cache, "key_cache", p.tokens, p.num_kv_heads, &p.key));
  p.num_blocks = a.key_cache.shape[0];
  p.block_size = a.key_cache.shape[1];
  if (p.block_size < 1) {
    return invalid("key_cache's block_size (dim 1) must be >= 1, got " + a.key_cache.describe());
  }
  const auto slots = core::checked_mul(p.num_blocks, p.block_size);
  if (!slots) return invalid("key_cache's num_blocks * block_size overflows int64");
  p.num_slots = *slots;
  if (a.value) {
    const TensorView& v = *a.value;
    const TensorView& vc = *a.value_cache;
    if (v.dtype != p.dtype) {
      return invalid(std::string("value dtype (") + dtype_name(v.dtype) + ") must be key's (" +
                     dtype_name(p.dtype) + ")");
    }
    KVFLASH_RETURN_IF_ERROR(
        check_side(v, "value", vc, "value_cache", p.tokens, p.num_kv_heads, &p.value));
    if (vc.shape[0] != p.num_blocks || vc.shape[1] != p.block_size) {
      return invalid("value_cache's (num_blocks, block_size) (" + str(vc.shape[0]) + ", " +
                     str(vc.shape[1]) + ") must be key_cache's (" + str(p.num_blocks) + ", " +
                     str(p.block_size) + ")");
    }
    p.has_value = true;
  }
  const TensorView& sm = a.slot_mapping;
  if (sm.dtype != DType::kInt32 && sm.dtype != DType::kInt64) {
    return invalid(std::string("slot_mapping dtype must be int32 or int64, got ") +
                   dtype_name(sm.dtype));
  }
  if (sm.rank != 1 || sm.shape[0] != p.tokens) {
    return invalid("slot_mapping must be (T,) = (" + str(p.tokens) +
                   ",), one slot per key row, got " + sm.describe());
  }
  p.slot_dtype = sm.dtype;
  p.slot_stride = sm.strides[0];
  if (p.tokens > 0) {
    // A power of two at least twice the tokens (a load factor <= 1/2), 16 bytes per entry.
    int64_t e = 16;
    while (e < p.tokens * 2) {
      if (e > (int64_t{1} << 58)) return invalid("key's T (" + str(p.tokens) + ") is too large");
      e *= 2;
    }
    p.table_entries = e;
  }
  *problem = p;
  return Status::kSuccess;
}

ScatterPaKvCacheArgs strip_data(const ScatterPaKvCacheArgs& args,
                                const core::KvCacheProblem& /*problem: nothing to drop*/) {
  return core::strip_fields(kFields, args);
}

Status check_matches_plan(const ScatterPaKvCacheArgs& p, const ScatterPaKvCacheArgs& a) {
  return core::match_fields(kOpName, kFields, p, a);
}

void bind_data(const core::KvCacheProblem& p, const ScatterPaKvCacheArgs& a, core::KvCacheData* d) {
  *d = core::KvCacheData{};
  d->key = core::element0(a.key);
  d->key_cache = core::element0(a.key_cache);
  d->slot_mapping = core::element0(a.slot_mapping);
  if (p.has_value) {
    d->value = core::element0(*a.value);
    d->value_cache = core::element0(*a.value_cache);
  }
}

void describe(const core::KvCacheProblem& p, char* buf, size_t size) {
  std::snprintf(buf, size, "T=%lld KV_N=%lld Dk=%lld Dv=%lld slots=%lld %s",
                static_cast<long long>(p.tokens), static_cast<long long>(p.num_kv_heads),
                static_cast<long long>(p.key.head_dim),
                static_cast<long long>(p.has_value ? p.value.head_dim : 0),
                static_cast<long long>(p.num_slots), dtype_name(p.dtype));
}

size_t workspace_size(const core::KvCacheProblem& p) {
  return static_cast<size_t>(p.table_entries) * 16;
}

}  // namespace kvflash::kv_cache
