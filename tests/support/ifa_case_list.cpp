// The IFA case list per tier. Each group below targets one coverage requirement; the ci tier is the
// union of all groups at modest sizes (a few seconds for every ISA in Release), smoke a small
// subset, full adds production-sized and long cases and a pseudo-random sweep.
#include <algorithm>

#include "support/ifa_cases.hpp"
#include "support/test_rng.hpp"

namespace kvflash::testing {
namespace {

constexpr DType kF16 = DType::kFloat16;
constexpr DType kBf16 = DType::kBFloat16;
constexpr DType kI8 = DType::kInt8;

struct Combo {
  DType q, kv, out;
};
// docs/semantics.md §2.2: the allowed (query, key/value, output) dtype combinations.
constexpr Combo kCombos[] = {
    {kF16, kF16, kF16}, {kBf16, kBf16, kBf16}, {kF16, kF16, kI8}, {kF16, kI8, kF16},
    {kF16, kI8, kI8},   {kBf16, kI8, kBf16},   {kBf16, kI8, kI8}, {kBf16, kBf16, kI8},
};
constexpr IfaLayout kLayouts[] = {IfaLayout::kBsh, IfaLayout::kBsnd, IfaLayout::kBnsd};
constexpr DType kMaskDtypes[] = {DType::kBool, DType::kInt8, DType::kUInt8};

IfaCase make(IfaLayout layout, Combo combo, int64_t n, int64_t kvn, int64_t d,
             std::vector<int64_t> lens) {
  IfaCase c;
  c.layout = layout;
  c.q_dtype = combo.q;
  c.kv_dtype = combo.kv;
  c.out_dtype = combo.out;
  c.batch = static_cast<int64_t>(lens.size());
  c.num_heads = n;
  c.num_kv_heads = kvn;
  c.head_dim = d;
  c.kv_lens = std::move(lens);
  return c;
}

// Fills in what a combination requires (scales for int8 KV / output) and what paged caches need.
IfaCase finish(IfaCase c) {
  if (c.kv_dtype == kI8 && c.antiquant == QuantMode::kNone) c.antiquant = QuantMode::kPerChannel;
  if (c.kv_dtype != kI8) c.antiquant = QuantMode::kNone;
  if (c.out_dtype == kI8 && c.out_quant == QuantMode::kNone) c.out_quant = QuantMode::kPerTensor;
  if (c.out_dtype != kI8) c.out_quant = QuantMode::kNone;
  if (c.q_dtype != kBf16) c.out_quant_bf16 = false;
  if (c.paged) {
    c.pass_lengths = true;
    if (c.cache_bnsd) c.layout = IfaLayout::kBnsd;
  }
  return c;
}

void add(std::vector<IfaCase>& v, IfaCase c) { v.push_back(finish(std::move(c))); }

// ---- groups ------------------------------------------------------------------------------------

// kvflash's fp32 output (the unrounded result, what a context-parallel merge takes as a partial),
// with the features that shape a partial: LSE, masks with fully masked rows, pse, paging, int8
// KV, left padding, empty batches.
void fp32_output(std::vector<IfaCase>& v) {
  constexpr DType kF32 = DType::kFloat32;
  {
    IfaCase c = make(IfaLayout::kBsh, {kF16, kF16, kF32}, 8, 2, 64, {33, 0, 70});
    c.lse = true;
    c.tag = "f32";
    add(v, c);
  }
  {
    IfaCase c = make(IfaLayout::kBnsd, {kBf16, kBf16, kF32}, 4, 4, 128, {40, 77});
    c.mask = MaskShape::kBN1S;
    c.mask_full_rows = true;
    c.pse = PseShape::kBatch;
    c.lse = true;
    c.tag = "f32";
    add(v, c);
  }
  {
    IfaCase c = make(IfaLayout::kBsnd, {kBf16, kI8, kF32}, 8, 2, 64, {100, 17});
    c.paged = true;
    c.block_size = 32;
    c.lse = true;
    c.zero_fully_masked = true;
    c.mask = MaskShape::kBS;
    c.mask_full_rows = true;
    c.tag = "f32";
    add(v, c);
  }
  {
    IfaCase c = make(IfaLayout::kBsh, {kF16, kI8, kF32}, 4, 1, 48, {20, 40, 33});
    c.kv_padding = 10;  // batch 1 starts before position 0: empty
    c.antiquant = QuantMode::kPerTensor;
    c.lse = true;
    c.strided = true;
    c.tag = "f32";
    add(v, c);
  }
}

// Every layout x every dtype combination, varying quant modes and shapes along the way.
void dtype_layout_matrix(std::vector<IfaCase>& v) {
  constexpr int64_t kDims[] = {64, 128, 48, 80};
  int idx = 0;
  for (IfaLayout l : kLayouts) {
    for (const Combo& combo : kCombos) {
      const int64_t n = idx % 2 ? 8 : 4;
      const int64_t kvn = idx % 3 == 0 ? n : (idx % 3 == 1 ? 2 : 1);
      IfaCase c = make(l, combo, n, kvn, kDims[idx % 4], {17 + idx, 33 + 2 * idx});
      c.antiquant = idx % 2 ? QuantMode::kPerTensor : QuantMode::kPerChannel;
      c.antiquant_shape = idx % 4;
      c.antiquant_offset = idx % 5 != 0;
      c.out_quant = idx % 3 ? QuantMode::kPerChannel : QuantMode::kPerTensor;
      c.out_quant_shape = idx % 8;
      c.out_quant_offset = idx % 4 != 1;
      c.out_quant_bf16 = idx % 2 == 0;
      c.lse = idx % 4 == 3;
      c.kvn_attr_zero = kvn == n && idx % 2 == 0;
      if (combo.kv != kI8) c.antiquant = QuantMode::kNone;
      if (combo.out != kI8) c.out_quant = QuantMode::kNone;
      add(v, c);
      ++idx;
    }
  }
}

// GQA groups 1..64, including odd ones.
void gqa_groups(std::vector<IfaCase>& v) {
  struct G {
    int64_t n, kvn;
  };
  constexpr G kGroups[] = {{4, 4},  {8, 4},  {12, 4}, {16, 4}, {10, 2},  {7, 1},    {32, 4},
                           {32, 2}, {64, 2}, {64, 1}, {96, 3}, {256, 4}, {256, 256}};
  int idx = 0;
  for (const G& g : kGroups) {
    const Combo combo = kCombos[idx % 2 ? 1 : (idx % 3 == 0 ? 3 : 0)];
    const int64_t d = g.n >= 256 ? 32 : (g.n >= 32 ? 128 : 64);
    IfaCase c = make(kLayouts[idx % 3], combo, g.n, g.kvn, d, {40, 77});
    c.tag = "gqa";
    add(v, c);
    ++idx;
  }
}

// Head dims 16..512 including odd multiples of 16.
void head_dims(std::vector<IfaCase>& v) {
  constexpr int64_t kDims[] = {16, 32, 48, 80, 96, 112, 144, 160, 208, 256, 320, 400, 512};
  int idx = 0;
  for (int64_t d : kDims) {
    IfaCase c = make(kLayouts[idx % 3], kCombos[idx % 8], 4, idx % 2 ? 1 : 2, d, {37, 5});
    c.antiquant = idx % 3 ? QuantMode::kPerChannel : QuantMode::kPerTensor;
    c.antiquant_shape = idx;
    c.out_quant = idx % 2 ? QuantMode::kPerChannel : QuantMode::kPerTensor;
    c.out_quant_shape = idx;
    c.tag = "hd";
    add(v, c);
    ++idx;
  }
  // The largest head dim with every quantisation feature at once.
  IfaCase c = make(IfaLayout::kBnsd, kCombos[6], 8, 2, 512, {70, 129});
  c.out_quant = QuantMode::kPerChannel;
  c.out_quant_shape = 6;
  c.lse = true;
  add(v, c);
}

// KV lengths 0, 1, around vector widths and block sizes, mixed within a batch.
void kv_lengths(std::vector<IfaCase>& v) {
  add(v, make(IfaLayout::kBsh, kCombos[0], 4, 2, 64, {0, 1, 15, 16, 17, 31}));
  add(v, make(IfaLayout::kBsnd, kCombos[1], 4, 1, 128, {32, 33, 63, 64, 65, 0}));
  add(v, make(IfaLayout::kBnsd, kCombos[3], 8, 2, 64, {127, 128, 129, 255, 257}));
  add(v, make(IfaLayout::kBsh, kCombos[6], 4, 4, 80, {2, 3, 7, 8, 9, 0, 1}));
  {
    IfaCase c = make(IfaLayout::kBsh, kCombos[0], 4, 2, 64, {0});
    c.expect_mostly_empty = true;
    c.lse = true;
    add(v, c);
  }
  {
    IfaCase c = make(IfaLayout::kBnsd, kCombos[4], 4, 2, 64, {0, 0});  // int8 out: quant(offset)
    c.out_quant = QuantMode::kPerChannel;
    c.out_quant_shape = 3;
    c.expect_mostly_empty = true;
    add(v, c);
  }
  add(v, make(IfaLayout::kBsnd, kCombos[1], 8, 8, 32, {1}));
  {
    IfaCase c = make(IfaLayout::kBsh, kCombos[0], 4, 2, 64, {50, 50, 50});
    c.broadcast_length = true;
    add(v, c);
  }
  {
    IfaCase c = make(IfaLayout::kBnsd, kCombos[1], 4, 2, 64, {45, 45});
    c.pass_lengths = false;  // len_b = S
    add(v, c);
  }
  {
    // Short sequences in a much longer KV tensor: only the first positions may be read.
    IfaCase c = make(IfaLayout::kBnsd, kCombos[0], 4, 2, 64, {5, 2});
    c.kv_slack = 700;
    add(v, c);
  }
  {
    // Many sequences (more than work items per thread), lengths 0..40.
    TestRng rng(777);
    std::vector<int64_t> lens(40);
    for (int64_t& l : lens) l = rng.below(41);
    IfaCase c = make(IfaLayout::kBsh, kCombos[1], 2, 1, 32, lens);
    c.lse = true;
    add(v, c);
  }
  {
    // Mixed lengths, deterministic pseudo-random, in one batch.
    TestRng rng(12345);
    std::vector<int64_t> lens(8);
    for (int64_t& l : lens) l = rng.below(300);
    lens[3] = 0;
    IfaCase c = make(IfaLayout::kBsnd, kCombos[5], 8, 2, 64, lens);
    c.lse = true;
    add(v, c);
  }
}

void long_sequences(std::vector<IfaCase>& v, bool full) {
  {
    IfaCase c = make(IfaLayout::kBsh, kCombos[1], 4, 1, 64, {8200});
    c.lse = true;
    add(v, c);
  }
  {
    IfaCase c = make(IfaLayout::kBnsd, kCombos[6], 8, 2, 128, {9000, 3000});
    c.paged = true;
    c.block_size = 128;
    c.cache_bnsd = true;
    add(v, c);
  }
  if (!full) return;
  {
    IfaCase c = make(IfaLayout::kBsh, kCombos[6], 32, 8, 128, {4096, 4096, 4096, 4096});
    c.paged = true;
    c.block_size = 128;
    c.antiquant = QuantMode::kPerChannel;
    c.out_quant = QuantMode::kPerChannel;
    add(v, c);
  }
  add(v, make(IfaLayout::kBsnd, kCombos[0], 8, 1, 128, {32768}));
  {
    IfaCase c = make(IfaLayout::kBnsd, kCombos[1], 32, 8, 128, {4096, 1000, 3000, 17});
    c.mask = MaskShape::kB11S;
    c.pse = PseShape::kBroadcast;
    c.lse = true;
    add(v, c);
  }
}

// Every mask dtype and shape; fully masked rows with and without the zeroing extension.
void masks(std::vector<IfaCase>& v) {
  constexpr MaskShape kShapes[] = {MaskShape::kBS,   MaskShape::kB1S,  MaskShape::kB11S,
                                   MaskShape::kBN1S, MaskShape::k1N1S, MaskShape::k111S};
  int idx = 0;
  for (MaskShape s : kShapes) {
    for (int rep = 0; rep < 2; ++rep) {
      IfaCase c = make(kLayouts[idx % 3], kCombos[idx % 2], 4, 2, 64, {30, 65, 17});
      c.mask = s;
      c.mask_dtype = kMaskDtypes[(idx + rep) % 3];
      c.lse = rep == 1;
      add(v, c);
      ++idx;
    }
  }
  struct Full {
    MaskShape shape;
    Combo combo;
    bool zero, lse;
  };
  const Full kFull[] = {
      {MaskShape::kBN1S, kCombos[0], false, false}, {MaskShape::kB11S, kCombos[1], false, true},
      {MaskShape::kBS, kCombos[0], true, true},     {MaskShape::k1N1S, kCombos[5], true, false},
      {MaskShape::k111S, kCombos[3], false, true},  {MaskShape::kB1S, kCombos[4], true, true}};
  for (const Full& f : kFull) {
    IfaCase c = make(kLayouts[idx % 3], f.combo, 4, 2, 64, {30, 65, 17});
    c.mask = f.shape;
    c.mask_dtype = kMaskDtypes[idx % 3];
    c.mask_full_rows = true;
    c.zero_fully_masked = f.zero;
    c.lse = f.lse;
    add(v, c);
    ++idx;
  }
}

void pse_cases(std::vector<IfaCase>& v) {
  {
    IfaCase c = make(IfaLayout::kBsh, kCombos[0], 8, 2, 64, {60, 33, 1});
    c.pse = PseShape::kBatch;
    add(v, c);
  }
  {
    IfaCase c = make(IfaLayout::kBnsd, kCombos[1], 8, 2, 64, {60, 33, 1});
    c.pse = PseShape::kBroadcast;
    c.lse = true;
    add(v, c);
  }
  {
    IfaCase c = make(IfaLayout::kBsnd, kCombos[5], 4, 1, 128, {20, 90});
    c.pse = PseShape::kBatch;
    c.mask = MaskShape::kBN1S;
    c.mask_dtype = DType::kInt8;
    add(v, c);
  }
  {
    IfaCase c = make(IfaLayout::kBsh, kCombos[2], 4, 2, 64, {19, 40});
    c.pse = PseShape::kBroadcast;
    c.mask = MaskShape::kB1S;
    c.out_quant = QuantMode::kPerChannel;
    add(v, c);
  }
}

// Paged KV: both cache layouts, block sizes 16..512, shuffled tables with -1 in unused slots.
void paged(std::vector<IfaCase>& v) {
  constexpr int64_t kBs3d[] = {16, 48, 64, 128, 256, 512};
  int idx = 0;
  for (int64_t bs : kBs3d) {
    IfaCase c =
        make(kLayouts[idx % 3], kCombos[idx % 2], 4, 2, 64, {bs - 1, bs + 1, 2 * bs + 5, 0});
    c.paged = true;
    c.block_size = bs;
    add(v, c);
    ++idx;
  }
  constexpr int64_t kBs4d[] = {16, 32, 128, 512};
  for (int64_t bs : kBs4d) {
    IfaCase c = make(IfaLayout::kBnsd, kCombos[(idx + 1) % 2], 8, 2, 64, {bs, 3 * bs - 2, 1});
    c.paged = true;
    c.cache_bnsd = true;
    c.block_size = bs;
    c.lse = idx % 2 == 0;
    add(v, c);
    ++idx;
  }
  {
    IfaCase c = make(IfaLayout::kBsh, kCombos[3], 4, 1, 128, {100, 31, 64});
    c.paged = true;
    c.block_size = 32;
    c.antiquant = QuantMode::kPerTensor;
    add(v, c);
  }
  {
    IfaCase c = make(IfaLayout::kBnsd, kCombos[6], 8, 4, 64, {200, 64});
    c.paged = true;
    c.cache_bnsd = true;
    c.block_size = 64;
    c.antiquant_shape = 1;
    add(v, c);
  }
  {
    IfaCase c = make(IfaLayout::kBsnd, kCombos[0], 4, 2, 64, {70, 150});
    c.paged = true;
    c.block_size = 32;
    c.mask = MaskShape::kB11S;
    c.pse = PseShape::kBatch;
    c.lse = true;
    add(v, c);
  }
  {
    // kv_padding_size is silently ignored with paged KV (docs/semantics.md §2.7).
    IfaCase c = make(IfaLayout::kBsh, kCombos[1], 4, 2, 64, {70, 20});
    c.paged = true;
    c.block_size = 16;
    c.kv_padding = 5;
    add(v, c);
  }
}

void int8_kv(std::vector<IfaCase>& v) {
  int idx = 0;
  for (int mode = 0; mode < 5; ++mode) {
    for (bool offset : {true, false}) {
      IfaCase c = make(kLayouts[idx % 3], kCombos[idx % 2 ? 3 : 5], 4, 2, 64, {45, 80});
      c.antiquant = mode == 4 ? QuantMode::kPerTensor : QuantMode::kPerChannel;
      c.antiquant_shape = mode;
      c.antiquant_offset = offset;
      add(v, c);
      ++idx;
    }
  }
}

void int8_out(std::vector<IfaCase>& v) {
  for (int mode = 0; mode < 9; ++mode) {
    IfaCase c = make(kLayouts[mode % 3], kCombos[mode % 2 ? 2 : 7], 4, 2, 64, {45, 20});
    c.out_quant = mode == 8 ? QuantMode::kPerTensor : QuantMode::kPerChannel;
    c.out_quant_shape = mode;
    c.out_quant_offset = mode % 3 != 2;
    c.out_quant_bf16 = mode % 4 == 3 || mode == 8;
    add(v, c);
  }
  {
    IfaCase c = make(IfaLayout::kBsh, kCombos[2], 4, 2, 64, {45, 20});
    c.out_quant = QuantMode::kPerTensor;
    c.out_quant_offset = false;
    add(v, c);
  }
}

// KV left padding (V4): pad 0, in range, and start < 0 for some batches.
void left_padding(std::vector<IfaCase>& v) {
  {
    IfaCase c = make(IfaLayout::kBsh, kCombos[0], 4, 2, 64, {20, 40});
    c.kv_padding = 0;
    add(v, c);
  }
  {
    IfaCase c = make(IfaLayout::kBnsd, kCombos[1], 4, 2, 64, {20, 40, 9});
    c.kv_padding = 4;
    c.kv_slack = 6;
    c.pse = PseShape::kBatch;
    c.mask = MaskShape::kB11S;
    c.lse = true;
    add(v, c);
  }
  {
    // S = 43: batch 1 (len 40) starts at 43 - 10 - 40 < 0 -> empty.
    IfaCase c = make(IfaLayout::kBsnd, kCombos[4], 4, 2, 64, {20, 40, 33});
    c.kv_padding = 10;
    c.out_quant = QuantMode::kPerChannel;
    c.lse = true;
    add(v, c);
  }
  {
    IfaCase c = make(IfaLayout::kBsh, kCombos[5], 4, 1, 64, {31, 17});
    c.kv_padding = 2;
    c.pse = PseShape::kBroadcast;
    add(v, c);
  }
}

// Tensor-list KV with differing S per batch.
void list_mode(std::vector<IfaCase>& v) {
  {
    IfaCase c = make(IfaLayout::kBsh, kCombos[0], 4, 2, 64, {20, 70, 5});
    c.list_mode = true;
    add(v, c);
  }
  {
    IfaCase c = make(IfaLayout::kBnsd, kCombos[1], 4, 2, 64, {0, 33, 64, 1});
    c.list_mode = true;
    c.lse = true;
    add(v, c);
  }
  {
    IfaCase c = make(IfaLayout::kBsnd, kCombos[6], 4, 1, 64, {50, 17});
    c.list_mode = true;
    c.mask = MaskShape::kBS;
    add(v, c);
  }
  {
    IfaCase c = make(IfaLayout::kBsh, kCombos[0], 4, 2, 64, {20, 45});
    c.list_mode = true;
    c.pass_lengths = false;  // len_b = S_b of each tensor
    add(v, c);
  }
  {
    IfaCase c = make(IfaLayout::kBsh, kCombos[0], 4, 2, 64, {20, 45});
    c.list_mode = true;
    c.kv_padding = 3;  // silently ignored in list mode (docs/semantics.md §2.7)
    add(v, c);
  }
}

// Non-contiguous, offset views with unaligned bases.
void strided(std::vector<IfaCase>& v) {
  {
    IfaCase c = make(IfaLayout::kBsh, kCombos[0], 8, 2, 64, {33, 70});
    c.mask = MaskShape::kBN1S;
    c.pse = PseShape::kBatch;
    c.strided = true;
    c.lse = true;
    add(v, c);
  }
  {
    IfaCase c = make(IfaLayout::kBnsd, kCombos[1], 4, 2, 80, {100, 1});
    c.paged = true;
    c.cache_bnsd = true;
    c.block_size = 32;
    c.strided = true;
    add(v, c);
  }
  {
    IfaCase c = make(IfaLayout::kBsnd, kCombos[4], 4, 1, 48, {40, 17});
    c.antiquant = QuantMode::kPerChannel;
    c.antiquant_shape = 2;
    c.out_quant = QuantMode::kPerChannel;
    c.out_quant_shape = 4;
    c.strided = true;
    add(v, c);
  }
  {
    IfaCase c = make(IfaLayout::kBsh, kCombos[5], 4, 2, 64, {20, 41});
    c.list_mode = true;
    c.mask = MaskShape::k1N1S;
    c.strided = true;
    add(v, c);
  }
  {
    IfaCase c = make(IfaLayout::kBsh, kCombos[1], 4, 2, 64, {30, 50});
    c.paged = true;
    c.block_size = 16;
    c.kv_padding = 0;
    c.strided = true;
    add(v, c);
  }
  {
    IfaCase c = make(IfaLayout::kBnsd, kCombos[0], 4, 2, 64, {30, 50});
    c.kv_padding = 6;
    c.strided = true;
    c.pse = PseShape::kBroadcast;
    add(v, c);
  }
}

// Softmax far from uniform: large logits (near one-hot) and large values.
void magnitudes(std::vector<IfaCase>& v) {
  {
    IfaCase c = make(IfaLayout::kBsh, kCombos[0], 4, 2, 128, {300, 77});
    c.logit_scale = 12;
    c.lse = true;
    add(v, c);
  }
  {
    IfaCase c = make(IfaLayout::kBnsd, kCombos[1], 4, 2, 128, {300, 77});
    c.logit_scale = 40;
    c.lse = true;
    add(v, c);
  }
  {
    IfaCase c = make(IfaLayout::kBsnd, kCombos[0], 4, 2, 64, {120, 33});
    c.value_scale = 300;
    add(v, c);
  }
  {
    IfaCase c = make(IfaLayout::kBsh, kCombos[3], 4, 2, 64, {120, 33});
    c.logit_scale = 8;
    c.antiquant = QuantMode::kPerTensor;
    add(v, c);
  }
}

// Full tier: a pseudo-random sweep over every feature.
void random_sweep(std::vector<IfaCase>& v, int count) {
  TestRng rng(0x1fa5eed);
  for (int i = 0; i < count; ++i) {
    const Combo combo = kCombos[rng.below(8)];
    const int64_t kvn = 1 + rng.below(4);
    const int64_t g = int64_t{1} << rng.below(5);
    const int64_t d = 16 * (1 + rng.below(16));
    const int64_t b = 1 + rng.below(5);
    std::vector<int64_t> lens(b);
    for (int64_t& l : lens) l = rng.below(700);
    IfaCase c = make(kLayouts[rng.below(3)], combo, kvn * g, kvn, d, lens);
    c.mask = static_cast<MaskShape>(rng.below(7));
    c.mask_dtype = kMaskDtypes[rng.below(3)];
    c.mask_full_rows = rng.below(4) == 0;
    c.pse = static_cast<PseShape>(rng.below(3));
    const int kv_mode = static_cast<int>(rng.below(3));  // 0 contiguous, 1 list, 2 paged
    c.list_mode = kv_mode == 1;
    c.paged = kv_mode == 2;
    c.cache_bnsd = c.paged && rng.below(2) == 0;
    c.block_size = (combo.kv == kI8 ? 32 : 16) * (1 + rng.below(combo.kv == kI8 ? 8 : 16));
    c.antiquant = rng.below(2) ? QuantMode::kPerTensor : QuantMode::kPerChannel;
    c.antiquant_shape = static_cast<int>(rng.below(4));
    c.out_quant = rng.below(2) ? QuantMode::kPerTensor : QuantMode::kPerChannel;
    c.out_quant_shape = static_cast<int>(rng.below(8));
    c.out_quant_bf16 = rng.below(2) == 0;
    if (kv_mode == 0 && rng.below(3) == 0) c.kv_padding = rng.below(20);
    c.strided = rng.below(4) == 0;
    c.lse = rng.below(2) == 0;
    c.zero_fully_masked = rng.below(3) == 0;
    if (combo.kv != kI8) c.antiquant = QuantMode::kNone;
    if (combo.out != kI8) c.out_quant = QuantMode::kNone;
    c.tag = "r" + std::to_string(i);
    // A sweep case may legitimately come out (almost) all empty or fully masked.
    c.expect_mostly_empty = true;
    add(v, c);
  }
}

}  // namespace

std::vector<IfaCase> ifa_cases(Tier tier) {
  std::vector<IfaCase> all;
  dtype_layout_matrix(all);
  fp32_output(all);
  gqa_groups(all);
  head_dims(all);
  kv_lengths(all);
  long_sequences(all, tier == Tier::kFull);
  masks(all);
  pse_cases(all);
  paged(all);
  int8_kv(all);
  int8_out(all);
  left_padding(all);
  list_mode(all);
  strided(all);
  magnitudes(all);
  if (tier == Tier::kFull) random_sweep(all, 60);
  if (tier != Tier::kSmoke) return all;
  // Smoke: every 8th case of the ci list (it still touches every group), capped in size.
  std::vector<IfaCase> smoke;
  for (size_t i = 0; i < all.size(); i += 8) {
    if (all[i].work() <= (int64_t{1} << 20)) smoke.push_back(all[i]);
  }
  return smoke;
}

}  // namespace kvflash::testing
