// The PyTorch operators' plan lookup per call, in one process (python/src/plan_cache.hpp): the
// cache hit of a 16-token IFA decode call (query (1, 1, 1024) fp16 BSH, 8 heads, host
// actual_seq_lengths) as the operators make it, against what it replaced, interleaved, best of
// 200 short rounds (the minimum is the estimate a loaded machine disturbs least), and the
// allocations per call:
//   plan_key  the hand-written key of the first torch cache (a std::vector<int64_t> of the same
//             words, FNV-1a over them): the baseline the fingerprint had to match;
//   public    IfaPlan::fingerprint into a new std::string, std::hash over it;
//   before    the cache before python/src/plan_cache.hpp (BeforeCache): the public fingerprint
//             into a new std::string per call and an unordered_map<std::string> (which compares
//             the keys in turn below 20 plans, hashes above), the whole hit (lock, find, LRU
//             splice, plan copy);
//   cache     PlanCache::get, the same whole hit;
// the caches for one shape repeated and for two shapes in turn. With LD_LIBRARY_PATH naming
// another build's libkvflash.so.0, plan_key, public and before use that build's fingerprint.
// Build: cmake --build <build> --target kvflash_plan_cache_bench (KVFLASH_PYTHON=ON).
#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "kvflash/ifa.hpp"
#include "ops/ifa/ifa_fields.hpp"
#include "plan_cache.hpp"

namespace kvflash::torch_ext {
// The cache reports a failed status through the operators' thrower (views.cpp); here, any failure
// ends the benchmark.
void throw_status(Status) { throw std::runtime_error(last_error_message()); }
}  // namespace kvflash::torch_ext

// Every allocation of the process, counted: a hit must allocate nothing.
std::atomic<int64_t> g_allocations{0};
void* operator new(size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }

namespace {

using namespace kvflash;

void add_view(std::vector<int64_t>& k, const TensorView& v) {
  k.push_back(static_cast<int64_t>(v.dtype));
  k.push_back(v.rank);
  const int r = std::min(std::max(v.rank, 0), kMaxRank);
  for (int i = 0; i < r; ++i) k.push_back(v.shape[i]);
  for (int i = 0; i < r; ++i) k.push_back(v.strides[i]);
  k.push_back(v.offset);
  k.push_back(static_cast<int64_t>(v.device.type));
  k.push_back(v.device.index);
}
void add_view(std::vector<int64_t>& k, const std::optional<TensorView>& v) {
  k.push_back(v.has_value());
  if (v) add_view(k, *v);
}

// python/src/views.cpp's plan_key before the fingerprint (commit 26dd819 removed it), and its hash.
size_t plan_key_hash(const IfaArgs& a) {
  std::vector<int64_t> k;
  k.reserve(256);
  add_view(k, a.query);
  k.push_back(static_cast<int64_t>(a.key.size()));
  for (const auto& v : a.key) add_view(k, v);
  k.push_back(static_cast<int64_t>(a.value.size()));
  for (const auto& v : a.value) add_view(k, v);
  for (const auto* v : {&a.pse_shift, &a.atten_mask, &a.dequant_scale1, &a.quant_scale1,
                        &a.dequant_scale2, &a.quant_scale2, &a.quant_offset2, &a.antiquant_scale,
                        &a.antiquant_offset, &a.block_table, &a.kv_padding_size, &a.softmax_lse})
    add_view(k, *v);
  k.push_back(a.actual_seq_lengths.has_value());
  if (a.actual_seq_lengths) {
    k.push_back(static_cast<int64_t>(a.actual_seq_lengths->size()));
    k.insert(k.end(), a.actual_seq_lengths->begin(), a.actual_seq_lengths->end());
  }
  k.push_back(a.num_heads);
  k.push_back(std::bit_cast<int64_t>(a.scale_value));
  k.push_back(static_cast<int64_t>(a.input_layout.size()));
  for (char c : a.input_layout) k.push_back(static_cast<unsigned char>(c));
  k.push_back(a.num_key_value_heads);
  k.push_back(a.block_size);
  k.push_back(a.inner_precise);
  add_view(k, a.attention_out);
  k.push_back(a.zero_fully_masked_rows);
  uint64_t h = 1469598103934665603ull;
  for (int64_t w : k) h = (h ^ static_cast<uint64_t>(w)) * 1099511628211ull;
  return static_cast<size_t>(h);
}

size_t public_fingerprint_hash(const IfaArgs& a) {
  std::string key;
  if (IfaPlan::fingerprint(a, &key) != Status::kSuccess) throw std::runtime_error("fingerprint");
  return std::hash<std::string>{}(key);
}

// python/src/views.hpp's PlanCache before python/src/plan_cache.hpp (commit adcd319): a new
// std::string key per call from the public fingerprint, std::hash over it.
template <class Plan, class Args>
class BeforeCache {
 public:
  explicit BeforeCache(size_t capacity) : capacity_(capacity) {}

  /// The plan for args' metadata: cached, or created (validated) now. Throws the library's error.
  std::shared_ptr<const Plan> get(const Args& args) {
    std::string key;
    if (const Status s = Plan::fingerprint(args, &key); s != Status::kSuccess) throw std::runtime_error("fingerprint");
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = index_.find(key);
      if (it != index_.end()) {
        lru_.splice(lru_.begin(), lru_, it->second);
        ++hits_;
        return it->second->second;
      }
    }
    std::unique_ptr<Plan> created;
    const Status status = Plan::create(args, &created);
    if (status != Status::kSuccess) throw std::runtime_error("create");
    std::shared_ptr<const Plan> plan(std::move(created));
    std::lock_guard<std::mutex> lock(mu_);
    ++misses_;
    auto it = index_.find(key);
    if (it != index_.end()) return it->second->second;  // another thread made it meanwhile
    lru_.emplace_front(key, plan);
    index_.emplace(std::move(key), lru_.begin());
    while (lru_.size() > capacity_) {
      index_.erase(lru_.back().first);
      lru_.pop_back();
    }
    return plan;
  }

  /// (hits, misses, cached plans) since the last clear().
  std::tuple<int64_t, int64_t, int64_t> stats() {
    std::lock_guard<std::mutex> lock(mu_);
    return {hits_, misses_, static_cast<int64_t>(lru_.size())};
  }
  void clear() {
    std::lock_guard<std::mutex> lock(mu_);
    index_.clear();
    lru_.clear();
    hits_ = misses_ = 0;
  }

 private:
  using Entry = std::pair<std::string, std::shared_ptr<const Plan>>;

  const size_t capacity_;
  std::mutex mu_;
  std::list<Entry> lru_;
  std::unordered_map<std::string, typename std::list<Entry>::iterator> index_;
  int64_t hits_ = 0, misses_ = 0;
};

template <class F>
double ns_per_call(int n, F&& f) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) f();
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() /
         n;
}

template <class F>
double allocations_per_call(int n, F&& f) {
  const int64_t before = g_allocations.load();
  for (int i = 0; i < n; ++i) f();
  return static_cast<double>(g_allocations.load() - before) / n;
}

}  // namespace

int main() {
  static std::byte buf[1 << 16];
  IfaArgs a;
  a.query = TensorView::contiguous(buf, DType::kFloat16, {1, 1, 1024});
  a.key = {TensorView::contiguous(buf, DType::kFloat16, {1, 16, 1024})};
  a.value = a.key;
  a.attention_out = a.query;
  a.num_heads = 8;
  a.scale_value = 0.088;
  a.actual_seq_lengths = std::vector<int64_t>{16};

  BeforeCache<IfaPlan, IfaArgs> before(256);
  torch_ext::PlanCache<IfaPlan, IfaArgs, ifa::kFields> cache(256);
  // Other shapes in the caches, as in a serving process.
  for (int64_t len = 1; len <= 8; ++len) {
    IfaArgs other = a;
    other.actual_seq_lengths = std::vector<int64_t>{len};
    before.get(other);
    cache.get(other);
  }
  before.get(a);
  cache.get(a);

  // Two shapes in turn: the cache's own lookup, not its repeat of a thread's last plan.
  IfaArgs b = a;
  b.actual_seq_lengths = std::vector<int64_t>{8};
  bool flip = false;
  const auto next = [&]() -> const IfaArgs& { return (flip = !flip) ? a : b; };

  const int n = 20000, rounds = 200;
  constexpr int kColumns = 6;
  double best[kColumns];
  std::fill(best, best + kColumns, 1e9);
  size_t sink = 0;
  const std::function<void()> column[kColumns] = {
      [&] { sink += plan_key_hash(a); },
      [&] { sink += public_fingerprint_hash(a); },
      [&] { sink += before.get(a) != nullptr; },
      [&] { sink += before.get(next()) != nullptr; },
      [&] { sink += cache.get(a) != nullptr; },
      [&] { sink += cache.get(next()) != nullptr; },
  };
  double allocations[kColumns];
  for (int i = 0; i < kColumns; ++i) allocations[i] = allocations_per_call(1000, column[i]);
  for (int round = 0; round < rounds; ++round) {
    for (int i = 0; i < kColumns; ++i) best[i] = std::min(best[i], ns_per_call(n, column[i]));
  }
  const char* names[kColumns] = {
      "plan_key + FNV-1a (the first torch key)",       "IfaPlan::fingerprint + std::hash",
      "the cache before, a hit: one shape",            "the cache before, a hit: two shapes in turn",
      "PlanCache::get, a hit: one shape",              "PlanCache::get, a hit: two shapes in turn"};
  std::printf("plan lookup per call, best of %d x %d calls:      ns  allocations\n", rounds, n);
  for (int i = 0; i < kColumns; ++i)
    std::printf("  %-45s %7.1f  %4.1f\n", names[i], best[i], allocations[i]);
  std::printf("(sink %zu)\n", sink & 1);
  return 0;
}
