#include "support/fia_cases.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <sstream>

#include "element_access.hpp"
#include "support/compare.hpp"
#include "support/elements.hpp"
#include "support/test_rng.hpp"

namespace kvflash::testing {
namespace {

using reference::element_at;
using reference::load_element;
using reference::store_element;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int64_t kMaxTok = reference::kFiaTokensMax;
// Work cap (FiaCase::work) under sanitizers, which slow the reference ~20x.
constexpr int64_t kSanitizerWorkCap = int64_t{1} << 23;

const char* dt(DType t) {
  switch (t) {
    case DType::kFloat16:
      return "f16";
    case DType::kBFloat16:
      return "bf16";
    case DType::kInt8:
      return "i8";
    case DType::kFloat32:
      return "f32";
    default:
      return "?";
  }
}

const char* in_name(FiaLayout l) {
  switch (l) {
    case FiaLayout::kBsh:
      return "BSH";
    case FiaLayout::kBsnd:
      return "BSND";
    case FiaLayout::kBnsd:
      return "BNSD";
    case FiaLayout::kTnd:
      return "TND";
    case FiaLayout::kNtd:
      return "NTD";
  }
  return "?";
}

std::string tok(int64_t t) { return t == kMaxTok ? std::string("max") : std::to_string(t); }

std::string join(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "." : "") + std::to_string(v[i]);
  return s;
}

}  // namespace

int64_t FiaCase::max_q() const { return *std::max_element(q_lens.begin(), q_lens.end()); }
int64_t FiaCase::max_kv() const { return *std::max_element(kv_lens.begin(), kv_lens.end()); }

std::string FiaCase::input_layout() const {
  std::string s = in_name(layout);
  switch (out) {
    case FiaOut::kSame:
      return s;
    case FiaOut::kBsnd:
      return s + "_BSND";
    case FiaOut::kNbsd:
      return s + "_NBSD";
    case FiaOut::kNtd:
      return s + "_NTD";
    case FiaOut::kTnd:
      return s + "_TND";
  }
  return s;
}

std::string FiaCase::name() const {
  std::ostringstream o;
  o << (prompt ? "pfa" : "fia") << "_" << input_layout() << "_" << dt(q_dtype) << dt(kv_dtype)
    << dt(out_dtype) << "_n" << num_heads << "g" << num_heads / num_kv_heads << "_d" << head_dim;
  if (value_dim) o << "v" << value_dim;
  if (rope_dim) o << "r" << rope_dim;
  if (value_is_key) o << "vk";
  o << "_q" << join(q_lens) << "_kv" << join(kv_lens) << "_m" << sparse_mode;
  if (pre_tokens != kMaxTok || next_tokens != kMaxTok)
    o << "p" << tok(pre_tokens) << "n" << tok(next_tokens);
  const char* masks[] = {"", "_mask2", "_mask3", "_mask4", "_cmask", "_maskbs"};
  o << masks[static_cast<int>(mask)];
  if (mask == FiaMask::kCompressed && compressed_rank != 2) o << compressed_rank;
  if (mask_full_rows) o << "full";
  if (pse) o << "_pse";
  if (paged) o << "_pa" << (cache_bnsd ? "nbsd" : "bsh") << block_size;
  const char* aq[] = {"", "_aqc", "_aqt", "_aqtok", "_aqsc", "_aqstok"};
  o << aq[static_cast<int>(antiquant)];
  if (out_quant != FiaOutQuant::kNone)
    o << (out_quant == FiaOutQuant::kPerTensor ? "_oqt" : "_oqc");
  if (q_padding >= 0) o << "_qpad" << q_padding;
  if (kv_padding >= 0) o << "_kvpad" << kv_padding;
  if (prefix_len) o << "_pre" << prefix_len;
  if (list_mode) o << "_list";
  if (lse) o << "_lse";
  if (sink) o << "_sink";
  if (!pass_q_lens) o << "_noql";
  if (!pass_kv_lens) o << "_nokvl";
  if (q_slack) o << "_qs" << q_slack;
  if (!tag.empty()) o << "_" << tag;
  return o.str();
}

std::string FiaCase::test_name() const {
  std::string s = name();
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

int64_t FiaCase::work() const {
  int64_t w = 0;
  for (int64_t b = 0; b < batch(); ++b)
    w += num_heads * std::max<int64_t>(q_lens[b], 1) * (kv_lens[b] + prefix_len + 1) *
         (head_dim + rope_dim + dv());
  return w;
}

// ---- the case list
// -------------------------------------------------------------------------------

std::vector<FiaCase> fia_cases(Tier tier) {
  std::vector<FiaCase> cs;
  auto add = [&](FiaCase c) { cs.push_back(std::move(c)); };

  // 1. Every sparse mode at its edges: pre/next 0, negative, larger than the lengths; S1 < S2,
  //    S1 = S2, S1 > S2 (mode 3's top rows see nothing); B/S and TND layouts.
  const std::pair<int64_t, int64_t> bands[] = {
      {kMaxTok, kMaxTok}, {0, 0}, {3, 0}, {0, 3}, {-2, 5}, {5, -2}, {1000, 1000}, {2, 2}};
  const std::pair<std::vector<int64_t>, std::vector<int64_t>> lens[] = {
      {{7}, {7}}, {{5, 9}, {13, 4}}, {{1, 6, 11}, {9, 1, 20}}};
  for (int64_t mode = 0; mode <= 4; ++mode) {
    for (const auto& [pre, next] : bands) {
      if (mode == 4 && pre < 0 && next < 0) continue;
      for (const auto& [ql, kl] : lens) {
        for (FiaLayout lay : {FiaLayout::kBsnd, FiaLayout::kTnd}) {
          FiaCase c;
          c.layout = lay;
          c.num_heads = 4;
          c.num_kv_heads = 2;
          c.head_dim = 64;
          c.q_lens = ql;
          c.kv_lens = kl;
          c.sparse_mode = mode;
          c.pre_tokens = pre;
          c.next_tokens = next;
          c.mask = mode >= 2 ? FiaMask::kCompressed : FiaMask::kNone;
          c.q_dtype = c.kv_dtype = c.out_dtype = (pre & 1) ? DType::kBFloat16 : DType::kFloat16;
          if (mode == 0 && (pre != kMaxTok || next != kMaxTok)) c.mask = FiaMask::kFull3;
          if (mode == 1) c.mask = lay == FiaLayout::kTnd ? FiaMask::kFull2 : FiaMask::kFull4;
          if ((mode == 1 || mode == 2) && pre != kMaxTok && pre != 0) continue;  // pre/next unused
          if (lay == FiaLayout::kTnd) c.q_slack = 2;
          if (lay != FiaLayout::kTnd && ql.size() > 1) c.q_slack = 1;
          c.lse = (mode + pre) % 2 == 0;
          // A band of at most 3 keys under a random 30% mask leaves many rows empty.
          c.expect_mostly_empty = mode == 0 && c.mask != FiaMask::kNone &&
                                  static_cast<double>(pre) + static_cast<double>(next) <= 4;
          add(c);
        }
      }
    }
  }
  // Mode 0 without a mask ignores pre/next (D3): negative ones must not hide anything.
  {
    FiaCase c;
    c.num_heads = 2, c.num_kv_heads = 2, c.q_lens = {6}, c.kv_lens = {9};
    c.pre_tokens = -3, c.next_tokens = -3;
    c.tag = "nomask_band_ignored";
    add(c);
  }

  // Long decode rows in mixed batches: the kernel's split-KV path (a batch of <= 16 score rows
  // that sees more than 8 key tiles runs as chunks of 512 positions, merged). TND mode 3 with a
  // sink and LSE (prefill branch), and BSND with S1 = 1 (the decode branch) with a mask.
  {
    FiaCase c;
    c.layout = FiaLayout::kTnd;
    c.q_dtype = c.kv_dtype = c.out_dtype = DType::kBFloat16;
    c.num_heads = 8, c.num_kv_heads = 2, c.head_dim = 64;
    c.q_lens = {1, 9, 2}, c.kv_lens = {1100, 20, 700};
    c.sparse_mode = 3, c.mask = FiaMask::kCompressed;
    c.lse = true, c.sink = true;
    c.tag = "split_kv_long_rows";
    add(c);
  }
  {
    FiaCase c;
    c.q_dtype = c.kv_dtype = c.out_dtype = DType::kFloat16;
    c.num_heads = 4, c.num_kv_heads = 1, c.head_dim = 64;
    c.q_lens = {1, 1}, c.kv_lens = {1300, 40};
    c.mask = FiaMask::kIfaBS, c.lse = true;
    c.tag = "split_kv_decode_branch";
    add(c);
  }

  // 2. vllm-ascend: mixed decode + prefill TND, paged BnBsH, mode 3 (and sinks through v2, mode 4
  //    sliding window), cumulative query lengths, per-request KV lengths.
  for (int64_t bs : {16, 128}) {
    for (int mode : {3, 4}) {
      FiaCase c;
      c.layout = FiaLayout::kTnd;
      c.q_dtype = c.kv_dtype = c.out_dtype = DType::kBFloat16;
      c.num_heads = 8, c.num_kv_heads = 2, c.head_dim = 128;
      c.q_lens = {1, 1, 5, 1, 17};
      c.kv_lens = {9, 1, 20, 140, 17};
      c.paged = true, c.block_size = bs;
      c.sparse_mode = mode;
      c.mask = FiaMask::kCompressed;
      if (mode == 4) c.pre_tokens = 7, c.next_tokens = 0;
      c.q_slack = 3;  // graph padding: rows past the last cumulative length
      add(c);
      c.sink = true;
      c.lse = true;
      add(c);
    }
  }
  // Decode-only TND (S1_b = 1 everywhere, mode 3 = all keys) and a batch with kv length 0.
  {
    FiaCase c;
    c.layout = FiaLayout::kTnd;
    c.num_heads = 8, c.num_kv_heads = 1, c.head_dim = 128;
    c.q_lens = {1, 1, 1, 1};
    c.kv_lens = {33, 0, 1, 70};
    c.paged = true, c.block_size = 16, c.sparse_mode = 3, c.mask = FiaMask::kCompressed;
    c.lse = true;
    add(c);
  }
  // PrefillNoCache: non-paged TND with cumulative KV lengths equal to the query's.
  {
    FiaCase c;
    c.layout = FiaLayout::kTnd;
    c.q_dtype = c.kv_dtype = c.out_dtype = DType::kBFloat16;
    c.num_heads = 4, c.num_kv_heads = 4, c.head_dim = 128;
    c.q_lens = {13, 30, 2};
    c.kv_lens = {13, 30, 2};
    c.sparse_mode = 3, c.mask = FiaMask::kCompressed;
    add(c);
  }

  // 3. Dims and MLA: 64, 128, 192 (+64 rope, V 128), 128+64 with LSE (MLA prefill), 512+64
  //    absorbed decode (KV_N = 1, value = key), BNSD_NBSD and TND_NTD with a BnNBsD cache.
  for (int64_t d : {64, 128}) {
    FiaCase c;
    c.layout = FiaLayout::kBsh;
    c.num_heads = 4, c.num_kv_heads = 1, c.head_dim = d;
    c.q_lens = {9, 3}, c.kv_lens = {9, 15};
    c.sparse_mode = 3, c.mask = FiaMask::kCompressed;
    add(c);
  }
  for (int64_t d : {128, 192}) {
    FiaCase c;
    c.layout = FiaLayout::kTnd;
    c.q_dtype = c.kv_dtype = c.out_dtype = DType::kBFloat16;
    c.num_heads = 4, c.num_kv_heads = 4, c.head_dim = d, c.value_dim = 128, c.rope_dim = 64;
    c.q_lens = {10, 4}, c.kv_lens = {10, 4};
    c.sparse_mode = 3, c.mask = FiaMask::kCompressed, c.lse = true;
    add(c);
  }
  {
    FiaCase c;  // 192 qk / 128 v without rope (TND table)
    c.layout = FiaLayout::kTnd;
    c.num_heads = 2, c.num_kv_heads = 2, c.head_dim = 192, c.value_dim = 128;
    c.q_lens = {6}, c.kv_lens = {6};
    c.sparse_mode = 3, c.mask = FiaMask::kCompressed;
    add(c);
  }
  {
    // bf16 prefill with whole visible key tiles (no mask) and V of 80: the CPU kernel's bf16 P·V
    // on full tiles (fia_pv_bf16_tile) with its 16-wide column tail and a 6-row block remainder.
    FiaCase c;
    c.layout = FiaLayout::kTnd;
    c.q_dtype = c.kv_dtype = c.out_dtype = DType::kBFloat16;
    c.num_heads = 4, c.num_kv_heads = 2, c.head_dim = 64, c.value_dim = 80;
    c.q_lens = {70, 9}, c.kv_lens = {200, 140};
    c.sparse_mode = 0;
    c.tag = "full_tiles_v80";
    add(c);
  }
  for (FiaLayout lay : {FiaLayout::kBnsd, FiaLayout::kTnd}) {
    FiaCase c;  // absorbed MLA decode: 512 + 64, KV_N = 1, paged BnNBsD
    c.layout = lay;
    c.out = lay == FiaLayout::kBnsd ? FiaOut::kNbsd : FiaOut::kNtd;
    c.q_dtype = c.kv_dtype = c.out_dtype = DType::kBFloat16;
    c.num_heads = 8, c.num_kv_heads = 1, c.head_dim = 512, c.rope_dim = 64, c.value_is_key = true;
    c.q_lens = lay == FiaLayout::kBnsd ? std::vector<int64_t>{1, 1} : std::vector<int64_t>{2, 1};
    c.kv_lens = {40, 7};
    c.paged = true, c.cache_bnsd = true, c.block_size = 16;
    c.sparse_mode = lay == FiaLayout::kTnd ? 3 : 0;
    c.mask = lay == FiaLayout::kTnd ? FiaMask::kCompressed : FiaMask::kNone;
    c.pass_q_lens = lay == FiaLayout::kTnd;
    add(c);
  }

  // 4. Layouts and output layouts, GQA, paged caches, lists.
  struct LayoutVariant {
    FiaLayout in;
    FiaOut out;
  };
  for (LayoutVariant lv : {LayoutVariant{FiaLayout::kBsh, FiaOut::kSame},
                           {FiaLayout::kBnsd, FiaOut::kSame},
                           {FiaLayout::kBnsd, FiaOut::kBsnd},
                           {FiaLayout::kBsh, FiaOut::kNbsd},
                           {FiaLayout::kBsnd, FiaOut::kNbsd},
                           {FiaLayout::kBnsd, FiaOut::kNbsd},
                           {FiaLayout::kTnd, FiaOut::kNtd},
                           {FiaLayout::kNtd, FiaOut::kSame},
                           {FiaLayout::kNtd, FiaOut::kTnd}}) {
    FiaCase c;
    c.layout = lv.in, c.out = lv.out;
    c.num_heads = 6, c.num_kv_heads = 2, c.head_dim = 64;
    c.q_lens = {4, 8}, c.kv_lens = {12, 8};
    c.sparse_mode = 3, c.mask = FiaMask::kCompressed, c.lse = true;
    if (!c.tnd()) c.q_slack = 1;
    add(c);
  }
  for (bool bnsd_cache : {false, true}) {
    for (FiaLayout lay : {FiaLayout::kBnsd, FiaLayout::kTnd, FiaLayout::kBsh}) {
      if (bnsd_cache && lay == FiaLayout::kBsh) continue;  // BSH/BSND queries: BnBsH only
      FiaCase c;
      c.layout = lay;
      c.num_heads = 4, c.num_kv_heads = 2, c.head_dim = 128;
      c.q_lens = {5, 3}, c.kv_lens = {37, 3};
      c.paged = true, c.cache_bnsd = bnsd_cache, c.block_size = 16;
      c.sparse_mode = 3, c.mask = FiaMask::kCompressed;
      add(c);
    }
  }
  {
    FiaCase c;  // tensor list of B tensors with different S
    c.layout = FiaLayout::kBsnd;
    c.num_heads = 4, c.num_kv_heads = 4;
    c.q_lens = {4, 4, 4}, c.kv_lens = {6, 11, 3};
    c.list_mode = true, c.sparse_mode = 3, c.mask = FiaMask::kCompressed;
    add(c);
  }

  // 5. Masks, pse, left padding, shared prefix, fully masked rows.
  for (FiaMask m : {FiaMask::kFull2, FiaMask::kFull3, FiaMask::kFull4}) {
    FiaCase c;
    c.layout = FiaLayout::kBsnd;
    c.num_heads = 2, c.num_kv_heads = 1;
    c.q_lens = {6, 5}, c.kv_lens = {10, 7};
    c.sparse_mode = 1, c.mask = m, c.mask_full_rows = true, c.lse = true;
    add(c);
  }
  {
    FiaCase c;
    c.layout = FiaLayout::kBnsd;
    c.num_heads = 4, c.num_kv_heads = 2;
    c.q_lens = {6, 5}, c.kv_lens = {10, 7};
    c.pse = true, c.sparse_mode = 3, c.mask = FiaMask::kCompressed;
    add(c);
    c.q_dtype = c.kv_dtype = c.out_dtype = DType::kBFloat16;
    c.sparse_mode = 0, c.mask = FiaMask::kFull3, c.pre_tokens = 4, c.next_tokens = 1;
    add(c);
  }
  for (FiaLayout lay : {FiaLayout::kBsh, FiaLayout::kBnsd}) {
    FiaCase c;  // query and KV left padding
    c.layout = lay;
    c.num_heads = 2, c.num_kv_heads = 2;
    c.q_lens = {5, 2}, c.kv_lens = {9, 4};
    c.q_padding = 2, c.kv_padding = 3;
    c.sparse_mode = lay == FiaLayout::kBsh ? 3 : 0;
    c.mask = lay == FiaLayout::kBsh ? FiaMask::kCompressed : FiaMask::kFull3;
    c.lse = true;
    add(c);
  }
  for (int mode : {0, 3}) {
    FiaCase c;  // shared prefix (the prefix counts in S2_b)
    c.layout = FiaLayout::kBsh;
    c.num_heads = 4, c.num_kv_heads = 2;
    c.q_lens = {3, 6}, c.kv_lens = {5, 2};
    c.prefix_len = 4;
    c.sparse_mode = mode, c.mask = mode == 3 ? FiaMask::kCompressed : FiaMask::kNone;
    add(c);
  }
  {
    FiaCase c;  // mode 3 with S1 > S2 everywhere + zero-length KV: mostly empty rows
    c.layout = FiaLayout::kBsnd;
    c.num_heads = 2, c.num_kv_heads = 2;
    c.q_lens = {9, 4}, c.kv_lens = {3, 0};
    c.sparse_mode = 3, c.mask = FiaMask::kCompressed, c.lse = true;
    c.tag = "empty_top_rows";
    c.expect_mostly_empty = true;
    add(c);
  }

  // 6. int8 KV antiquant (combined and split, per-channel / per-tensor / per-token), int8 output.
  for (FiaAntiquant aq :
       {FiaAntiquant::kCombinedChannel, FiaAntiquant::kCombinedTensor, FiaAntiquant::kCombinedToken,
        FiaAntiquant::kSplitChannel, FiaAntiquant::kSplitToken}) {
    FiaCase c;
    c.layout = FiaLayout::kBsnd;
    c.kv_dtype = DType::kInt8;
    c.num_heads = 4, c.num_kv_heads = 2;
    c.q_lens = {5, 1}, c.kv_lens = {8, 11};
    c.antiquant = aq, c.sparse_mode = 3, c.mask = FiaMask::kCompressed;
    add(c);
  }
  for (FiaOutQuant oq : {FiaOutQuant::kPerTensor, FiaOutQuant::kPerChannel}) {
    FiaCase c;
    c.layout = FiaLayout::kBsh;
    c.q_dtype = c.kv_dtype = oq == FiaOutQuant::kPerTensor ? DType::kFloat16 : DType::kBFloat16;
    c.out_dtype = DType::kInt8;
    c.num_heads = 2, c.num_kv_heads = 1;
    c.q_lens = {6}, c.kv_lens = {6};
    c.out_quant = oq, c.sparse_mode = 2, c.mask = FiaMask::kCompressed;
    add(c);
  }

  // 7. The decode branch (D4): Q_S = 1 in BSH/BSND/BNSD ignores sparse_mode / pre / next; masks
  //    have IFA's shapes. Also PFA with Q_S = 1, which applies its mode.
  for (FiaLayout lay : {FiaLayout::kBsh, FiaLayout::kBsnd, FiaLayout::kBnsd}) {
    FiaCase c;
    c.layout = lay;
    c.num_heads = 8, c.num_kv_heads = 2, c.head_dim = 128;
    c.q_lens = {1, 1, 1}, c.kv_lens = {17, 1, 40};
    c.pass_q_lens = false;
    c.sparse_mode = 4, c.mask = FiaMask::kCompressed, c.pre_tokens = 2, c.next_tokens = -1;
    c.lse = true;
    add(c);
    c.sparse_mode = 0, c.mask = FiaMask::kIfaBS, c.pre_tokens = kMaxTok, c.next_tokens = kMaxTok;
    c.mask_full_rows = true;
    add(c);
  }
  {
    FiaCase c;  // decode with int8 KV, KV left padding, pse
    c.layout = FiaLayout::kBnsd;
    c.kv_dtype = DType::kInt8;
    c.num_heads = 4, c.num_kv_heads = 2;
    c.q_lens = {1, 1}, c.kv_lens = {12, 5};
    c.pass_q_lens = false;
    c.antiquant = FiaAntiquant::kCombinedChannel, c.kv_padding = 2, c.pse = true;
    add(c);
    FiaCase p = c;  // paged decode with post-quant
    p.kv_dtype = DType::kFloat16, p.antiquant = FiaAntiquant::kNone, p.kv_padding = -1;
    p.pse = false, p.paged = true, p.block_size = 16, p.out_dtype = DType::kInt8;
    p.out_quant = FiaOutQuant::kPerChannel;
    add(p);
  }
  {
    FiaCase c;  // PFA with Q_S = 1: mode 4 applies (no decode branch)
    c.prompt = true;
    c.layout = FiaLayout::kBsnd;
    c.num_heads = 2, c.num_kv_heads = 2;
    c.q_lens = {1, 1}, c.kv_lens = {10, 6};
    c.sparse_mode = 4, c.mask = FiaMask::kCompressed, c.pre_tokens = 3, c.next_tokens = 0;
    add(c);
    c.q_lens = {7, 4}, c.sparse_mode = 0, c.mask = FiaMask::kFull3, c.pre_tokens = kMaxTok;
    c.next_tokens = 0;  // PFA's default next_tokens with a mask
    c.tag = "pfa_default_next";
    add(c);
  }

  // 7b. Decode calls on IFA's kernels beyond IFA's own arguments
  // (src/ops/fia/fia_validate_decode.cpp):
  //     other output layouts, LSE (empty rows +inf), learnable sink, split / per-tensor /
  //     per-token int8 parameters, and vllm-ascend's TND decode step over a paged cache in modes
  //     0 / 2 / 3 / 4 (mode 4: a sliding window) with a sink. A shared prefix stays on the
  //     split-KV path (tests/fia_route_test.cpp asserts which route each case takes).
  for (LayoutVariant lv : {LayoutVariant{FiaLayout::kBnsd, FiaOut::kNbsd},
                           {FiaLayout::kBnsd, FiaOut::kBsnd},
                           {FiaLayout::kBsh, FiaOut::kNbsd},
                           {FiaLayout::kBsnd, FiaOut::kNbsd}}) {
    FiaCase c;
    c.layout = lv.in, c.out = lv.out;
    c.q_dtype = c.kv_dtype = c.out_dtype = DType::kBFloat16;
    c.num_heads = 8, c.num_kv_heads = 2, c.head_dim = 128;
    c.q_lens = {1, 1, 1}, c.kv_lens = {700, 0, 33};
    c.pass_q_lens = false;
    c.paged = lv.in == FiaLayout::kBnsd, c.block_size = 16;
    c.lse = true, c.sink = lv.in != FiaLayout::kBsh;
    c.tag = "decode_out_layout";
    add(c);
  }
  {
    FiaCase c;  // decode with a sink, LSE and a fully masked row (IFA's (B, S) mask)
    c.layout = FiaLayout::kBsnd;
    c.num_heads = 4, c.num_kv_heads = 4, c.head_dim = 64;
    c.q_lens = {1, 1}, c.kv_lens = {1100, 9};
    c.pass_q_lens = false;
    c.mask = FiaMask::kIfaBS, c.mask_full_rows = true;
    c.sink = true, c.lse = true;
    c.tag = "decode_sink";
    add(c);
  }
  for (FiaAntiquant aq :
       {FiaAntiquant::kSplitChannel, FiaAntiquant::kCombinedTensor, FiaAntiquant::kCombinedChannel,
        FiaAntiquant::kSplitToken, FiaAntiquant::kCombinedToken}) {
    FiaCase c;  // int8 KV decode (vllm-ascend's C8: BNSD, split per-channel, inner_precise 1)
    c.layout = FiaLayout::kBnsd;
    c.q_dtype = c.out_dtype = DType::kBFloat16, c.kv_dtype = DType::kInt8;
    c.num_heads = 8, c.num_kv_heads = 2, c.head_dim = 128;
    c.q_lens = {1, 1}, c.kv_lens = {600, 17};
    c.pass_q_lens = false;
    c.antiquant = aq, c.lse = true;
    c.paged = aq == FiaAntiquant::kSplitChannel, c.block_size = 32;
    if (aq == FiaAntiquant::kSplitToken) c.kv_padding = 5;  // per-token rows follow the padding
    c.tag = "decode_int8";
    add(c);
    if (aq == FiaAntiquant::kSplitChannel) {
      c.block_size = 16;  // IFA's validator refuses an int8 block of 16: the split-KV path
      add(c);
    }
  }
  for (int mode : {0, 2, 3, 4}) {
    FiaCase c;  // vllm-ascend's TND decode step: one row per request, paged BnBsH
    c.layout = FiaLayout::kTnd;
    c.q_dtype = c.kv_dtype = c.out_dtype = DType::kBFloat16;
    c.num_heads = 8, c.num_kv_heads = 2, c.head_dim = 128;
    c.q_lens = {1, 1, 1, 1}, c.kv_lens = {9, 0, 600, 140};
    c.paged = true, c.block_size = 16;
    c.sparse_mode = mode;
    c.mask = mode == 0 ? FiaMask::kNone : FiaMask::kCompressed;
    if (mode == 4) c.pre_tokens = 100, c.next_tokens = 0;
    c.sink = mode >= 3, c.lse = true;
    c.tag = "tnd_decode";
    add(c);
    if (mode == 3) {
      c.q_slack = 3;  // graph padding: rows past the last cumulative length
      add(c);
    }
  }
  {
    FiaCase c;  // NTD_TND decode, BnNBsD cache, fp16
    c.layout = FiaLayout::kNtd, c.out = FiaOut::kTnd;
    c.num_heads = 4, c.num_kv_heads = 1, c.head_dim = 64;
    c.q_lens = {1, 1}, c.kv_lens = {70, 5};
    c.paged = true, c.cache_bnsd = true, c.block_size = 16;
    c.sparse_mode = 3, c.mask = FiaMask::kCompressed, c.lse = true;
    c.tag = "tnd_decode";
    add(c);
  }
  {
    FiaCase c;  // decode with a shared prefix: the split-KV path
    c.layout = FiaLayout::kBsh;
    c.num_heads = 4, c.num_kv_heads = 2;
    c.q_lens = {1, 1}, c.kv_lens = {5, 30};
    c.pass_q_lens = false;
    c.prefix_len = 6, c.lse = true;
    c.tag = "decode_prefix";
    add(c);
  }

  // 7b. The mask rules of the FIA documents (docs/fia-semantics.md): modes 2-4 take the compressed
  //     mask as (2048, 2048), (1, 2048, 2048) or (1, 1, 2048, 2048) (D3), FIA and PFA; the decode
  //     branch (D4) ignores sparse_mode / pre / next and needs no mask, and a compressed mask
  //     passed there is not read either; PFA with a query length of 1 applies its mode.
  for (int rank : {3, 4}) {
    for (int64_t mode : {2, 3, 4}) {
      FiaCase c;
      c.layout = mode == 3 ? FiaLayout::kBnsd : FiaLayout::kBsnd;
      c.prompt = mode == 2 && rank == 4;
      c.num_heads = 4, c.num_kv_heads = 2;
      c.q_lens = {6, 3}, c.kv_lens = {6, 9};
      c.sparse_mode = mode, c.mask = FiaMask::kCompressed, c.compressed_rank = rank;
      if (mode == 4) c.pre_tokens = 2, c.next_tokens = 1;
      c.lse = !c.prompt;
      add(c);
    }
    FiaCase c;  // vllm-ascend's chunked prefill with the 4-D / 3-D mask torch_npu accepts
    c.layout = FiaLayout::kTnd;
    c.q_dtype = c.kv_dtype = c.out_dtype = DType::kBFloat16;
    c.num_heads = 4, c.num_kv_heads = 1, c.head_dim = 128;
    c.q_lens = {1, 4, 1}, c.kv_lens = {20, 9, 33};
    c.paged = true, c.block_size = 16;
    c.sparse_mode = 3, c.mask = FiaMask::kCompressed, c.compressed_rank = rank;
    add(c);
  }
  {
    struct Decode {
      FiaLayout layout;
      int64_t mode, pre, next;
      FiaMask mask;
      int rank;
      bool paged;
    };
    const Decode decodes[] = {
        {FiaLayout::kBsnd, 3, kMaxTok, kMaxTok, FiaMask::kNone, 2, true},  // vllm-ascend's decode
        {FiaLayout::kBnsd, 4, 0, 0, FiaMask::kNone, 2, false},  // a prefill band would be 1 key
        {FiaLayout::kBsh, 4, -5, 2, FiaMask::kCompressed, 3, false},  // pre + next < 0: ignored
        {FiaLayout::kBsh, 2, kMaxTok, kMaxTok, FiaMask::kCompressed, 4, false},
        {FiaLayout::kBsnd, 1, kMaxTok, kMaxTok, FiaMask::kNone, 2, false},
        {FiaLayout::kBnsd, 1, kMaxTok, kMaxTok, FiaMask::kIfaBS, 2, false},  // IFA's (B, S) mask
    };
    for (const Decode& d : decodes) {
      FiaCase c;
      c.layout = d.layout;
      c.num_heads = 8, c.num_kv_heads = 2;
      c.q_lens = {1, 1, 1}, c.kv_lens = {12, 1, 40};
      c.sparse_mode = d.mode, c.pre_tokens = d.pre, c.next_tokens = d.next;
      c.mask = d.mask, c.compressed_rank = d.rank;
      c.paged = d.paged;
      c.lse = true;
      c.tag = "decode_branch";
      add(c);
    }
    FiaCase c;  // PFA has no decode branch: mode 2 with S1 = 1 sees key 0 only
    c.prompt = true;
    c.layout = FiaLayout::kBsnd;
    c.num_heads = 4, c.num_kv_heads = 4;
    c.q_lens = {1, 1}, c.kv_lens = {9, 5};
    c.sparse_mode = 2, c.mask = FiaMask::kCompressed, c.compressed_rank = 3;
    add(c);
  }

  // 8. Larger shapes for the ci and full tiers: several key and query tiles per batch.
  if (tier != Tier::kSmoke) {
    for (int mode : {0, 3, 4}) {
      FiaCase c;
      c.layout = FiaLayout::kTnd;
      c.q_dtype = c.kv_dtype = c.out_dtype = DType::kBFloat16;
      c.num_heads = 4, c.num_kv_heads = 1, c.head_dim = 128;
      c.q_lens = {150, 1, 70};
      c.kv_lens = {150, 300, 200};
      c.paged = true, c.block_size = 128;
      c.sparse_mode = mode;
      c.mask = mode == 0 ? FiaMask::kNone : FiaMask::kCompressed;
      if (mode == 4) c.pre_tokens = 40, c.next_tokens = 5;
      c.lse = true;
      add(c);
    }
  }
  if (tier != Tier::kSmoke) {
    // A band wide enough that some key tiles are whole for every row of a query tile while the
    // tiles at both edges are cut (the kernel's whole-tile path against its per-row path).
    FiaCase c;
    c.layout = FiaLayout::kBsnd;
    c.num_heads = 4, c.num_kv_heads = 2, c.head_dim = 64;
    c.q_lens = {300, 260}, c.kv_lens = {300, 280};
    c.sparse_mode = 4, c.mask = FiaMask::kCompressed, c.pre_tokens = 150, c.next_tokens = 10;
    add(c);
  }
  if (tier == Tier::kFull) {
    FiaCase c;
    c.layout = FiaLayout::kBsnd;
    c.num_heads = 8, c.num_kv_heads = 2, c.head_dim = 128;
    c.q_lens = {513}, c.kv_lens = {513};
    c.sparse_mode = 3, c.mask = FiaMask::kCompressed;
    add(c);
    c.q_dtype = c.kv_dtype = c.out_dtype = DType::kBFloat16;
    c.sparse_mode = 4, c.pre_tokens = 100, c.next_tokens = 0;
    add(c);
  }
  if (tier == Tier::kSmoke) {
    std::vector<FiaCase> few;
    for (size_t i = 0; i < cs.size(); i += 4) few.push_back(cs[i]);
    return few;
  }
  return cs;
}

std::vector<FiaCase> fia_cases_for_run() {
  std::vector<FiaCase> cs = fia_cases(test_tier());
  if (under_sanitizer()) {
    std::erase_if(cs, [](const FiaCase& c) { return c.work() > kSanitizerWorkCap; });
  }
  return cs;
}

// ---- the builder
// -----------------------------------------------------------------------------------

TensorView FiaCaseData::alloc(DType dtype, std::vector<int64_t> shape, double fill) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  buffers_.emplace_back(static_cast<size_t>(std::max<int64_t>(n, 1)) * dtype_size(dtype));
  TensorView v = TensorView::contiguous(buffers_.back().data(), dtype, shape);
  fill_elements(v, n, fill);
  return v;
}

FiaCaseData::FiaCaseData(const FiaCase& c) : case_(c) {
  TestRng rng(fnv1a(c.name()));
  const int64_t B = c.batch(), N = c.num_heads, KVN = c.num_kv_heads, D = c.head_dim;
  const int64_t Dv = c.dv(), Dr = c.rope_dim, P = c.prefix_len;
  const bool tnd = c.tnd(), bsh = c.layout == FiaLayout::kBsh, bnsd = c.layout == FiaLayout::kBnsd;
  const bool ntd = c.layout == FiaLayout::kNtd;
  const bool int8_kv = c.kv_dtype == DType::kInt8;
  reference::FiaCall& a = call_;
  a.input_layout = c.input_layout();
  a.num_heads = N;
  a.num_key_value_heads = KVN;
  a.sparse_mode = c.sparse_mode;
  a.pre_tokens = c.pre_tokens;
  a.next_tokens = c.next_tokens;
  a.prompt = c.prompt;
  a.softmax_lse_flag = c.lse;
  a.scale = c.logit_scale / std::sqrt(static_cast<double>(D + Dr));

  // ---- query geometry ----
  const int64_t qpad = std::max<int64_t>(c.q_padding, 0);
  const int64_t S1 = tnd ? 0 : c.max_q() + c.q_slack + qpad;
  std::vector<int64_t> q_first(B, 0);
  int64_t T = 0;
  for (int64_t b = 0; b < B; ++b) {
    if (tnd) {
      q_first[b] = T;
      T += c.q_lens[b];
    } else if (c.q_padding >= 0) {
      q_first[b] = S1 - qpad - c.q_lens[b];
    }
  }
  if (tnd) T += c.q_slack;
  rows_ = tnd ? T : B * S1;
  auto q_shape = [&](int64_t d, int64_t n) -> std::vector<int64_t> {
    if (bsh) return {B, S1, n * d};
    if (bnsd) return {B, n, S1, d};
    if (tnd) return ntd ? std::vector<int64_t>{n, T, d} : std::vector<int64_t>{T, n, d};
    return {B, S1, n, d};
  };
  auto q_elem = [&](const TensorView& t, int64_t b, int64_t i, int64_t h, int64_t d, int64_t Dd) {
    const int64_t s = q_first[b] + i;
    if (bsh) return element_at(t, {b, s, h * Dd + d});
    if (bnsd) return element_at(t, {b, h, s, d});
    if (ntd) return element_at(t, {h, s, d});
    if (tnd) return element_at(t, {s, h, d});
    return element_at(t, {b, s, h, d});
  };
  a.query = alloc(c.q_dtype, q_shape(D, N), kNaN);
  if (Dr) a.query_rope = alloc(c.q_dtype, q_shape(Dr, N), kNaN);

  // ---- KV geometry ----
  const int64_t kvpad = std::max<int64_t>(c.kv_padding, 0);
  const int64_t S2 = c.max_kv() + c.kv_slack + kvpad;
  std::vector<int64_t> kv_first(B, 0), kv_cap(B, S2);
  int64_t T2 = 0;
  for (int64_t b = 0; b < B; ++b) {
    if (tnd && !c.paged) {
      kv_first[b] = T2;
      T2 += c.kv_lens[b];
    } else if (c.kv_padding >= 0) {
      kv_first[b] = S2 - kvpad - c.kv_lens[b];
    }
    if (c.list_mode) kv_cap[b] = c.kv_lens[b] + 1 + b;
  }
  T2 += c.kv_slack;
  const double kv_fill = int8_kv ? 127.0 : kNaN;
  const int64_t bps = (c.max_kv() + c.block_size - 1) / c.block_size + 1;
  const int64_t num_blocks = B * bps + 2;
  std::vector<int64_t> perm(num_blocks);
  std::iota(perm.begin(), perm.end(), 0);
  for (int64_t i = num_blocks - 1; i > 0; --i) std::swap(perm[i], perm[rng.below(i + 1)]);
  auto kv_shape = [&](int64_t d, int64_t b) -> std::vector<int64_t> {
    if (c.paged) {
      if (c.cache_bnsd) return {num_blocks, KVN, c.block_size, d};
      return {num_blocks, c.block_size, KVN * d};
    }
    const int64_t bb = c.list_mode ? 1 : B, s = c.list_mode ? kv_cap[b] : S2;
    if (bsh) return {bb, s, KVN * d};
    if (bnsd) return {bb, KVN, s, d};
    if (tnd) return ntd ? std::vector<int64_t>{KVN, T2, d} : std::vector<int64_t>{T2, KVN, d};
    return {bb, s, KVN, d};
  };
  // Element of logical position lj (prefix excluded) of batch b.
  auto kv_elem = [&](const TensorView& t, int64_t b, int64_t n2, int64_t lj, int64_t d,
                     int64_t Dd) {
    if (c.paged) {
      const int64_t blk = perm[b * bps + lj / c.block_size], o = lj % c.block_size;
      return c.cache_bnsd ? element_at(t, {blk, n2, o, d}) : element_at(t, {blk, o, n2 * Dd + d});
    }
    const int64_t s = kv_first[b] + lj, bb = c.list_mode ? 0 : b;
    if (bsh) return element_at(t, {bb, s, n2 * Dd + d});
    if (bnsd) return element_at(t, {bb, n2, s, d});
    if (ntd) return element_at(t, {n2, s, d});
    if (tnd) return element_at(t, {s, n2, d});
    return element_at(t, {bb, s, n2, d});
  };
  const int nlist = c.list_mode ? static_cast<int>(B) : 1;
  for (int i = 0; i < nlist; ++i) {
    a.key.push_back(alloc(c.kv_dtype, kv_shape(D, i), kv_fill));
    a.value.push_back(c.value_is_key ? a.key.back() : alloc(c.kv_dtype, kv_shape(Dv, i), kv_fill));
  }
  TensorView key_rope;
  if (Dr) {
    key_rope = alloc(c.kv_dtype, kv_shape(Dr, 0), kNaN);
    a.key_rope = key_rope;
  }
  TensorView kp, vp;
  if (P) {
    auto pshape = [&](int64_t d) -> std::vector<int64_t> {
      if (bsh) return {1, P + 2, KVN * d};
      if (bnsd) return {1, KVN, P + 2, d};
      return {1, P + 2, KVN, d};
    };
    kp = alloc(c.kv_dtype, pshape(D), kv_fill);
    vp = alloc(c.kv_dtype, pshape(Dv), kv_fill);
    a.key_shared_prefix = kp;
    a.value_shared_prefix = vp;
    a.actual_shared_prefix_len = std::vector<int64_t>{P};
  }
  auto prefix_elem = [&](const TensorView& t, int64_t n2, int64_t j, int64_t d, int64_t Dd) {
    if (bsh) return element_at(t, {0, j, n2 * Dd + d});
    if (bnsd) return element_at(t, {0, n2, j, d});
    return element_at(t, {0, j, n2, d});
  };
  if (c.paged) {
    TensorView bt = alloc(DType::kInt32, {B, bps}, -1.0);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t k = 0; k < bps; ++k)
        store_element(bt, element_at(bt, {b, k}), static_cast<double>(perm[b * bps + k]));
    a.block_table = bt;
    a.block_size = c.block_size;
  }

  // ---- lengths (D6) ----
  if (tnd) {
    std::vector<int64_t> cq, ck;
    int64_t sq = 0, sk = 0;
    for (int64_t b = 0; b < B; ++b) {
      cq.push_back(sq += c.q_lens[b]);
      ck.push_back(sk += c.kv_lens[b]);
    }
    a.actual_seq_lengths = cq;
    a.actual_seq_lengths_kv = c.paged ? c.kv_lens : ck;
  } else {
    if (c.pass_q_lens) a.actual_seq_lengths = c.q_lens;
    if (c.pass_kv_lens || c.paged) a.actual_seq_lengths_kv = c.kv_lens;
  }
  if (c.q_padding >= 0) {
    a.query_padding_size = alloc(DType::kInt64, {1}, 0.0);
    std::memcpy(a.query_padding_size->data, &c.q_padding, 8);
  }
  if (c.kv_padding >= 0) {
    a.kv_padding_size = alloc(DType::kInt64, {1}, 0.0);
    std::memcpy(a.kv_padding_size->data, &c.kv_padding, 8);
  }

  // ---- antiquant parameters: values drawn first, logical dequantisation below ----
  const bool combined = c.antiquant == FiaAntiquant::kCombinedChannel ||
                        c.antiquant == FiaAntiquant::kCombinedTensor ||
                        c.antiquant == FiaAntiquant::kCombinedToken;
  const bool per_token =
      c.antiquant == FiaAntiquant::kCombinedToken || c.antiquant == FiaAntiquant::kSplitToken;
  TensorView sc_k, sc_v, of_k, of_v;  // split (or the combined tensor in sc_k / of_k)
  if (c.antiquant != FiaAntiquant::kNone) {
    auto fill = [&](TensorView& t, double lo, double hi, bool integral) {
      for (int64_t i = 0; i < t.numel(); ++i) {
        double x = rng.uniform(lo, hi);
        store_element(t, i, integral ? std::round(x) : x);
      }
    };
    std::vector<int64_t> shp;
    if (c.antiquant == FiaAntiquant::kCombinedChannel) shp = {2, KVN, 1, D};
    if (c.antiquant == FiaAntiquant::kCombinedTensor) shp = {2};
    if (c.antiquant == FiaAntiquant::kCombinedToken) shp = {2, B, S2};
    if (c.antiquant == FiaAntiquant::kSplitChannel) shp = {KVN, D};
    if (c.antiquant == FiaAntiquant::kSplitToken) shp = {1, B, S2};
    sc_k = alloc(DType::kFloat32, shp, 0.0);
    of_k = alloc(DType::kFloat32, shp, 0.0);
    fill(sc_k, 0.005, 0.03, false);
    fill(of_k, -4, 4, true);
    if (combined) {
      a.antiquant_scale = sc_k, a.antiquant_offset = of_k;
      a.antiquant_mode = per_token ? 1 : 0;
    } else {
      sc_v = alloc(DType::kFloat32, shp, 0.0);
      of_v = alloc(DType::kFloat32, shp, 0.0);
      fill(sc_v, 0.005, 0.03, false);
      fill(of_v, -4, 4, true);
      a.key_antiquant_scale = sc_k, a.key_antiquant_offset = of_k;
      a.value_antiquant_scale = sc_v, a.value_antiquant_offset = of_v;
      a.key_antiquant_mode = a.value_antiquant_mode = per_token ? 1 : 0;
    }
  }
  // Dequantisation of a stored int8 value (which 0 = key, 1 = value; s = tensor position).
  auto dq = [&](double x, int which, int64_t b, int64_t n2, int64_t s, int64_t d) {
    if (c.antiquant == FiaAntiquant::kNone) return x;
    const TensorView& sc = combined ? sc_k : (which ? sc_v : sc_k);
    const TensorView& of = combined ? of_k : (which ? of_v : of_k);
    int64_t e = 0;
    switch (c.antiquant) {
      case FiaAntiquant::kCombinedChannel:
        e = element_at(sc, {which, n2, 0, d});
        break;
      case FiaAntiquant::kCombinedTensor:
        e = which;
        break;
      case FiaAntiquant::kCombinedToken:
        e = element_at(sc, {which, b, s});
        break;
      case FiaAntiquant::kSplitChannel:
        e = element_at(sc, {n2, d});
        break;
      default:
        e = element_at(sc, {0, b, s});
        break;
    }
    return (x + load_element(of, e)) * load_element(sc, e);
  };
  // The shared prefix is one tensor for every batch: drawn for batch 0, read back after.
  bool reuse = false;
  auto draw_kv = [&](const TensorView& t, int64_t e, bool rope_part) {
    if (reuse) return load_element(t, e);
    const double x = int8_kv && !rope_part ? std::round(rng.uniform(-100, 100)) : rng.normal();
    store_element(t, e, x);
    return load_element(t, e);
  };

  // ---- data and the logical copy ----
  logical_.resize(B);
  for (int64_t b = 0; b < B; ++b) {
    FiaLogicalBatch& L = logical_[b];
    L.q_len = c.q_lens[b];
    L.kv_len = P + c.kv_lens[b];
    const int64_t Dk = D + Dr;
    L.q.assign(L.q_len * N * Dk, 0.0);
    for (int64_t i = 0; i < L.q_len; ++i) {
      L.rows.push_back(tnd ? q_first[b] + i : b * S1 + q_first[b] + i);
      for (int64_t h = 0; h < N; ++h) {
        for (int64_t d = 0; d < D; ++d) {
          const int64_t e = q_elem(a.query, b, i, h, d, D);
          store_element(a.query, e, rng.normal());
          L.q[(i * N + h) * Dk + d] = load_element(a.query, e);
        }
        for (int64_t d = 0; d < Dr; ++d) {
          const int64_t e = q_elem(*a.query_rope, b, i, h, d, Dr);
          store_element(*a.query_rope, e, rng.normal());
          L.q[(i * N + h) * Dk + D + d] = load_element(*a.query_rope, e);
        }
      }
    }
    L.k.assign(KVN * L.kv_len * Dk, 0.0);
    L.v.assign(KVN * L.kv_len * Dv, 0.0);
    const TensorView& kt = a.key[c.list_mode ? b : 0];
    const TensorView& vt = a.value[c.list_mode ? b : 0];
    for (int64_t n2 = 0; n2 < KVN; ++n2) {
      for (int64_t j = 0; j < L.kv_len; ++j) {
        const bool pre = j < P;
        reuse = pre && b > 0;
        const int64_t lj = j - P, s = kv_first[b] + lj;
        double* kr = &L.k[(n2 * L.kv_len + j) * Dk];
        double* vr = &L.v[(n2 * L.kv_len + j) * Dv];
        for (int64_t d = 0; d < D; ++d) {
          const int64_t e = pre ? prefix_elem(kp, n2, j, d, D) : kv_elem(kt, b, n2, lj, d, D);
          kr[d] = dq(draw_kv(pre ? kp : kt, e, false), 0, b, n2, s, d);
        }
        for (int64_t d = 0; d < Dr; ++d)
          kr[D + d] = draw_kv(key_rope, kv_elem(key_rope, b, n2, lj, d, Dr), true);
        if (c.value_is_key) {
          for (int64_t d = 0; d < Dv; ++d) vr[d] = kr[d];
          continue;
        }
        for (int64_t d = 0; d < Dv; ++d) {
          const int64_t e = pre ? prefix_elem(vp, n2, j, d, Dv) : kv_elem(vt, b, n2, lj, d, Dv);
          vr[d] = dq(draw_kv(pre ? vp : vt, e, false), 1, b, n2, s, d);
        }
      }
    }
  }

  // ---- masks and pse (rows: the S position, TND: within the batch; cols: prefix first) ----
  const int64_t S1m = tnd ? c.max_q() : S1;
  const int64_t S2m = P + (tnd ? c.max_kv() : (c.paged ? bps * c.block_size : S2));
  auto mask_row = [&](int64_t b, int64_t i) { return tnd ? i : q_first[b] + i; };
  auto mask_col = [&](int64_t b, int64_t j) {
    return j < P ? j : P + (c.paged || tnd ? 0 : kv_first[b]) + (j - P);
  };
  if (c.mask == FiaMask::kCompressed) {
    // D3: never read. All ones (everything masked) would hide every position if it were.
    std::vector<int64_t> shape(static_cast<size_t>(c.compressed_rank), 1);
    shape[shape.size() - 2] = shape.back() = 2048;
    a.atten_mask = alloc(DType::kInt8, shape, 1.0);
  } else if (c.mask != FiaMask::kNone) {
    TensorView m;
    if (c.mask == FiaMask::kFull2) m = alloc(DType::kInt8, {S1m, S2m}, 1.0);
    if (c.mask == FiaMask::kFull3) m = alloc(DType::kBool, {B, S1m, S2m}, 1.0);
    if (c.mask == FiaMask::kFull4) m = alloc(DType::kUInt8, {1, 1, S1m, S2m}, 1.0);
    if (c.mask == FiaMask::kIfaBS) m = alloc(DType::kBool, {B, S2m}, 1.0);
    const bool shared = c.mask == FiaMask::kFull2 || c.mask == FiaMask::kFull4;
    // Shared masks are drawn once over every (row, col), then read per batch.
    if (shared) {
      for (int64_t i = 0; i < m.numel(); ++i) store_element(m, i, rng.unit() < 0.3 ? 1.0 : 0.0);
      if (c.mask_full_rows)
        for (int64_t j = 0; j < S2m; ++j)
          store_element(m, m.rank == 2 ? element_at(m, {1, j}) : element_at(m, {0, 0, 1, j}), 1.0);
    }
    for (int64_t b = 0; b < B; ++b) {
      FiaLogicalBatch& L = logical_[b];
      const int64_t rows = c.mask == FiaMask::kIfaBS ? 1 : L.q_len;
      L.mask.assign(L.q_len * L.kv_len, 0);
      for (int64_t i = 0; i < rows; ++i) {
        for (int64_t j = 0; j < L.kv_len; ++j) {
          const int64_t mr = mask_row(b, i), mc = mask_col(b, j);
          int64_t e = 0;
          if (c.mask == FiaMask::kFull2) e = element_at(m, {mr, mc});
          if (c.mask == FiaMask::kFull4) e = element_at(m, {0, 0, mr, mc});
          if (c.mask == FiaMask::kFull3) e = element_at(m, {b, mr, mc});
          if (c.mask == FiaMask::kIfaBS) e = element_at(m, {b, mc});
          if (!shared) {
            const bool full = c.mask_full_rows && (c.mask == FiaMask::kIfaBS ? b == 1 : i == 1);
            store_element(m, e, full || rng.unit() < 0.3 ? 1.0 : 0.0);
          }
          L.mask[i * L.kv_len + j] = load_element(m, e) != 0.0;
        }
      }
    }
    a.atten_mask = m;
  }
  if (c.pse) {
    TensorView p = alloc(c.q_dtype, {B, N, S1m, S2m}, kNaN);
    for (int64_t b = 0; b < B; ++b) {
      FiaLogicalBatch& L = logical_[b];
      L.pse.assign(N * L.q_len * L.kv_len, 0.0);
      for (int64_t h = 0; h < N; ++h)
        for (int64_t i = 0; i < L.q_len; ++i)
          for (int64_t j = 0; j < L.kv_len; ++j) {
            const int64_t e = element_at(p, {b, h, mask_row(b, i), mask_col(b, j)});
            store_element(p, e, rng.normal());
            L.pse[(h * L.q_len + i) * L.kv_len + j] = load_element(p, e);
          }
    }
    a.pse_shift = p;
  }
  if (c.sink) {
    TensorView s =
        alloc(c.q_dtype == DType::kBFloat16 ? DType::kBFloat16 : DType::kFloat16, {N}, 0);
    for (int64_t h = 0; h < N; ++h) {
      store_element(s, h, 2.0 * rng.normal());
      sink_.push_back(load_element(s, h));
    }
    a.learnable_sink = s;
  }

  // ---- outputs ----
  const FiaOut o = c.out;
  std::vector<int64_t> oshape;
  if (o == FiaOut::kNbsd) {
    oshape = {N, B, S1, Dv};
  } else if (o == FiaOut::kBsnd) {
    oshape = {B, S1, N, Dv};
  } else if (o == FiaOut::kNtd || (o == FiaOut::kSame && ntd)) {
    oshape = {N, T, Dv};
  } else if (o == FiaOut::kTnd || (o == FiaOut::kSame && tnd)) {
    oshape = {T, N, Dv};
  } else {
    oshape = bsh ? std::vector<int64_t>{B, S1, N * Dv}
                 : (bnsd ? std::vector<int64_t>{B, N, S1, Dv} : std::vector<int64_t>{B, S1, N, Dv});
  }
  a.attention_out = alloc(c.out_dtype, oshape, 0.0);
  if (c.out_quant != FiaOutQuant::kNone) {
    const std::vector<int64_t> qs = c.out_quant == FiaOutQuant::kPerTensor
                                        ? std::vector<int64_t>{1}
                                        : std::vector<int64_t>{N, Dv};
    const DType qd = c.q_dtype == DType::kBFloat16 ? DType::kBFloat16 : DType::kFloat32;
    TensorView s = alloc(qd, qs, 0.0), off = alloc(qd, qs, 0.0);
    for (int64_t i = 0; i < s.numel(); ++i) {
      store_element(s, i, rng.uniform(40, 80));
      store_element(off, i, std::round(rng.uniform(-3, 3)));
    }
    a.quant_scale2 = s;
    a.quant_offset2 = off;
  }
  if (c.lse)
    a.softmax_lse =
        alloc(DType::kFloat32,
              tnd ? std::vector<int64_t>{T, N, 1} : std::vector<int64_t>{B, N, S1, 1}, 0.0);
  poison_outputs();
}

void FiaCaseData::poison_outputs() {
  const TensorView& o = call_.attention_out;
  const double p = o.dtype == DType::kInt8 ? 77.0 : kNaN;
  for (int64_t i = 0; i < o.numel(); ++i) store_element(o, i, p);
  if (call_.softmax_lse)
    for (int64_t i = 0; i < call_.softmax_lse->numel(); ++i)
      store_element(*call_.softmax_lse, i, kNaN);
}

// ---- comparison
// --------------------------------------------------------------------------------------

::testing::AssertionResult compare_fia_output(const std::string& name,
                                              const reference::FiaCall& call,
                                              const reference::FiaReference& ref, double* worst,
                                              bool allow_mostly_empty) {
  const DType od = ref.out_dtype;
  const double rtol = ifa_rtol(od);
  int64_t fails = 0, normal = 0, valid = 0;
  double worst_ratio = 0;
  std::ostringstream msg;
  for (int64_t r = 0; r < ref.rows; ++r) {
    for (int64_t h = 0; h < ref.num_heads; ++h) {
      const auto kind = ref.row_kind[ref.row(r, h)];
      if (kind != reference::FiaRowKind::kPadding) ++valid;
      if (kind == reference::FiaRowKind::kNormal) ++normal;
      for (int64_t d = 0; d < ref.value_dim; ++d) {
        const int64_t i = ref.index(r, h, d);
        const double got =
            load_element(call.attention_out, reference::fia_out_element(call, r, h, d));
        const double want = ref.rounded[i];
        double bound = 0;
        if (kind == reference::FiaRowKind::kNormal) {
          bound = od == DType::kInt8
                      ? 1.0
                      : rtol * (std::fabs(ref.expected[i]) + ref.v_absmax[ref.row(r, h)]);
        }
        const double err = std::fabs(got - want);
        const bool pass = nonfinite_aware_pass(got, want, err <= bound);
        if (bound > 0 && std::isfinite(err)) worst_ratio = std::max(worst_ratio, err / bound);
        if (!pass) {
          if (fails == 0)
            msg << "[" << name << "] out(r=" << r << ", h=" << h << ", d=" << d << "): got " << got
                << " want " << want << " bound " << bound << "\n";
          ++fails;
        }
      }
      if (call.softmax_lse) {
        const double got = load_element(*call.softmax_lse, reference::fia_lse_element(call, r, h));
        const double want = ref.lse[ref.row(r, h)];
        const bool pass = nonfinite_aware_pass(
            got, want, std::fabs(got - want) <= 0x1p-10 + 0x1p-16 * std::fabs(want));
        if (!pass) {
          if (fails == 0)
            msg << "[" << name << "] lse(r=" << r << ", h=" << h << "): got " << got << " want "
                << want << "\n";
          ++fails;
        }
      }
    }
  }
  if (worst) *worst = worst_ratio;
  if (!allow_mostly_empty && normal * 2 < valid) {
    return ::testing::AssertionFailure() << "[" << name << "] only " << normal << " of " << valid
                                         << " rows attend anything: the case would prove little";
  }
  if (fails) return ::testing::AssertionFailure() << msg.str() << fails << " elements failed";
  return ::testing::AssertionSuccess();
}

}  // namespace kvflash::testing
