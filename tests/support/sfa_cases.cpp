#include "support/sfa_cases.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "core/half.hpp"
#include "sfa_reference.hpp"
#include "support/elements.hpp"
#include "support/test_rng.hpp"

namespace kvflash::testing {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int64_t kNope = 512;
constexpr int64_t kRope = 64;
// Reference cost cap under sanitizers (they slow everything ~20x).
constexpr int64_t kSanitizerWorkCap = int64_t{1} << 19;
// Block-table entry for slots no position uses: far outside the cache, must never be read.
constexpr int32_t kUnusedBlockId = std::numeric_limits<int32_t>::max();

void store(const TensorView& v, const std::vector<int64_t>& idx, double x) {
  int64_t off = v.offset;
  for (size_t k = 0; k < idx.size(); ++k) off += idx[k] * v.strides[k];
  store_element(v, off, x);
}

std::string join(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

const char* pattern_name(SfaIndexPattern p) {
  switch (p) {
    case SfaIndexPattern::kClean:
      return "clean";
    case SfaIndexPattern::kMixed:
      return "mixed";
    case SfaIndexPattern::kMinusOneMiddle:
      return "m1mid";
    case SfaIndexPattern::kSomeEmpty:
      return "someempty";
  }
  return "?";
}

}  // namespace

std::string SfaCase::name() const {
  std::string s = "sfa:";
  s += q_layout == SfaQLayout::kTnd ? "tnd" : "bsnd";
  s += kv_layout == SfaKvLayout::kTnd      ? "-tnd"
       : kv_layout == SfaKvLayout::kPaBsnd ? "-pa"
                                           : "-bsnd";
  if (kv_layout == SfaKvLayout::kPaBsnd) s += std::to_string(block_size);
  s += dtype == DType::kBFloat16 ? ":bf16" : ":f16";
  s += ":n" + std::to_string(num_heads) + ":k" + std::to_string(sparse_size) + ":sbs" +
       std::to_string(sparse_block_size) + ":m" + std::to_string(sparse_mode);
  s += ":q[" + join(q_lens) + "]+" + std::to_string(q_slack);
  s += ":kv[" + join(kv_lens) + "]+" + std::to_string(kv_slack);
  s += std::string(":") + pattern_name(indices);
  if (sinks) s += ":sink";
  if (lse) s += ":lse";
  if (fp32_out) s += ":o=f32";
  if (value_separate) s += ":vsep";
  if (strided) s += ":strided";
  if (!pass_kv_lens) s += ":nokvlen";
  if (lengths_dtype == DType::kInt64) s += ":len64";
  if (logit_scale != 1.5) s += ":ls" + std::to_string(static_cast<int>(logit_scale));
  if (!tag.empty()) s += ":" + tag;
  return s;
}

void PrintTo(const SfaCase& c, std::ostream* os) { *os << c.name(); }

std::string SfaCase::test_name() const {
  std::string s = name();
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

int64_t SfaCase::work() const {
  const int64_t rows = std::accumulate(q_lens.begin(), q_lens.end(), int64_t{0});
  return std::max<int64_t>(rows, 1) * num_heads * sparse_size * sparse_block_size;
}

// ---- the case list ---------------------------------------------------------------------------

std::vector<SfaCase> sfa_cases(Tier tier) {
  std::vector<SfaCase> out;
  const DType f16 = DType::kFloat16, bf16 = DType::kBFloat16;
  struct Combo {
    SfaQLayout q;
    SfaKvLayout kv;
  };
  const Combo combos[] = {{SfaQLayout::kBsnd, SfaKvLayout::kBsnd},
                          {SfaQLayout::kTnd, SfaKvLayout::kTnd},
                          {SfaQLayout::kBsnd, SfaKvLayout::kPaBsnd},
                          {SfaQLayout::kTnd, SfaKvLayout::kPaBsnd}};

  // 1. Every layout combination x dtype: a mixed batch (MTP query lengths, causal mode 3, mixed
  //    indices, LSE where allowed, sinks on half of them); int32 length tensors with fp16, int64
  //    with bf16.
  int n = 0;
  for (const Combo& cb : combos) {
    for (DType dt : {f16, bf16}) {
      SfaCase c;
      c.q_layout = cb.q;
      c.kv_layout = cb.kv;
      c.dtype = dt;
      c.num_heads = 16;
      c.sparse_size = 64;
      c.q_lens = {2, 1, 3};
      c.kv_lens = {100, 37, 250};
      c.q_slack = cb.q == SfaQLayout::kBsnd ? 1 : 2;
      c.lse = true;  // with every KV layout (decision 22)
      c.sinks = (n++ % 2) == 1;
      c.block_size = 32;
      c.lengths_dtype = dt == bf16 ? DType::kInt64 : DType::kInt32;
      out.push_back(c);
    }
  }
  if (tier == Tier::kSmoke) return out;

  // 2. Head counts N1 in {1, 2, 16, 64, 128} (every group size class), alternating layouts.
  {
    const int64_t heads[] = {1, 2, 16, 64, 128};
    for (int i = 0; i < 5; ++i) {
      SfaCase c;
      const Combo& cb = combos[i % 4];
      c.q_layout = cb.q;
      c.kv_layout = cb.kv;
      c.dtype = i % 2 ? bf16 : f16;
      c.num_heads = heads[i];
      c.sparse_size = heads[i] >= 64 ? 32 : 64;
      c.q_lens = {1, 2};
      c.kv_lens = {80, 200};
      c.sinks = i % 2 == 0;
      c.lse = true;  // with every KV layout (decision 22)
      out.push_back(c);
    }
  }
  // 3. Sparse sizes K in {1, 7, 64, 2048}.
  for (int64_t k : {1, 7, 64, 2048}) {
    SfaCase c;
    c.q_layout = k == 7 ? SfaQLayout::kTnd : SfaQLayout::kBsnd;
    c.kv_layout = k == 7      ? SfaKvLayout::kTnd
                  : k == 2048 ? SfaKvLayout::kPaBsnd
                              : SfaKvLayout::kBsnd;
    c.dtype = k == 64 ? bf16 : f16;
    c.num_heads = k == 2048 ? 4 : 8;
    c.sparse_size = k;
    c.q_lens = {2, 1};
    c.kv_lens = k == 2048 ? std::vector<int64_t>{3000, 1500} : std::vector<int64_t>{90, 33};
    c.block_size = 128;
    c.indices = k == 2048 ? SfaIndexPattern::kClean : SfaIndexPattern::kMixed;
    out.push_back(c);
  }
  // 4. Sparse block sizes in {1, 2, 16, 128}: partial last blocks clipped at thr.
  for (int64_t sbs : {1, 2, 16, 128}) {
    for (SfaKvLayout kv : {SfaKvLayout::kBsnd, SfaKvLayout::kPaBsnd}) {
      SfaCase c;
      c.kv_layout = kv;
      c.dtype = sbs == 16 ? bf16 : f16;
      c.num_heads = 8;
      c.sparse_block_size = sbs;
      c.sparse_size = sbs >= 16 ? 8 : 32;
      c.q_lens = {2, 1};
      c.kv_lens = {sbs * 5 + 3, sbs * 2 + 1};
      c.block_size = std::max<int64_t>(sbs, 16);
      c.sinks = sbs == 2;
      c.lse = true;  // with every KV layout (decision 22)
      out.push_back(c);
    }
  }
  // 5. Modes 0 and 3 with Q_S > KV length (invalid leading rows in mode 3) and zero-length
  //    batches (no query rows; no KV tokens).
  for (int64_t mode : {0, 3}) {
    for (const Combo& cb : {combos[0], combos[1], combos[3]}) {
      SfaCase c;
      c.q_layout = cb.q;
      c.kv_layout = cb.kv;
      c.sparse_mode = mode;
      c.num_heads = 4;
      c.sparse_size = 16;
      c.q_lens = {6, 0, 3, 2};
      c.kv_lens = {3, 10, 0, 40};
      c.q_slack = 1;
      c.sinks = true;
      c.lse = true;  // with every KV layout (decision 22)
      c.tag = "shortkv";
      c.expect_mostly_empty = true;  // by design most rows are invalid, uncovered or empty
      out.push_back(c);
    }
  }
  // 6. Index patterns: -1 in the middle, and rows that select nothing, with and without sinks.
  for (bool sink : {false, true}) {
    SfaCase c;
    c.indices = SfaIndexPattern::kMinusOneMiddle;
    c.sinks = sink;
    c.lse = true;
    c.q_lens = {2, 2};
    c.kv_lens = {70, 20};
    out.push_back(c);
    c.indices = SfaIndexPattern::kSomeEmpty;
    c.q_layout = SfaQLayout::kTnd;
    c.kv_layout = SfaKvLayout::kTnd;
    c.dtype = bf16;
    out.push_back(c);
  }
  // 7. Large-magnitude logits, separate value tensor, strided inputs, no KV lengths (S2 used).
  {
    SfaCase c;
    c.logit_scale = 40.0;
    c.sinks = true;
    c.lse = true;
    c.q_lens = {2, 1};
    c.kv_lens = {120, 60};
    out.push_back(c);
    c.logit_scale = 1.5;
    c.value_separate = true;
    c.strided = true;
    c.kv_layout = SfaKvLayout::kPaBsnd;
    c.lse = false;
    out.push_back(c);
    c.kv_layout = SfaKvLayout::kBsnd;
    c.q_layout = SfaQLayout::kBsnd;
    c.pass_kv_lens = false;
    c.kv_lens = {60, 60};
    c.kv_slack = 0;
    c.lse = true;
    out.push_back(c);
    SfaCase t = c;
    t.q_layout = SfaQLayout::kTnd;
    t.kv_layout = SfaKvLayout::kTnd;
    t.pass_kv_lens = true;
    t.kv_slack = 4;
    t.dtype = bf16;
    out.push_back(t);
  }
  // 8. fp32 outputs (kvflash extension: the unrounded partial a context-parallel merge takes),
  //    with the rows that make special partials: invalid, uncovered, empty selections, sinks.
  for (int i = 0; i < 2; ++i) {
    SfaCase c = out[i == 0 ? 1 : 6];  // BSND/BSND bf16 and TND/PA f16 of group 1
    c.fp32_out = true;
    c.indices = SfaIndexPattern::kSomeEmpty;
    c.sinks = i == 1;
    c.tag = "f32";
    out.push_back(c);
  }
  // 9. A DeepSeek-V3.2-like decode step: 128 heads, MTP 2, paged cache of 64-token blocks.
  {
    SfaCase c;
    c.kv_layout = SfaKvLayout::kPaBsnd;
    c.dtype = bf16;
    c.num_heads = 128;
    c.sparse_size = tier == Tier::kFull ? 2048 : 256;
    c.q_lens = {2};
    c.kv_lens = {tier == Tier::kFull ? 5000 : 700};
    c.block_size = 64;
    c.indices = SfaIndexPattern::kClean;
    c.sinks = true;
    c.tag = "dsv32";
    out.push_back(c);
  }
  if (tier == Tier::kCi) return out;

  // Full tier: a broader cross product of layouts, dtypes, heads, block sizes and patterns.
  for (const Combo& cb : combos)
    for (DType dt : {f16, bf16})
      for (int64_t heads : {2, 64})
        for (int64_t sbs : {1, 16})
          for (SfaIndexPattern pat : {SfaIndexPattern::kMixed, SfaIndexPattern::kSomeEmpty}) {
            SfaCase c;
            c.q_layout = cb.q;
            c.kv_layout = cb.kv;
            c.dtype = dt;
            c.num_heads = heads;
            c.sparse_block_size = sbs;
            c.sparse_size = 48;
            c.q_lens = {3, 1, 4};
            c.kv_lens = {sbs * 40 + 7, 5, sbs * 9};
            c.block_size = sbs == 16 ? 64 : 16;
            c.indices = pat;
            c.sinks = pat == SfaIndexPattern::kSomeEmpty;
            c.lse = true;  // with every KV layout (decision 22)
            c.sparse_mode = heads == 2 ? 0 : 3;
            c.tag = "x";
            out.push_back(c);
          }
  return out;
}

std::vector<SfaCase> sfa_cases_for_run() {
  std::vector<SfaCase> all = sfa_cases(test_tier());
  if (!under_sanitizer()) return all;
  std::vector<SfaCase> kept;
  for (const SfaCase& c : all)
    if (c.work() <= kSanitizerWorkCap) kept.push_back(c);
  return kept;
}

// ---- data ------------------------------------------------------------------------------------

TensorView SfaCaseData::alloc(DType dtype, std::vector<int64_t> shape, bool strided, double fill) {
  // 64-wide rope tensors get a last-dim stride of 2 when strided: both the vector and the
  // element-wise gather paths run.
  const int64_t last_stride = !shape.empty() && shape.back() == kRope ? 2 : 1;
  return padded_view(buffers_, dtype, shape, strided, last_stride, fill);
}

SfaCaseData::SfaCaseData(const SfaCase& c) : case_(c) {
  TestRng rng(fnv1a(c.name()));
  const bool q_tnd = c.q_layout == SfaQLayout::kTnd;
  const bool kv_tnd = c.kv_layout == SfaKvLayout::kTnd;
  const bool paged = c.kv_layout == SfaKvLayout::kPaBsnd;
  const int64_t batch = c.batch();
  const int64_t n1 = c.num_heads;
  const int64_t kk = c.sparse_size;
  const int64_t sbs = c.sparse_block_size;
  const int64_t max_q = *std::max_element(c.q_lens.begin(), c.q_lens.end());
  const int64_t max_kv = *std::max_element(c.kv_lens.begin(), c.kv_lens.end());
  const int64_t sum_q = std::accumulate(c.q_lens.begin(), c.q_lens.end(), int64_t{0});
  const int64_t sum_kv = std::accumulate(c.kv_lens.begin(), c.kv_lens.end(), int64_t{0});
  const int64_t s1 = std::max<int64_t>(max_q + c.q_slack, 1);
  const int64_t t1 = std::max<int64_t>(sum_q + c.q_slack, 1);
  const int64_t rows = q_tnd ? t1 : batch * s1;

  // Query-side tensors.
  const std::vector<int64_t> qs =
      q_tnd ? std::vector<int64_t>{t1, n1, kNope} : std::vector<int64_t>{batch, s1, n1, kNope};
  std::vector<int64_t> qrs = qs;
  qrs.back() = kRope;
  std::vector<int64_t> is = qs;
  is[is.size() - 2] = 1;
  is.back() = kk;
  args_.query = alloc(c.dtype, qs, c.strided, kNaN);
  args_.query_rope = alloc(c.dtype, qrs, c.strided, kNaN);
  args_.sparse_indices = alloc(DType::kInt32, is, c.strided, 0);
  args_.attention_out = alloc(c.fp32_out ? DType::kFloat32 : c.dtype, qs, false, kNaN);
  if (c.lse) {
    const std::vector<int64_t> ls =
        q_tnd ? std::vector<int64_t>{1, t1, n1} : std::vector<int64_t>{batch, 1, s1, n1};
    args_.softmax_max = alloc(DType::kFloat32, ls, false, kNaN);
    args_.softmax_sum = alloc(DType::kFloat32, ls, false, kNaN);
    args_.return_softmax_lse = true;
  }

  // KV-side tensors.
  std::vector<int64_t> ks;
  int64_t max_blocks = 0;
  std::vector<int64_t> first_block(batch, 0);
  if (paged) {
    max_blocks = (max_kv + c.block_size - 1) / c.block_size + 1;  // one never-used slot
    int64_t used = 0;
    for (int64_t b = 0; b < batch; ++b) {
      first_block[b] = used;
      used += (c.kv_lens[b] + c.block_size - 1) / c.block_size;
    }
    num_blocks_ = std::max<int64_t>(used + c.kv_slack, 1);
    ks = {num_blocks_, c.block_size, 1, kNope};
  } else if (kv_tnd) {
    ks = {std::max<int64_t>(sum_kv + c.kv_slack, 1), 1, kNope};
  } else {
    ks = {batch, std::max<int64_t>(max_kv + c.kv_slack, 1), 1, kNope};
  }
  std::vector<int64_t> krs = ks;
  krs.back() = kRope;
  args_.key = alloc(c.dtype, ks, c.strided, kNaN);
  args_.key_rope = alloc(c.dtype, krs, c.strided, kNaN);
  if (c.value_separate) args_.value = alloc(c.dtype, ks, c.strided, kNaN);

  // Block table: each batch's blocks are a shuffled set of physical blocks; unused slots hold an
  // id far outside the cache (never referenced by any length, so never read or checked).
  std::vector<int64_t> perm(num_blocks_);
  std::iota(perm.begin(), perm.end(), 0);
  for (int64_t i = num_blocks_ - 1; i > 0; --i) std::swap(perm[i], perm[rng.below(i + 1)]);
  if (paged) {
    args_.block_table = alloc(DType::kInt32, {batch, max_blocks}, c.strided, kUnusedBlockId);
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t nb = (c.kv_lens[b] + c.block_size - 1) / c.block_size;
      for (int64_t s = 0; s < nb; ++s)
        store(*args_.block_table, {b, s}, static_cast<double>(perm[first_block[b] + s]));
    }
  }

  // Actual lengths.
  const bool pass_q =
      q_tnd || std::any_of(c.q_lens.begin(), c.q_lens.end(), [&](int64_t l) { return l != s1; });
  if (pass_q) {
    args_.actual_seq_lengths_query = alloc(c.lengths_dtype, {batch}, c.strided, 0);
    int64_t acc = 0;
    for (int64_t b = 0; b < batch; ++b) {
      acc += c.q_lens[b];
      store(*args_.actual_seq_lengths_query, {b}, static_cast<double>(q_tnd ? acc : c.q_lens[b]));
    }
  }
  if (kv_tnd || paged || c.pass_kv_lens) {
    args_.actual_seq_lengths_kv = alloc(c.lengths_dtype, {batch}, c.strided, 0);
    int64_t acc = 0;
    for (int64_t b = 0; b < batch; ++b) {
      acc += c.kv_lens[b];
      store(*args_.actual_seq_lengths_kv, {b}, static_cast<double>(kv_tnd ? acc : c.kv_lens[b]));
    }
  }

  // Indices per row, and which KV tokens of each batch some row selects.
  std::vector<std::vector<char>> used(batch);
  for (int64_t b = 0; b < batch; ++b) used[b].assign(c.kv_lens[b], 0);
  auto row_index = [&](int64_t r, int64_t k) {
    return q_tnd ? std::vector<int64_t>{r, 0, k} : std::vector<int64_t>{r / s1, r % s1, 0, k};
  };
  int64_t q_first = 0;
  std::vector<int64_t> valid_row(rows, 0);  // 1 = row computes something from q
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t lq = c.q_lens[b], lkv = c.kv_lens[b];
    for (int64_t i = 0; i < lq; ++i) {
      const int64_t r = q_tnd ? q_first + i : b * s1 + i;
      const int64_t thr = c.sparse_mode == 3 ? lkv - lq + i + 1 : lkv;
      std::vector<int32_t> idx(kk);
      const int64_t nblk = thr > 0 ? (thr + sbs - 1) / sbs : 0;
      const int64_t vc = std::min(kk, nblk);
      // Distinct in-range ids (a partial shuffle), used by every pattern.
      std::vector<int32_t> ids(std::max<int64_t>(nblk, 1));
      std::iota(ids.begin(), ids.end(), 0);
      for (int64_t k = 0; k < std::min<int64_t>(kk, nblk); ++k)
        std::swap(ids[k], ids[k + rng.below(nblk - k)]);
      for (int64_t k = 0; k < kk; ++k) {
        if (k < vc) {
          idx[k] = ids[k];
        } else if (c.indices == SfaIndexPattern::kClean || nblk == 0) {
          idx[k] = -1;
        } else {
          idx[k] = static_cast<int32_t>(rng.below(nblk));  // valid but past validCount: ignored
        }
      }
      const bool mixed =
          c.indices == SfaIndexPattern::kMixed || c.indices == SfaIndexPattern::kSomeEmpty;
      if (mixed) {
        for (int64_t k = 0; k < vc; ++k) {
          const double u = rng.unit();
          if (u < 0.1) {
            idx[k] = static_cast<int32_t>(nblk + rng.below(50));  // out of range: skipped
          } else if (u < 0.18 && k > 0) {
            idx[k] = idx[rng.below(k)];  // duplicate (or a copy of a skipped value)
            if (idx[k] == -1) idx[k] = ids[k];
          } else if (u < 0.23) {
            idx[k] = rng.unit() < 0.5 ? std::numeric_limits<int32_t>::min()
                                      : static_cast<int32_t>(-2 - rng.below(1000));
          }
        }
      }
      if (c.indices == SfaIndexPattern::kMinusOneMiddle && vc >= 2) idx[vc / 2] = -1;
      if (c.indices == SfaIndexPattern::kSomeEmpty && r % 3 == 0) {
        if (r % 2 == 0) {
          idx[0] = -1;
        } else {
          for (int64_t k = 0; k < kk; ++k) idx[k] = static_cast<int32_t>(nblk + rng.below(9));
        }
      }
      for (int64_t k = 0; k < kk; ++k) store(args_.sparse_indices, row_index(r, k), idx[k]);
      for (int64_t j : reference::sfa_reference_select(idx, thr, sbs)) used[b][j] = 1;
      valid_row[r] = thr > 0 ? 1 : 0;
    }
    q_first += lq;
  }
  // Rows outside every batch still get (ignored) indices.
  for (int64_t r = 0; r < rows; ++r)
    if (!valid_row[r])
      for (int64_t k = 0; k < kk; ++k)
        store(args_.sparse_indices, row_index(r, k), static_cast<double>(rng.below(7)));

  // Query values: N(0, 1) on rows that compute; NaN stays on rows that must output zeros.
  for (int64_t r = 0; r < rows; ++r) {
    if (!valid_row[r]) continue;
    for (int64_t h = 0; h < n1; ++h) {
      std::vector<int64_t> ix =
          q_tnd ? std::vector<int64_t>{r, h, 0} : std::vector<int64_t>{r / s1, r % s1, h, 0};
      for (int64_t d = 0; d < kNope; ++d) {
        ix.back() = d;
        store(args_.query, ix, rng.normal());
      }
      for (int64_t d = 0; d < kRope; ++d) {
        ix.back() = d;
        store(args_.query_rope, ix, rng.normal());
      }
    }
  }
  // KV values only where some row selects them.
  int64_t kv_first = 0;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t j = 0; j < c.kv_lens[b]; ++j) {
      if (!used[b][j]) continue;
      std::vector<int64_t> ix;
      if (paged) {
        ix = {perm[first_block[b] + j / c.block_size], j % c.block_size, 0, 0};
      } else if (kv_tnd) {
        ix = {kv_first + j, 0, 0};
      } else {
        ix = {b, j, 0, 0};
      }
      for (int64_t d = 0; d < kNope; ++d) {
        ix.back() = d;
        store(args_.key, ix, rng.normal());
        if (args_.value) store(*args_.value, ix, rng.normal());
      }
      for (int64_t d = 0; d < kRope; ++d) {
        ix.back() = d;
        store(args_.key_rope, ix, rng.normal());
      }
    }
    kv_first += c.kv_lens[b];
  }

  if (c.sinks) {
    args_.sinks = alloc(DType::kFloat32, {n1}, c.strided, kNaN);
    for (int64_t h = 0; h < n1; ++h) store(*args_.sinks, {h}, rng.normal() * c.sink_scale);
  }
  args_.scale_value = c.logit_scale / std::sqrt(static_cast<double>(kNope + kRope));
  args_.sparse_block_size = sbs;
  args_.layout_query = q_tnd ? "TND" : "BSND";
  args_.layout_kv = paged ? "PA_BSND" : kv_tnd ? "TND" : "BSND";
  args_.sparse_mode = c.sparse_mode;
}

void SfaCaseData::poison_outputs() {
  auto fill = [](const TensorView& v) {
    TensorView flat = TensorView::contiguous(v.data, v.dtype, {v.numel()});
    for (int64_t i = 0; i < v.numel(); ++i) store(flat, {i}, kNaN);
  };
  fill(args_.attention_out);
  if (args_.softmax_max) fill(*args_.softmax_max);
  if (args_.softmax_sum) fill(*args_.softmax_sum);
}

std::vector<std::byte> SfaCaseData::output_bytes() const {
  std::vector<std::byte> out;
  auto add = [&](const TensorView& v) {
    const std::byte* p = static_cast<const std::byte*>(v.data);
    out.insert(out.end(), p, p + v.numel() * dtype_size(v.dtype));
  };
  add(args_.attention_out);
  if (args_.softmax_max) add(*args_.softmax_max);
  if (args_.softmax_sum) add(*args_.softmax_sum);
  return out;
}

int32_t* SfaCaseData::block_table_entry(int64_t b, int64_t slot) {
  const TensorView& bt = *args_.block_table;
  return static_cast<int32_t*>(bt.data) + bt.offset + b * bt.strides[0] + slot * bt.strides[1];
}

}  // namespace kvflash::testing
