// The PyTorch operators' plan cache: plans by the plan fingerprint of a call's arguments. Every
// call looks its plan up here, so a hit allocates nothing and calls nothing in libkvflash: the
// fingerprint is the library's own (core::fingerprint_fields over the operator's field table,
// the bytes IfaPlan/SfaPlan::fingerprint return), written inline into a per-thread buffer that
// keeps its capacity; a repeat of the thread's last fingerprint is answered without the lock, and
// the index hashes the bytes word by word in four independent lanes. No torch header: the
// benchmark bench/plan_cache_bench.cpp builds it alone.
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "core/fingerprint.hpp"
#include "kvflash/status.hpp"

namespace kvflash::torch_ext {

/// Throws the library's last_error_message() for a failed status (views.cpp).
[[noreturn]] void throw_status(Status status);

/// A hash of fingerprint bytes, which are whole 64-bit words (core/fingerprint.hpp): four
/// multiply-xor lanes, so a decode call's ~70 words take a quarter of one serial chain's latency.
inline size_t hash_fingerprint(std::string_view bytes) {
  constexpr uint64_t kMul = 0x9e3779b97f4a7c15ull;
  const auto word = [&](size_t i) {
    uint64_t w;
    std::memcpy(&w, bytes.data() + i * sizeof w, sizeof w);
    return w;
  };
  const size_t words = bytes.size() / sizeof(uint64_t);
  uint64_t a = words, b = 1, c = 2, d = 3;
  size_t i = 0;
  for (; i + 4 <= words; i += 4) {
    a = (a ^ word(i)) * kMul;
    b = (b ^ word(i + 1)) * kMul;
    c = (c ^ word(i + 2)) * kMul;
    d = (d ^ word(i + 3)) * kMul;
  }
  for (; i < words; ++i) a = (a ^ word(i)) * kMul;
  uint64_t h = a ^ std::rotl(b, 16) ^ std::rotl(c, 32) ^ std::rotl(d, 48);
  h ^= h >> 29;
  return static_cast<size_t>(h * kMul);
}

/// A bounded LRU cache of plans by fingerprint (equal bytes: one plan runs both argument sets),
/// safe to use from several threads. Plans are shared: one evicted while a call still runs it
/// stays alive until that call ends. kFields is the operator's field table (ifa::kFields, ...).
template <class Plan, class Args, const auto& kFields>
class PlanCache {
 public:
  explicit PlanCache(size_t capacity) : capacity_(capacity) {}

  /// The plan for args' metadata: cached, or created (validated) now. Throws the library's error.
  std::shared_ptr<const Plan> get(const Args& args) {
    Recent& recent = recent_;
    recent.bytes.clear();  // keeps its capacity
    core::fingerprint_fields(kFields, args, &recent.bytes);
    // A loop of calls with one shape repeats this thread's last plan: no lock, no index.
    if (recent.cache == this && recent.generation == generation_.load(std::memory_order_acquire) &&
        recent.bytes == recent.last) {
      hits_.fetch_add(1, std::memory_order_relaxed);
      return recent.plan;
    }
    uint64_t generation = 0;
    std::shared_ptr<const Plan> plan = find_or_create(args, recent.bytes, &generation);
    recent.last.swap(recent.bytes);  // the next call writes into the old buffer
    recent.plan = plan;
    recent.cache = this;
    recent.generation = generation;
    return plan;
  }

  /// (hits, misses, cached plans) since the last clear().
  std::tuple<int64_t, int64_t, int64_t> stats() {
    std::lock_guard<std::mutex> lock(mu_);
    return {hits_.load(), misses_, static_cast<int64_t>(lru_.size())};
  }
  void clear() {
    std::lock_guard<std::mutex> lock(mu_);
    index_.clear();
    lru_.clear();
    hits_ = 0;
    misses_ = 0;
    generation_.fetch_add(1, std::memory_order_release);  // forgets every thread's recent plan
  }

 private:
  // This thread's fingerprint buffer and its last plan (kept alive here even once evicted, like
  // a plan a call still runs): both strings keep their capacity, so a hit allocates nothing.
  struct Recent {
    std::string bytes, last;
    std::shared_ptr<const Plan> plan;
    const PlanCache* cache = nullptr;
    uint64_t generation = 0;
  };
  static thread_local Recent recent_;

  // The plan for the fingerprint `bytes` from the index, or created and inserted; *generation is
  // the cache's generation it belongs to.
  std::shared_ptr<const Plan> find_or_create(const Args& args, const std::string& bytes,
                                             uint64_t* generation) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      *generation = generation_.load(std::memory_order_relaxed);
      if (const auto it = find(bytes); it != lru_.end()) {
        lru_.splice(lru_.begin(), lru_, it);
        hits_.fetch_add(1, std::memory_order_relaxed);
        return it->plan;
      }
    }
    std::unique_ptr<Plan> created;
    const Status status = Plan::create(args, &created);
    if (status != Status::kSuccess) throw_status(status);
    std::shared_ptr<const Plan> plan(std::move(created));
    std::lock_guard<std::mutex> lock(mu_);
    *generation = generation_.load(std::memory_order_relaxed);
    ++misses_;
    if (const auto it = find(bytes); it != lru_.end()) return it->plan;  // made meanwhile
    const Key key{bytes, hash_fingerprint(bytes)};
    lru_.push_front(Entry{bytes, key.hash, plan});
    index_.emplace(Key{lru_.front().bytes, key.hash}, lru_.begin());
    while (lru_.size() > capacity_) {
      index_.erase(Key{lru_.back().bytes, lru_.back().hash});
      lru_.pop_back();
    }
    return plan;
  }

  struct Entry {
    std::string bytes;
    size_t hash;
    std::shared_ptr<const Plan> plan;
  };
  // The index's keys view the bytes of their list entry (a list node never moves) and carry the
  // hash, so neither a lookup nor a rehash hashes the bytes again.
  struct Key {
    std::string_view bytes;
    size_t hash;
    bool operator==(const Key& o) const { return hash == o.hash && bytes == o.bytes; }
  };
  struct KeyHash {
    size_t operator()(const Key& k) const { return k.hash; }
  };

  // The entry of `bytes`, or lru_.end(); under mu_. A few plans are compared in LRU order, as
  // libstdc++'s unordered_map does below 20 elements: cheaper than hashing the bytes.
  typename std::list<Entry>::iterator find(const std::string& bytes) {
    if (lru_.size() <= kScanned) {
      return std::find_if(lru_.begin(), lru_.end(),
                          [&](const Entry& e) { return e.bytes == bytes; });
    }
    const auto it = index_.find(Key{bytes, hash_fingerprint(bytes)});
    return it == index_.end() ? lru_.end() : it->second;
  }
  static constexpr size_t kScanned = 16;

  const size_t capacity_;
  std::mutex mu_;
  std::list<Entry> lru_;
  std::unordered_map<Key, typename std::list<Entry>::iterator, KeyHash> index_;
  std::atomic<int64_t> hits_ = 0;
  int64_t misses_ = 0;
  std::atomic<uint64_t> generation_ = 0;
};

template <class Plan, class Args, const auto& kFields>
thread_local typename PlanCache<Plan, Args, kFields>::Recent PlanCache<Plan, Args, kFields>::recent_;

}  // namespace kvflash::torch_ext
