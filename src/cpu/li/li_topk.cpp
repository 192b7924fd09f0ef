// The LightningIndexer's deterministic top-k (li_select_topk in li_kernel.hpp). Plain x86-64: the
// per-ISA scorers produce order keys, this picks and orders them the same way on every ISA.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>

#include "cpu/li/li_kernel.hpp"

namespace kvflash::cpu {
namespace {

// (key, index) packed so that a larger composite ranks first: the key in the high half, the
// complement of the index in the low half (a lower index is a larger complement).
inline uint64_t composite(uint32_t key, int64_t j) {
  return (uint64_t{key} << 32) | (0xffffffffu - static_cast<uint32_t>(j));
}

// Radix digits of the 32-bit key, most significant first: 11 + 11 + 10 bits, so one histogram of
// kLiRadixBins (2^11) bins serves every pass.
struct Digit {
  int shift;
  uint32_t mask;
};
constexpr Digit kDigits[3] = {{21, 0x7ffu}, {10, 0x7ffu}, {0, 0x3ffu}};
static_assert(kLiRadixBins == 2048);

}  // namespace

int64_t li_select_topk(const uint32_t* keys, int64_t n, int64_t k, uint32_t* hist, uint64_t* sel,
                       int32_t* idx) {
  int64_t c = 0;
  if (n <= k) {
    for (int64_t j = 0; j < n; ++j) sel[c++] = composite(keys[j], j);
  } else {
    // Find the k-th largest key T digit by digit: after each pass, prefix holds T's digits so far
    // and `need` how many keys with that prefix must still be taken (the ones in higher bins of
    // the current digit are all taken).
    uint32_t prefix = 0, pmask = 0;
    int64_t need = k;
    for (const Digit& dg : kDigits) {
      std::memset(hist, 0, sizeof(uint32_t) * (dg.mask + 1));
      for (int64_t j = 0; j < n; ++j) {
        const uint32_t x = keys[j];
        if ((x & pmask) == prefix) ++hist[(x >> dg.shift) & dg.mask];
      }
      uint32_t bin = dg.mask;
      for (;; --bin) {
        if (static_cast<int64_t>(hist[bin]) >= need) break;
        need -= hist[bin];
      }
      prefix |= bin << dg.shift;
      pmask |= dg.mask << dg.shift;
    }
    // Keys above T are all taken; of the keys equal to T, the `need` lowest-indexed ones.
    const uint32_t t = prefix;
    for (int64_t j = 0; j < n; ++j) {
      const uint32_t x = keys[j];
      if (x > t) {
        sel[c++] = composite(x, j);
      } else if (x == t && need > 0) {
        sel[c++] = composite(x, j);
        --need;
      }
    }
  }
  // Composites are distinct, so any correct sort gives the same order.
  std::sort(sel, sel + c, std::greater<uint64_t>());
  for (int64_t s = 0; s < c; ++s)
    idx[s] = static_cast<int32_t>(0xffffffffu - static_cast<uint32_t>(sel[s]));
  return c;
}

int64_t li_merge_topk(const LiTopkList* lists, int num_lists, int64_t k, int32_t* out_idx,
                      float* out_scores) {
  // The cursors live on the stack (no allocation), so the number of lists is bounded; a
  // context-parallel world is far smaller.
  constexpr int kMaxLists = 256;
  if (num_lists < 0 || num_lists > kMaxLists) return -1;
  int64_t pos[kMaxLists];
  int64_t len[kMaxLists];  // each list's valid length: up to its first -1
  for (int r = 0; r < num_lists; ++r) {
    pos[r] = 0;
    int64_t n = 0;
    while (n < lists[r].size && lists[r].indices[n] >= 0) ++n;
    len[r] = n;
  }
  const auto head = [&](int r) {
    const int64_t s = pos[r];
    return composite(li_order_key(lists[r].scores[s]), lists[r].indices[s]);
  };
  int64_t c = 0;
  for (; c < k; ++c) {
    int best = -1;
    uint64_t best_key = 0;
    for (int r = 0; r < num_lists; ++r) {
      if (pos[r] == len[r]) continue;
      const uint64_t h = head(r);
      if (best >= 0 && h == best_key) return -1;  // the same entry in two lists
      if (best < 0 || h > best_key) best = r, best_key = h;
    }
    if (best < 0) break;
    out_idx[c] = lists[best].indices[pos[best]];
    out_scores[c] = lists[best].scores[pos[best]];
    // The list must rank strictly below what it just gave (its own selection order).
    if (++pos[best] < len[best] && head(best) >= best_key) return -1;
  }
  for (int64_t s = c; s < k; ++s) {
    out_idx[s] = -1;
    out_scores[s] = -std::numeric_limits<float>::infinity();
  }
  return c;
}

}  // namespace kvflash::cpu
