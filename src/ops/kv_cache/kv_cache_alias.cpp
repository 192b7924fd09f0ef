#include "ops/kv_cache/kv_cache_alias.hpp"

#include <algorithm>
#include <array>
#include <utility>

namespace kvflash::kv_cache {
namespace {

using i128 = __int128;

i128 abs128(i128 x) { return x < 0 ? -x : x; }

// Sorts order[0, n) by key (at most kMaxRank entries: an insertion sort).
template <class Key>
void sort_by(int* order, int n, Key key) {
  for (int i = 1; i < n; ++i)
    for (int j = i; j > 0 && key(order[j]) < key(order[j - 1]); --j)
      std::swap(order[j], order[j - 1]);
}

// floor / ceil of n / d for d > 0.
i128 floor_div(i128 n, i128 d) { return n >= 0 ? n / d : -((-n + d - 1) / d); }
i128 ceil_div(i128 n, i128 d) { return n >= 0 ? (n + d - 1) / d : -((-n) / d); }

// The element offsets range [lo, hi] of a cache from its first element.
void range(const CacheExtent& c, i128* lo, i128* hi) {
  *lo = 0, *hi = 0;
  for (int k = 0; k < 4; ++k) {
    const i128 span = static_cast<i128>(c.strides[k]) * (c.shape[k] - 1);
    (span < 0 ? *lo : *hi) += span;
  }
}

// Equal strides: is there c with c_k in [-(nb_k - 1), na_k - 1] and sum c_k s_k = d? Dims in
// decreasing |stride| (all made positive), reach[k] the most the dims after k can add.
struct Search {
  int n = 0;
  std::array<i128, 4> s{}, lo{}, hi{}, reach{};
  int budget =
      4096;  // candidates tried: past it the answer is "shared" (never reached in practice)
  bool solve(int k, i128 d) {
    if (k >= n || k >= 4) return d == 0;
    const i128 from = std::max(lo[k], ceil_div(d - reach[k], s[k]));
    const i128 to = std::min(hi[k], floor_div(d + reach[k], s[k]));
    for (i128 c = from; c <= to; ++c) {
      if (--budget < 0) return true;
      if (solve(k + 1, d - c * s[k])) return true;
    }
    return false;
  }
};

}  // namespace

bool may_self_overlap(const TensorView& v, int* dim) {
  std::array<int, kMaxRank> order{};
  int m = 0;
  for (int k = 0; k < v.rank && k < kMaxRank; ++k) {
    if (v.shape[k] < 1) return false;  // no element at all
    if (v.shape[k] > 1) order[m++] = k;
  }
  sort_by(order.data(), m, [&](int k) { return abs128(v.strides[k]); });
  i128 reach = 0;
  for (int i = 0; i < m; ++i) {
    const int k = order[i];
    const i128 s = abs128(v.strides[k]);
    if (s <= reach) {
      *dim = k;
      return true;
    }
    reach += s * (v.shape[k] - 1);
  }
  return false;
}

bool caches_share_memory(const CacheExtent& a, const CacheExtent& b, int64_t elem_size) {
  i128 alo, ahi, blo, bhi;
  range(a, &alo, &ahi);
  range(b, &blo, &bhi);
  for (int k = 0; k < 4; ++k)
    if (a.shape[k] < 1 || b.shape[k] < 1) return false;  // an empty cache holds no byte
  const i128 pa = static_cast<i128>(reinterpret_cast<uintptr_t>(a.base));
  const i128 pb = static_cast<i128>(reinterpret_cast<uintptr_t>(b.base));
  const i128 es = elem_size;
  // Byte ranges [first, last] of each.
  if (pa + alo * es > pb + bhi * es + es - 1 || pb + blo * es > pa + ahi * es + es - 1)
    return false;
  bool equal = true;
  for (int k = 0; k < 4; ++k) equal &= a.strides[k] == b.strides[k];
  const i128 bytes = pb - pa;
  if (!equal || bytes % es != 0) return true;  // intersecting ranges, not provably apart
  Search s;
  std::array<int, 4> order{};
  for (int k = 0; k < 4; ++k)
    if (a.shape[k] > 1 || b.shape[k] > 1) order[s.n++] = k;
  sort_by(order.data(), s.n, [&](int k) { return -abs128(a.strides[k]); });  // decreasing
  for (int i = 0; i < s.n && i < 4; ++i) {
    const int k = order[i];
    // c in [-(nb - 1), na - 1] for stride st; with st < 0 use -st and -c.
    const i128 st = a.strides[k];
    s.s[i] = abs128(st);
    s.lo[i] = st >= 0 ? -(b.shape[k] - 1) : -(a.shape[k] - 1);
    s.hi[i] = st >= 0 ? a.shape[k] - 1 : b.shape[k] - 1;
  }
  i128 reach = 0;  // the dims after i: the most they add
  for (int i = std::min(s.n, 4) - 1; i >= 0; --i) {
    s.reach[i] = reach;
    reach += s.s[i] * std::max(-s.lo[i], s.hi[i]);
  }
  for (int i = 0; i < s.n && i < 4; ++i)
    if (s.s[i] == 0) return true;  // a zero stride over extent > 1: refused when planned anyway
  return s.solve(0, bytes / es);
}

}  // namespace kvflash::kv_cache
