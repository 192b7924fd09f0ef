#include "cpu/kv_cache/kv_cache_kernel.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "core/error.hpp"
#include "core/strings.hpp"
#include "cpu/thread_pool.hpp"
#include "ops/kv_cache/kv_cache_alias.hpp"
#include "ops/kv_cache/kv_cache_validate.hpp"

namespace kvflash::cpu {
namespace {

using core::KvCacheData;
using core::KvCacheProblem;
using core::KvCacheSide;
using core::str;

/// Roughly the bytes one parallel task copies: a decode step's few tokens stay one task.
constexpr int64_t kTaskBytes = int64_t{1} << 18;

/// How many tokens ahead a token's cache rows are prefetched when it starts a new block. Measured
/// on a 2-core Xeon (docs/perf-log.md, "vllm-ascend's attention path"): 3 ahead made a decode
/// step's write of 1024 one-token rows 1.25x faster; 1 ahead did so too but slowed the prefill
/// write of 16k tokens by a third, which 3 ahead does not.
constexpr int64_t kPrefetchTokens = 3;

int64_t slot_at(const KvCacheProblem& p, const void* slots, int64_t t) {
  const int64_t at = t * p.slot_stride;
  if (p.slot_dtype == DType::kInt64) {
    int64_t v;
    std::memcpy(&v, static_cast<const std::byte*>(slots) + at * 8, sizeof v);
    return v;
  }
  int32_t v;
  std::memcpy(&v, static_cast<const std::byte*>(slots) + at * 4, sizeof v);
  return v;
}

// The duplicate-check table: `entries` (a power of two) pairs (slot, token) of int64, empty
// slot -1, in the workspace (any alignment: read and written with memcpy).
class SlotTable {
 public:
  SlotTable(void* memory, int64_t entries)
      : mem_(static_cast<std::byte*>(memory)), mask_(static_cast<uint64_t>(entries) - 1) {
    std::memset(mem_, 0xff, static_cast<size_t>(entries) * 16);  // every slot -1
  }
  /// Inserts (slot, token); returns the token already holding slot, or -1.
  int64_t insert(int64_t slot, int64_t token) {
    uint64_t h = static_cast<uint64_t>(slot) * 0x9e3779b97f4a7c15ull;
    h ^= h >> 29;
    for (uint64_t i = h & mask_;; i = (i + 1) & mask_) {
      int64_t e[2];
      std::memcpy(e, mem_ + i * 16, 16);
      if (e[0] == slot) return e[1];
      if (e[0] < 0) {
        e[0] = slot, e[1] = token;
        std::memcpy(mem_ + i * 16, e, 16);
        return -1;
      }
    }
  }

 private:
  std::byte* mem_;
  uint64_t mask_;
};

Status invalid(const std::string& msg) {
  return core::fail(Status::kInvalid, kv_cache::kOpName, msg + "; nothing was written");
}

// Pass 1: every slot in range and none twice, before anything is written.
Status check_slots(const KvCacheProblem& p, const KvCacheData& d, void* workspace) {
  if (p.tokens == 0) return Status::kSuccess;
  SlotTable table(workspace, p.table_entries);
  for (int64_t t = 0; t < p.tokens; ++t) {
    const int64_t s = slot_at(p, d.slot_mapping, t);
    if (s < 0) continue;  // a padding token (vLLM's slot -1): skipped
    if (s >= p.num_slots) {
      return invalid("slot_mapping[" + str(t) + "] (" + str(s) +
                     ") is outside the cache: expected a slot in [0, " + str(p.num_slots) +
                     ") (num_blocks " + str(p.num_blocks) + " * block_size " + str(p.block_size) +
                     "), or a negative slot to skip the token");
    }
    const int64_t first = table.insert(s, t);
    if (first >= 0) {
      return invalid("slot_mapping[" + str(first) + "] and slot_mapping[" + str(t) + "] are both " +
                     str(s) + ": a slot may be written by one token only");
    }
  }
  return Status::kSuccess;
}

// Whether a run of tokens in consecutive slots of one block is one run of bytes on both ends.
bool rows_are_one_run(const KvCacheProblem& p, const KvCacheSide& s) {
  const int64_t D = s.head_dim, N = p.num_kv_heads;
  return s.s_dim == 1 && s.c_dim == 1 && (N == 1 || (s.s_head == D && s.c_head == D)) &&
         s.s_tok == N * D && s.c_pos == N * D;
}

// Tokens t .. t + count - 1's rows of one side into slots (block, pos .. pos + count - 1); count
// above 1 only where rows_are_one_run.
void copy_rows(const KvCacheProblem& p, const KvCacheSide& s, const void* src, void* cache,
               int64_t t, int64_t block, int64_t pos, int64_t count) {
  const int64_t es = static_cast<int64_t>(dtype_size(p.dtype));
  const auto* from = static_cast<const std::byte*>(src) + t * s.s_tok * es;
  auto* to = static_cast<std::byte*>(cache) + (block * s.c_block + pos * s.c_pos) * es;
  const int64_t D = s.head_dim, N = p.num_kv_heads;
  if (s.s_dim == 1 && s.c_dim == 1) {
    if ((N == 1 || (s.s_head == D && s.c_head == D))) {
      std::memcpy(to, from, static_cast<size_t>(count * N * D * es));  // the heads are one run
      return;
    }
    for (int64_t n = 0; n < N; ++n) {
      std::memcpy(to + n * s.c_head * es, from + n * s.s_head * es, static_cast<size_t>(D * es));
    }
    return;
  }
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t x = 0; x < D; ++x) {
      std::memcpy(to + (n * s.c_head + x * s.c_dim) * es, from + (n * s.s_head + x * s.s_dim) * es,
                  static_cast<size_t>(es));
    }
  }
}

// Asks for token t's cache rows of one side ahead of their writes, where they are one run of
// bytes: a slot's row is the only data a token writes to its block, so the hardware prefetchers,
// which follow runs of misses within a page, cannot know it is coming (a decode step writes one
// row into each of many blocks).
void prefetch_rows(const KvCacheProblem& p, const KvCacheSide& s, const void* cache, int64_t block,
                   int64_t pos) {
  const int64_t es = static_cast<int64_t>(dtype_size(p.dtype)), D = s.head_dim;
  if (s.c_dim != 1 || (p.num_kv_heads != 1 && s.c_head != D)) return;
  const auto* at = static_cast<const std::byte*>(cache) + (block * s.c_block + pos * s.c_pos) * es;
  for (int64_t b = 0; b < p.num_kv_heads * D * es; b += 64) __builtin_prefetch(at + b, 1, 3);
}

struct Run {
  const KvCacheProblem* p;
  const KvCacheData* d;
  int64_t tokens_per_task;
};

}  // namespace

// Pass 0: a key cache and a value cache with an element in common (the addresses are the run's).
Status check_caches_apart(const KvCacheProblem& p, const KvCacheData& d) {
  if (!p.has_value) return Status::kSuccess;
  const auto extent = [&](const void* base, const KvCacheSide& s) {
    return kv_cache::CacheExtent{base,
                                 {p.num_blocks, p.block_size, p.num_kv_heads, s.head_dim},
                                 {s.c_block, s.c_pos, s.c_head, s.c_dim}};
  };
  if (kv_cache::caches_share_memory(extent(d.key_cache, p.key), extent(d.value_cache, p.value),
                                    static_cast<int64_t>(dtype_size(p.dtype)))) {
    return invalid(
        "key_cache and value_cache share memory: an element written would be both a "
        "key and a value");
  }
  return Status::kSuccess;
}

Status kv_cache_run(const KvCacheProblem& p, const KvCacheData& d, const core::RunContext& ctx) {
  KVFLASH_RETURN_IF_ERROR(check_caches_apart(p, d));
  KVFLASH_RETURN_IF_ERROR(check_slots(p, d, ctx.workspace));
  if (p.tokens == 0) return Status::kSuccess;
  const int64_t es = static_cast<int64_t>(dtype_size(p.dtype));
  const int64_t row_bytes = std::max<int64_t>(
      1, p.num_kv_heads * (p.key.head_dim + (p.has_value ? p.value.head_dim : 0)) * es);
  const int64_t per_task = std::max<int64_t>(1, kTaskBytes / row_bytes);
  const int64_t tasks = (p.tokens + per_task - 1) / per_task;
  const Run run{&p, &d, per_task};
  // The lambda captures one pointer, so std::function keeps it inline (no allocation).
  parallel_for(tasks, ctx.num_threads, [r = &run](int64_t task, int) {
    const KvCacheProblem& q = *r->p;
    const int64_t begin = task * r->tokens_per_task;
    const int64_t end = std::min(q.tokens, begin + r->tokens_per_task);
    // A prefill's tokens sit in consecutive slots: where both ends are runs of bytes, the tokens
    // of one block are copied as one run (0.93-0.96 of a plain copy's speed instead of 0.71-0.77).
    const bool runs = rows_are_one_run(q, q.key) && (!q.has_value || rows_are_one_run(q, q.value));
    for (int64_t t = begin; t < end; ++t) {
      const int64_t s = slot_at(q, r->d->slot_mapping, t);
      if (s < 0) continue;
      const int64_t block = s / q.block_size, pos = s % q.block_size;
      int64_t count = 1;
      while (runs && t + count < end && pos + count < q.block_size &&
             slot_at(q, r->d->slot_mapping, t + count) == s + count)
        ++count;
      if (count == 1 && t + kPrefetchTokens < end) {
        const int64_t next = slot_at(q, r->d->slot_mapping, t + kPrefetchTokens);
        if (next >= 0 && next / q.block_size != block) {
          prefetch_rows(q, q.key, r->d->key_cache, next / q.block_size, next % q.block_size);
          if (q.has_value)
            prefetch_rows(q, q.value, r->d->value_cache, next / q.block_size, next % q.block_size);
        }
      }
      copy_rows(q, q.key, r->d->key, r->d->key_cache, t, block, pos, count);
      if (q.has_value) copy_rows(q, q.value, r->d->value, r->d->value_cache, t, block, pos, count);
      t += count - 1;
    }
  });
  return Status::kSuccess;
}

}  // namespace kvflash::cpu
