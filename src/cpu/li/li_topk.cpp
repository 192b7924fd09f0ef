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

// Below this many entries the selection is ordered by std::sort: the radix passes' histogram
// clears (2^11 bins each) would cost more than they save.
constexpr int64_t kRadixSortMin = 512;

// Orders sel[0, c) descending, given that equal keys were collected in ascending index order: a
// stable LSD radix sort on the 32-bit key alone (least significant digit first, each digit
// reversed so that larger keys come first), so equal keys keep their ascending indices, which is
// the composite order. A digit with one value over the whole selection is skipped (the top digits
// of a selection often are). Measured on one Zen 5 core: 2048 winners of 8192 keys in ~7 us against
// ~20 us for std::sort of the composites. tmp: scratch for c entries.
void sort_selection(uint64_t* sel, uint64_t* tmp, int64_t c, uint32_t* hist) {
  if (c < kRadixSortMin) {
    std::sort(sel, sel + c, std::greater<uint64_t>());
    return;
  }
  uint64_t* src = sel;
  uint64_t* dst = tmp;
  for (int di = 2; di >= 0; --di) {
    const int shift = 32 + kDigits[di].shift;
    const uint32_t mask = kDigits[di].mask;
    std::memset(hist, 0, sizeof(uint32_t) * (mask + 1));
    for (int64_t s = 0; s < c; ++s) ++hist[mask - ((src[s] >> shift) & mask)];
    if (hist[mask - ((src[0] >> shift) & mask)] == static_cast<uint32_t>(c)) continue;
    uint32_t sum = 0;
    for (uint32_t b = 0; b <= mask; ++b) {
      const uint32_t t = hist[b];
      hist[b] = sum;
      sum += t;
    }
    for (int64_t s = 0; s < c; ++s) dst[hist[mask - ((src[s] >> shift) & mask)]++] = src[s];
    std::swap(src, dst);
  }
  if (src != sel) std::memcpy(sel, src, sizeof(uint64_t) * static_cast<size_t>(c));
}

// The k-th largest key T by the remaining digits, over the keys at the positions `at` yields
// (all of them share the first digit `prefix`); need: how many of them must still be taken.
// Returns T; need becomes how many keys equal to T are taken.
template <typename At>
uint32_t resolve_threshold(const uint32_t* keys, int64_t count, At at, uint32_t* hist,
                           uint32_t prefix, uint32_t pmask, int64_t* need) {
  for (int di = 1; di < 3; ++di) {
    const Digit& dg = kDigits[di];
    std::memset(hist, 0, sizeof(uint32_t) * (dg.mask + 1));
    for (int64_t i = 0; i < count; ++i) {
      const uint32_t x = keys[at(i)];
      if ((x & pmask) == prefix) ++hist[(x >> dg.shift) & dg.mask];
    }
    uint32_t bin = dg.mask;
    for (;; --bin) {
      if (static_cast<int64_t>(hist[bin]) >= *need) break;
      *need -= hist[bin];
    }
    prefix |= bin << dg.shift;
    pmask |= dg.mask << dg.shift;
  }
  return prefix;
}

}  // namespace

int64_t li_topk_candidates(int64_t k, int64_t kv_cap) {
  return std::clamp<int64_t>(4 * k, 16384, std::max<int64_t>(kv_cap, 16384));
}

int64_t li_select_topk(const uint32_t* keys, int64_t n, int64_t k, const LiTopkScratch& ts,
                       bool hist_ready, int32_t* idx) {
  uint64_t* sel = ts.sel;
  uint32_t* hist = ts.hist;
  int64_t c = 0;
  if (n <= k) {
    for (int64_t j = 0; j < n; ++j) sel[c++] = composite(keys[j], j);
  } else {
    // The first digit: the scorer's histogram, or one pass here.
    const Digit& d0 = kDigits[0];
    static_assert(kDigits[0].shift == kLiRadixShift0);
    if (!hist_ready) {
      std::memset(hist, 0, sizeof(uint32_t) * (d0.mask + 1));
      for (int64_t j = 0; j < n; ++j) ++hist[keys[j] >> d0.shift];
    }
    int64_t need = k;
    uint32_t b0 = d0.mask;
    for (;; --b0) {
      if (static_cast<int64_t>(hist[b0]) >= need) break;
      need -= hist[b0];
    }
    const uint32_t prefix = b0 << d0.shift, pmask = d0.mask << d0.shift;
    if (static_cast<int64_t>(hist[b0]) <= ts.cand_cap) {
      // One branch-free pass: keys of a higher first digit are taken, the positions of those in
      // bin b0 become candidates; the rest of the search runs over the candidates only. sel[c]
      // stays inside its k entries (fewer than k keys rank above bin b0) and cand[m] inside its
      // cand_cap + 1.
      int32_t* cand = ts.cand;
      int64_t m = 0;
      for (int64_t j = 0; j < n; ++j) {
        const uint32_t x = keys[j], dig = x >> d0.shift;
        sel[c] = composite(x, j);
        c += dig > b0;
        cand[m] = static_cast<int32_t>(j);
        m += dig == b0;
      }
      const uint32_t t = resolve_threshold(
          keys, m, [cand](int64_t i) { return cand[i]; }, hist, prefix, pmask, &need);
      // Of the candidates: those above T, and the `need` lowest-indexed ones equal to it.
      for (int64_t i = 0; i < m; ++i) {
        const uint32_t x = keys[cand[i]];
        const bool eq = x == t && need > 0;
        sel[c] = composite(x, cand[i]);
        c += (x > t) | eq;
        need -= eq;
      }
    } else {
      // A first-digit bin too large for the candidate buffer (mass ties): full passes.
      const uint32_t t = resolve_threshold(
          keys, n, [](int64_t j) { return j; }, hist, prefix, pmask, &need);
      for (int64_t j = 0; j < n; ++j) {
        const uint32_t x = keys[j];
        const bool eq = x == t && need > 0;
        sel[c] = composite(x, j);
        c += (x > t) | eq;
        need -= eq;
      }
    }
  }
  // Composites are distinct, so any correct sort gives the same order.
  sort_selection(sel, ts.tmp, c, hist);
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
