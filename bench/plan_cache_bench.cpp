// The PyTorch operators' plan lookup per call, in one process (python/src/plan_cache.hpp): the
// cache hit of a 16-token IFA decode call (query (1, 1, 1024) fp16 BSH, 8 heads, host
// actual_seq_lengths) as the operators make it, against the two keys it replaced, interleaved,
// best of 200 short rounds (the minimum is the estimate that a loaded machine disturbs least):
//   plan_key   the hand-written key of the first torch cache (a std::vector<int64_t> of the
//              same words, FNV-1a over them): the baseline the fingerprint had to match;
//   public     IfaPlan::fingerprint into a new std::string, std::hash over it;
//   before     the cache before python/src/plan_cache.hpp: the public fingerprint into a new
//              std::string per call, std::hash over it, the whole hit (lock, find, LRU splice,
//              plan copy);
//   cache      PlanCache::get, the same whole hit;
// each cache for one shape repeated and for two shapes in turn. Run it with LD_LIBRARY_PATH
// naming another build's libkvflash.so.0 to time that build's public fingerprint.
// Build: cmake --build <build> --target kvflash_plan_cache_bench (KVFLASH_PYTHON=ON).
#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
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
  for (int round = 0; round < rounds; ++round) {
    const double t[kColumns] = {
        ns_per_call(n, [&] { sink += plan_key_hash(a); }),
        ns_per_call(n, [&] { sink += public_fingerprint_hash(a); }),
        ns_per_call(n, [&] { sink += before.get(a) != nullptr; }),
        ns_per_call(n, [&] { sink += before.get(next()) != nullptr; }),
        ns_per_call(n, [&] { sink += cache.get(a) != nullptr; }),
        ns_per_call(n, [&] { sink += cache.get(next()) != nullptr; }),
    };
    for (int i = 0; i < kColumns; ++i) best[i] = std::min(best[i], t[i]);
  }
  std::printf("plan lookup per call, best of %d x %d (ns):\n", rounds, n);
  std::printf("  plan_key + FNV-1a (the first torch key)          %7.1f\n", best[0]);
  std::printf("  IfaPlan::fingerprint + std::hash (new string)    %7.1f\n", best[1]);
  std::printf("  the cache before, a hit: one shape               %7.1f\n", best[2]);
  std::printf("  the cache before, a hit: two shapes in turn      %7.1f\n", best[3]);
  std::printf("  PlanCache::get, a hit: one shape                 %7.1f\n", best[4]);
  std::printf("  PlanCache::get, a hit: two shapes in turn        %7.1f\n", best[5]);
  std::printf("(sink %zu)\n", sink & 1);
  return 0;
}
