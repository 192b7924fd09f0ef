#include "support/li_cases.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "support/elements.hpp"
#include "support/test_rng.hpp"

namespace kvflash::testing {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int64_t kD = reference::kLiHeadDim;
// Reference cost cap under sanitizers (they slow everything ~20x).
constexpr int64_t kSanitizerWorkCap = int64_t{1} << 18;
// Block-table entry for slots no length reaches: far outside the cache, must never be read.
constexpr int32_t kUnusedBlockId = std::numeric_limits<int32_t>::max();
// The index-output sentinel of poison_outputs (not -1 and not a plausible index).
constexpr double kIndexSentinel = 0x7eadbeef;

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

const char* dtype_tag(DType d) {
  return d == DType::kBFloat16 ? "bf16" : d == DType::kFloat16 ? "f16" : "f32";
}

}  // namespace

std::string LiCase::name() const {
  std::string s = "li:";
  s += q_layout == LiQLayout::kTnd ? "tnd" : "bsnd";
  s += k_layout == LiKLayout::kTnd ? "-tnd" : k_layout == LiKLayout::kPaBsnd ? "-pa" : "-bsnd";
  if (k_layout == LiKLayout::kPaBsnd) s += std::to_string(block_size);
  s += std::string(":") + dtype_tag(dtype) + ":w=" + dtype_tag(w_dtype);
  s += ":n" + std::to_string(num_heads) + ":k" + std::to_string(sparse_count) + ":m" +
       std::to_string(sparse_mode);
  s += ":q[" + join(q_lens) + "]+" + std::to_string(q_slack);
  s += ":kv[" + join(kv_lens) + "]+" + std::to_string(kv_slack);
  if (values == LiValues::kTies) s += ":ties";
  if (values == LiValues::kNonFinite) s += ":nonfinite";
  if (fault == LiFault::kBlockId) s += ":badblock";
  if (fault == LiFault::kKeyLength) s += ":badkvlen";
  if (fault == LiFault::kQueryLength) s += ":badqlen";
  if (!pass_q_lens) s += ":noqlen";
  if (!pass_kv_lens) s += ":nokvlen";
  if (return_value) s += ":val";
  if (strided) s += ":strided";
  if (lengths_dtype == DType::kInt64) s += ":len64";
  if (!tag.empty()) s += ":" + tag;
  return s;
}

void PrintTo(const LiCase& c, std::ostream* os) { *os << c.name(); }

std::string LiCase::test_name() const {
  std::string s = name();
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

int64_t LiCase::work() const {
  int64_t w = 0;
  for (int64_t b = 0; b < batch(); ++b) w += std::max<int64_t>(q_lens[b], 1) * kv_lens[b];
  return std::max<int64_t>(w, 1) * num_heads;
}

// ---- the case list ---------------------------------------------------------------------------

std::vector<LiCase> li_cases(Tier tier) {
  std::vector<LiCase> out;
  const DType f16 = DType::kFloat16, bf16 = DType::kBFloat16, f32 = DType::kFloat32;
  struct Combo {
    LiQLayout q;
    LiKLayout k;
  };
  const Combo combos[] = {{LiQLayout::kBsnd, LiKLayout::kBsnd},
                          {LiQLayout::kTnd, LiKLayout::kTnd},
                          {LiQLayout::kBsnd, LiKLayout::kPaBsnd},
                          {LiQLayout::kTnd, LiKLayout::kPaBsnd}};

  // 1. Every layout combination x dtype: a mixed batch (MTP query lengths, causal mode 3, one
  //    batch with fewer keys than sparse_count), padding rows, weights fp32 or the query dtype;
  //    int32 length tensors with bf16, int64 with fp16.
  int n = 0;
  for (const Combo& cb : combos) {
    for (DType dt : {bf16, f16}) {
      LiCase c;
      c.q_layout = cb.q;
      c.k_layout = cb.k;
      c.dtype = dt;
      c.w_dtype = n % 2 == 0 ? f32 : dt;
      c.num_heads = n % 3 == 0 ? 64 : 16;
      c.sparse_count = 64;
      c.q_lens = {2, 1, 3};
      c.kv_lens = {100, 37, 250};
      c.q_slack = 1;
      c.block_size = 32;
      c.return_value = n % 2 == 1;
      c.lengths_dtype = dt == f16 ? DType::kInt64 : DType::kInt32;
      out.push_back(c);
      ++n;
    }
  }
  if (tier == Tier::kSmoke) return out;

  // 2. Head counts: every tail of the head vectors (16 lanes, 8 lanes), 1 .. 64.
  {
    const int64_t heads[] = {1, 3, 8, 9, 17, 32, 48, 63};
    for (int i = 0; i < 8; ++i) {
      LiCase c;
      c.q_layout = combos[i % 4].q;
      c.k_layout = combos[i % 4].k;
      c.dtype = i % 2 ? f16 : bf16;
      c.w_dtype = i % 3 == 0 ? c.dtype : f32;
      c.num_heads = heads[i];
      c.sparse_count = 32;
      c.q_lens = {1, 2};
      c.kv_lens = {70, 45};
      c.return_value = i % 2 == 0;
      out.push_back(c);
    }
  }
  // 3. Sparse counts 1, 2, 7, 2048, 3072, 8192 with rows of fewer, exactly as many and more valid
  //    keys than that.
  for (int64_t k : {1, 2, 7, 2048, 3072, 8192}) {
    LiCase c;
    c.q_layout = k == 7 || k == 3072 ? LiQLayout::kTnd : LiQLayout::kBsnd;
    c.k_layout = k == 7 ? LiKLayout::kTnd : k >= 2048 ? LiKLayout::kPaBsnd : LiKLayout::kBsnd;
    c.dtype = k == 2 || k == 3072 ? f16 : bf16;
    c.num_heads = k >= 2048 ? 8 : 16;
    c.sparse_count = k;
    c.q_lens = {1, 2, 1};
    c.kv_lens = k >= 2048 ? std::vector<int64_t>{k + 300, k, k - 900}
                          : std::vector<int64_t>{k + 20, k, k == 1 ? 1 : k - 1};
    c.block_size = 128;
    c.return_value = k != 2048;
    out.push_back(c);
  }
  // 4. Causal thresholds at every edge (K = 8, S1_b = 12): thr = S2_b - 12 + i + 1 runs over
  //    <= 0 (empty rows), 1, K - 1, K, K + 1 and S2_b; and mode 0 on the same lengths.
  for (int64_t mode : {3, 0}) {
    for (const Combo& cb : {combos[0], combos[1], combos[3]}) {
      LiCase c;
      c.q_layout = cb.q;
      c.k_layout = cb.k;
      c.sparse_mode = mode;
      c.num_heads = 4;
      c.sparse_count = 8;
      c.q_lens = {12, 12, 12, 12};
      c.kv_lens = {3, 11, 18, 19};
      c.q_slack = 2;
      c.block_size = 16;
      c.return_value = true;
      c.tag = "causal";
      out.push_back(c);
    }
  }
  // 5. Empty batches (no query rows; no keys), rows with no valid key, padding rows.
  for (const Combo& cb : combos) {
    LiCase c;
    c.q_layout = cb.q;
    c.k_layout = cb.k;
    c.num_heads = 8;
    c.sparse_count = 16;
    c.q_lens = {3, 0, 2, 4};
    c.kv_lens = {0, 10, 1, 2};
    c.q_slack = 3;
    c.return_value = true;
    c.expect_mostly_empty = true;
    c.tag = "empty";
    out.push_back(c);
  }
  // 6. Ties (exactly equal scores across the sparse_count boundary) and non-finite scores, with
  //    every weight dtype.
  for (LiValues v : {LiValues::kTies, LiValues::kNonFinite}) {
    for (int i = 0; i < 4; ++i) {
      LiCase c;
      c.q_layout = combos[i].q;
      c.k_layout = combos[i].k;
      c.dtype = i % 2 ? f16 : bf16;
      c.w_dtype = i < 2 ? f32 : c.dtype;
      c.num_heads = i % 2 ? 64 : 24;
      c.sparse_count = 48;
      c.q_lens = {2, 3};
      c.kv_lens = {130, 40};
      c.values = v;
      c.return_value = true;
      c.sparse_mode = i == 3 ? 0 : 3;
      out.push_back(c);
    }
  }
  // 7. Strided, offset views; BSND without lengths (S1, S2 used).
  for (int i = 0; i < 4; ++i) {
    LiCase c;
    c.q_layout = combos[i].q;
    c.k_layout = combos[i].k;
    c.dtype = i % 2 ? f16 : bf16;
    c.num_heads = 20;
    c.sparse_count = 24;
    c.q_lens = {2, 1};
    c.kv_lens = {60, 33};
    c.strided = true;
    c.return_value = i % 2 == 0;
    out.push_back(c);
  }
  {
    LiCase c;
    c.num_heads = 16;
    c.sparse_count = 40;
    c.q_lens = {3, 3};
    c.kv_lens = {90, 90};
    c.kv_slack = 0;
    c.pass_q_lens = false;
    c.pass_kv_lens = false;
    c.return_value = true;
    out.push_back(c);
  }
  // 8. Bad device data (D10), written before the call: faulted rows -1 with NaN values.
  {
    LiCase c;
    c.k_layout = LiKLayout::kPaBsnd;
    c.num_heads = 8;
    c.sparse_count = 16;
    c.q_lens = {2, 1, 2};
    c.kv_lens = {40, 70, 50};
    c.return_value = true;
    c.fault = LiFault::kBlockId;
    out.push_back(c);
    c.q_layout = LiQLayout::kTnd;
    out.push_back(c);
    c.fault = LiFault::kKeyLength;
    out.push_back(c);
    c.fault = LiFault::kQueryLength;
    c.expect_mostly_empty = true;  // a bad TND prefix sum faults every row
    out.push_back(c);
    c.q_layout = LiQLayout::kBsnd;
    c.k_layout = LiKLayout::kBsnd;
    c.expect_mostly_empty = false;
    out.push_back(c);
    c.fault = LiFault::kKeyLength;
    out.push_back(c);
    c.q_layout = LiQLayout::kTnd;
    c.k_layout = LiKLayout::kTnd;
    out.push_back(c);
    // int64 lengths: entries no int32 holds (TND: prefix sums whose difference overflows int64).
    c.lengths_dtype = DType::kInt64;
    out.push_back(c);
    c.q_layout = LiQLayout::kBsnd;
    c.k_layout = LiKLayout::kPaBsnd;
    out.push_back(c);
  }
  // 9. DeepSeek-V3.2-like: 64 heads, bf16, K = 2048, paged cache of 128-token blocks; TND query
  //    with MTP rows (vllm-ascend's call) and a BSND decode batch.
  {
    LiCase c;
    c.q_layout = LiQLayout::kTnd;
    c.k_layout = LiKLayout::kPaBsnd;
    c.num_heads = 64;
    c.w_dtype = bf16;
    c.sparse_count = 2048;
    c.q_lens = {1, 2};
    c.kv_lens = {tier == Tier::kFull ? 8192 : 4000, 2100};
    c.block_size = 128;
    c.tag = "dsv32";
    out.push_back(c);
    c.q_layout = LiQLayout::kBsnd;
    c.q_lens = {1, 1, 1, 1};
    c.kv_lens = {3000, 2049, 2500, 100};
    c.return_value = true;
    out.push_back(c);
  }
  // 10. Fewer rows than threads with thousands of keys: li_run splits each row's keys across
  //     threads (the thread-count sweep runs 1..5), with ties and NaN / inf keys in every share.
  for (LiValues v : {LiValues::kTies, LiValues::kNonFinite}) {
    LiCase c;
    c.q_layout = LiQLayout::kTnd;
    c.k_layout = LiKLayout::kPaBsnd;
    c.num_heads = 16;
    c.sparse_count = 64;
    c.q_lens = {1};
    c.kv_lens = {5000};
    c.block_size = 128;
    c.values = v;
    c.return_value = true;
    c.tag = "split";
    out.push_back(c);
    c.q_layout = LiQLayout::kBsnd;
    c.k_layout = LiKLayout::kBsnd;
    c.dtype = f16;
    c.sparse_count = 3072;
    c.q_lens = {2, 1};
    c.kv_lens = {4500, 3500};
    c.sparse_mode = 0;
    out.push_back(c);
  }
  if (tier == Tier::kCi) return out;

  // Full tier: a broader cross product.
  for (const Combo& cb : combos)
    for (DType dt : {f16, bf16})
      for (int64_t heads : {5, 64})
        for (LiValues v : {LiValues::kRandom, LiValues::kTies, LiValues::kNonFinite})
          for (int64_t mode : {0, 3}) {
            LiCase c;
            c.q_layout = cb.q;
            c.k_layout = cb.k;
            c.dtype = dt;
            c.w_dtype = heads == 5 ? f32 : dt;
            c.num_heads = heads;
            c.sparse_count = 100;
            c.q_lens = {3, 1, 4};
            c.kv_lens = {407, 5, 99};
            c.q_slack = 1;
            c.block_size = 64;
            c.values = v;
            c.sparse_mode = mode;
            c.return_value = mode == 3;
            c.tag = "x";
            out.push_back(c);
          }
  return out;
}

std::vector<LiCase> li_cases_for_run() {
  std::vector<LiCase> all = li_cases(test_tier());
  if (!under_sanitizer()) return all;
  std::vector<LiCase> kept;
  for (const LiCase& c : all)
    if (c.work() <= kSanitizerWorkCap) kept.push_back(c);
  return kept;
}

// ---- data ------------------------------------------------------------------------------------

TensorView LiCaseData::alloc(DType dtype, std::vector<int64_t> shape, bool strided, double fill) {
  return padded_view(buffers_, dtype, shape, strided, /*last_stride=*/2, fill);
}

LiCaseData::LiCaseData(const LiCase& c) : case_(c) {
  TestRng rng(fnv1a(c.name()));
  const bool q_tnd = c.q_layout == LiQLayout::kTnd;
  const bool k_tnd = c.k_layout == LiKLayout::kTnd;
  const bool paged = c.k_layout == LiKLayout::kPaBsnd;
  const int64_t batch = c.batch();
  const int64_t n1 = c.num_heads;
  const int64_t kk = c.sparse_count;
  const int64_t max_q = *std::max_element(c.q_lens.begin(), c.q_lens.end());
  const int64_t max_kv = *std::max_element(c.kv_lens.begin(), c.kv_lens.end());
  const int64_t sum_q = std::accumulate(c.q_lens.begin(), c.q_lens.end(), int64_t{0});
  const int64_t sum_kv = std::accumulate(c.kv_lens.begin(), c.kv_lens.end(), int64_t{0});
  const int64_t s1 = std::max<int64_t>(max_q + c.q_slack, 1);
  const int64_t t1 = std::max<int64_t>(sum_q + c.q_slack, 1);

  // Query-side tensors (NaN until a row that is computed gets its values).
  const std::vector<int64_t> qs =
      q_tnd ? std::vector<int64_t>{t1, n1, kD} : std::vector<int64_t>{batch, s1, n1, kD};
  const std::vector<int64_t> ws =
      q_tnd ? std::vector<int64_t>{t1, n1} : std::vector<int64_t>{batch, s1, n1};
  const std::vector<int64_t> os =
      q_tnd ? std::vector<int64_t>{t1, 1, kk} : std::vector<int64_t>{batch, s1, 1, kk};
  call_.query = alloc(c.dtype, qs, c.strided, kNaN);
  call_.weights = alloc(c.w_dtype, ws, c.strided, kNaN);
  call_.sparse_indices = alloc(DType::kInt32, os, false, kIndexSentinel);
  if (c.return_value) call_.sparse_values = alloc(c.dtype, os, false, kNaN);
  call_.return_value = c.return_value;

  // Key tensor.
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
    ks = {num_blocks_, c.block_size, 1, kD};
  } else if (k_tnd) {
    ks = {std::max<int64_t>(sum_kv + c.kv_slack, 1), 1, kD};
  } else {
    ks = {batch, std::max<int64_t>(max_kv + c.kv_slack, 1), 1, kD};
  }
  call_.key = alloc(c.dtype, ks, c.strided, kNaN);

  // Block table: each batch's blocks are a shuffled set of physical blocks; slots past a length
  // hold an id far outside the cache (never read).
  std::vector<int64_t> perm(std::max<int64_t>(num_blocks_, 1));
  std::iota(perm.begin(), perm.end(), 0);
  for (int64_t i = static_cast<int64_t>(perm.size()) - 1; i > 0; --i)
    std::swap(perm[i], perm[rng.below(i + 1)]);
  if (paged) {
    call_.block_table = alloc(DType::kInt32, {batch, max_blocks}, c.strided, kUnusedBlockId);
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t nb = (c.kv_lens[b] + c.block_size - 1) / c.block_size;
      for (int64_t s = 0; s < nb; ++s)
        store(*call_.block_table, {b, s}, static_cast<double>(perm[first_block[b] + s]));
    }
  }

  // Lengths: per batch, or prefix sums for TND.
  if (q_tnd || c.pass_q_lens) {
    call_.actual_seq_lengths_query = alloc(c.lengths_dtype, {batch}, c.strided, 0);
    int64_t acc = 0;
    for (int64_t b = 0; b < batch; ++b) {
      acc += c.q_lens[b];
      store(*call_.actual_seq_lengths_query, {b}, static_cast<double>(q_tnd ? acc : c.q_lens[b]));
    }
  }
  if (k_tnd || paged || c.pass_kv_lens) {
    call_.actual_seq_lengths_key = alloc(c.lengths_dtype, {batch}, c.strided, 0);
    int64_t acc = 0;
    for (int64_t b = 0; b < batch; ++b) {
      acc += c.kv_lens[b];
      store(*call_.actual_seq_lengths_key, {b}, static_cast<double>(k_tnd ? acc : c.kv_lens[b]));
    }
  }

  // Query rows that are computed (inside their batch's length): q and w values.
  int64_t q_first = 0;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t i = 0; i < c.q_lens[b]; ++i) {
      const int64_t t = q_first + i;
      for (int64_t h = 0; h < n1; ++h) {
        double w = rng.normal();
        if (c.values == LiValues::kNonFinite && i == 0 && h == n1 / 2) w = kNaN;
        store(call_.weights, q_tnd ? std::vector<int64_t>{t, h} : std::vector<int64_t>{b, i, h}, w);
        for (int64_t d = 0; d < kD; ++d) {
          store(call_.query,
                q_tnd ? std::vector<int64_t>{t, h, d} : std::vector<int64_t>{b, i, h, d},
                rng.normal());
        }
      }
    }
    q_first += c.q_lens[b];
  }

  // Keys 0 .. kv_len-1 of every batch (the rest stays NaN).
  int64_t kv_first = 0;
  std::vector<double> pool(5 * kD, 0.0);  // kTies: row 4 is the zero row
  for (int64_t i = 0; i < 4 * kD; ++i) pool[i] = rng.normal();
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t j = 0; j < c.kv_lens[b]; ++j) {
      std::vector<int64_t> ix;
      if (paged) {
        ix = {perm[first_block[b] + j / c.block_size], j % c.block_size, 0, 0};
      } else if (k_tnd) {
        ix = {kv_first + j, 0, 0};
      } else {
        ix = {b, j, 0, 0};
      }
      const int64_t from = c.values == LiValues::kTies ? rng.below(5) : -1;
      for (int64_t d = 0; d < kD; ++d) {
        ix.back() = d;
        double x = from >= 0 ? pool[from * kD + d] : rng.normal();
        if (c.values == LiValues::kNonFinite) {
          if (j % 7 == 3 && d == j % kD) x = kNaN;
          if (j % 11 == 5 && d == (3 * j) % kD) x = kInf;
        }
        store(call_.key, ix, x);
      }
    }
    kv_first += c.kv_lens[b];
  }

  call_.layout_query = q_tnd ? "TND" : "BSND";
  call_.layout_key = paged ? "PA_BSND" : k_tnd ? "TND" : "BSND";
  call_.sparse_count = kk;
  call_.sparse_mode = c.sparse_mode;

  // Bad device data.
  const int64_t last = batch - 1;
  switch (c.fault) {
    case LiFault::kNone:
      break;
    case LiFault::kBlockId: {
      const int64_t nb = (c.kv_lens[last] + c.block_size - 1) / c.block_size;
      store(*call_.block_table, {last, nb - 1}, static_cast<double>(num_blocks_));
      break;
    }
    case LiFault::kKeyLength:
      if (c.lengths_dtype == DType::kInt64 && k_tnd && batch >= 2) {
        store(*call_.actual_seq_lengths_key, {last - 1}, -0x1p62);
        store(*call_.actual_seq_lengths_key, {last}, 0x1p62);
      } else if (c.lengths_dtype == DType::kInt64) {
        store(*call_.actual_seq_lengths_key, {last}, 0x1p40);
      } else if (k_tnd) {
        store(*call_.actual_seq_lengths_key, {last},
              static_cast<double>(sum_kv - c.kv_lens[last] - 1));
      } else {
        store(*call_.actual_seq_lengths_key, {last},
              static_cast<double>(paged ? max_blocks * c.block_size + 1 : ks[1] + 1));
      }
      break;
    case LiFault::kQueryLength:
      if (q_tnd) {
        store(*call_.actual_seq_lengths_query, {0},
              static_cast<double>(c.q_lens[0] + c.q_lens[1] + 1));
      } else {
        store(*call_.actual_seq_lengths_query, {last}, static_cast<double>(s1 + 1));
      }
      break;
  }
}

void LiCaseData::poison_outputs() {
  auto fill = [](const TensorView& v, double x) {
    TensorView flat = TensorView::contiguous(v.data, v.dtype, {v.numel()});
    for (int64_t i = 0; i < v.numel(); ++i) store(flat, {i}, x);
  };
  fill(call_.sparse_indices, kIndexSentinel);
  if (call_.sparse_values) fill(*call_.sparse_values, kNaN);
}

std::vector<std::byte> LiCaseData::output_bytes() const {
  std::vector<std::byte> out;
  auto add = [&](const TensorView& v) {
    const std::byte* p = static_cast<const std::byte*>(v.data);
    out.insert(out.end(), p, p + v.numel() * dtype_size(v.dtype));
  };
  add(call_.sparse_indices);
  if (call_.sparse_values) add(*call_.sparse_values);
  return out;
}

}  // namespace kvflash::testing
