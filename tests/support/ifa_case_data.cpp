// Builds the inputs of one IfaCase (see ifa_cases.hpp): deterministic values, every unread slot
// poisoned.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "core/half.hpp"
#include "support/elements.hpp"
#include "support/ifa_cases.hpp"
#include "support/test_rng.hpp"

namespace kvflash::testing {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

TensorView IfaCaseData::alloc(DType dtype, std::vector<int64_t> shape, bool strided,
                              double poison) {
  TensorView v;
  v.dtype = dtype;
  v.rank = static_cast<int>(shape.size());
  // Strided views: the innermost stride alternates between 1 and 2 from tensor to tensor, every
  // outer stride leaves a gap of 3 elements, and the view starts 5 elements into its buffer (so it
  // is not 64-byte aligned). Gaps hold the poison value.
  const int64_t inner = strided ? 1 + static_cast<int64_t>(buffers_.size() % 2) : 1;
  const int64_t gap = strided ? 3 : 0;
  int64_t stride = inner;
  for (int k = v.rank - 1; k >= 0; --k) {
    v.shape[k] = shape[k];
    v.strides[k] = stride;
    stride = stride * std::max<int64_t>(shape[k], 1) + gap;
  }
  v.offset = strided ? 5 : 0;
  int64_t span = v.offset + 1;
  for (int k = 0; k < v.rank; ++k) span += (std::max<int64_t>(shape[k], 1) - 1) * v.strides[k];
  buffers_.emplace_back(static_cast<size_t>(span) * dtype_size(dtype));
  v.data = buffers_.back().data();
  fill_elements(v, span, poison);
  return v;
}

IfaCaseData::IfaCaseData(const IfaCase& c) : case_(c) {
  if (const std::string why = c.inconsistency(); !why.empty()) {
    throw std::invalid_argument("IfaCase " + c.name() + ": " + why);
  }
  TestRng rng(fnv1a(c.name()));
  IfaArgs& a = args_;
  a.num_heads = c.num_heads;
  a.num_key_value_heads = c.kvn_attr_zero ? 0 : c.num_kv_heads;
  a.scale_value = c.logit_scale / std::sqrt(static_cast<double>(c.head_dim));
  a.input_layout = ifa_layout_name(c.layout);
  a.zero_fully_masked_rows = c.zero_fully_masked;
  // The order matters only for reproducibility: every part draws from the same stream.
  build_query(rng);
  build_lengths();
  build_kv(rng);
  build_mask_pse(rng);
  build_quant(rng);
  build_outputs(rng);
  poison_outputs();
}

std::vector<int64_t> IfaCaseData::query_shape() const {
  const IfaCase& c = case_;
  const int64_t B = c.batch, N = c.num_heads, D = c.head_dim;
  if (c.layout == IfaLayout::kBsh) return {B, 1, N * D};
  if (c.layout == IfaLayout::kBnsd) return {B, N, 1, D};
  return {B, 1, N, D};
}

void IfaCaseData::build_query(TestRng& rng) {
  const IfaCase& c = case_;
  IfaArgs& a = args_;
  const int64_t B = c.batch, N = c.num_heads, D = c.head_dim;
  const bool bsh = c.layout == IfaLayout::kBsh, bnsd = c.layout == IfaLayout::kBnsd;
  a.query = alloc(c.q_dtype, query_shape(), c.strided, kNaN);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < N; ++h) {
      for (int64_t d = 0; d < D; ++d) {
        const double x = rng.normal();
        if (bsh)
          store_element(a.query, {b, 0, h * D + d}, x);
        else if (bnsd)
          store_element(a.query, {b, h, 0, d}, x);
        else
          store_element(a.query, {b, 0, h, d}, x);
      }
    }
  }
}

void IfaCaseData::build_lengths() {
  const IfaCase& c = case_;
  IfaArgs& a = args_;
  const int64_t B = c.batch;
  const std::vector<int64_t>& lens = c.kv_lens;
  const int64_t max_len = c.max_len();
  seq_cap_.assign(B, 0);
  begin_.assign(B, 0);
  count_.assign(B, 0);
  blocks_per_seq_ = 0;
  // Left padding applies only with lengths and batch-contiguous KV; otherwise it is silently
  // ignored (docs/semantics.md §2.7), and the data must be laid out as right padding.
  const bool padding_active = c.kv_padding >= 0 && c.pass_lengths && !c.list_mode && !c.paged;
  if (c.paged) {
    for (int64_t b = 0; b < B; ++b)
      blocks_per_seq_ = std::max(blocks_per_seq_, ceil_div(lens[b], c.block_size));
    blocks_per_seq_ += 1;  // one spare slot per sequence, always -1
  }
  for (int64_t b = 0; b < B; ++b) {
    const int64_t slack = c.pass_lengths ? c.kv_slack : 0;
    if (c.paged)
      seq_cap_[b] = blocks_per_seq_ * c.block_size;
    else if (c.list_mode)
      seq_cap_[b] = lens[b] + slack + (c.pass_lengths ? (b % 3) * 4 : 0);
    else
      seq_cap_[b] = max_len + slack;
    count_[b] = lens[b];
    if (padding_active) {
      begin_[b] = seq_cap_[b] - c.kv_padding - lens[b];
      if (begin_[b] < 0) count_[b] = begin_[b] = 0;
    }
  }
  if (c.pass_lengths || c.paged) {
    if (c.broadcast_length) {
      a.actual_seq_lengths = std::vector<int64_t>{lens[0]};
    } else {
      a.actual_seq_lengths = lens;
      // Longer arrays are legal (the first B count); strided cases exercise that too.
      if (c.strided) a.actual_seq_lengths->push_back(max_len + 1000);
    }
  }
  if (c.kv_padding >= 0) {
    a.kv_padding_size = alloc(DType::kInt64, {1}, false, 0);
    store_element(*a.kv_padding_size, {0}, static_cast<double>(c.kv_padding));
  }
}

void IfaCaseData::build_kv(TestRng& rng) {
  const IfaCase& c = case_;
  IfaArgs& a = args_;
  const int64_t B = c.batch, KVN = c.num_kv_heads, D = c.head_dim;
  const bool bsh = c.layout == IfaLayout::kBsh, bnsd = c.layout == IfaLayout::kBnsd;
  const std::vector<int64_t>& lens = c.kv_lens;
  const bool int8_kv = c.kv_dtype == DType::kInt8;
  auto kv_value = [&](bool is_value) {
    if (int8_kv) return std::round(rng.uniform(-127.0, 127.0));
    return rng.normal() * (is_value ? c.value_scale : 1.0);
  };
  // Poison for unread slots: NaN keys and infinite values for float caches (a leaked read turns
  // the output into NaN); extreme codes for int8 caches.
  const double k_poison = int8_kv ? -128.0 : kNaN;
  const double v_poison = int8_kv ? 127.0 : kInf;
  if (c.paged) {
    std::vector<int64_t> nb(B);
    int64_t used = 0;
    for (int64_t b = 0; b < B; ++b) used += nb[b] = ceil_div(lens[b], c.block_size);
    num_blocks_ = used + 2;  // two blocks no sequence uses
    std::vector<int32_t> perm(num_blocks_);
    std::iota(perm.begin(), perm.end(), 0);
    for (int64_t i = num_blocks_ - 1; i > 0; --i) std::swap(perm[i], perm[rng.below(i + 1)]);
    TensorView bt = alloc(DType::kInt32, {B, blocks_per_seq_}, c.strided, -7);
    std::vector<std::vector<int32_t>> table(B, std::vector<int32_t>(blocks_per_seq_, -1));
    int64_t next = 0;
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t i = 0; i < blocks_per_seq_; ++i) {
        if (i < nb[b]) table[b][i] = perm[next++];
        store_element(bt, {b, i}, table[b][i]);
      }
    }
    a.block_table = bt;
    a.block_size = c.block_size;
    const std::vector<int64_t> shape =
        c.cache_bnsd ? std::vector<int64_t>{num_blocks_, KVN, c.block_size, D}
                     : std::vector<int64_t>{num_blocks_, c.block_size, KVN * D};
    TensorView k = alloc(c.kv_dtype, shape, c.strided, k_poison);
    TensorView v = alloc(c.kv_dtype, shape, c.strided, v_poison);
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t j = 0; j < lens[b]; ++j) {
        const int64_t blk = table[b][j / c.block_size], o = j % c.block_size;
        for (int64_t n2 = 0; n2 < KVN; ++n2) {
          for (int64_t d = 0; d < D; ++d) {
            if (c.cache_bnsd) {
              store_element(k, {blk, n2, o, d}, kv_value(false));
              store_element(v, {blk, n2, o, d}, kv_value(true));
            } else {
              store_element(k, {blk, o, n2 * D + d}, kv_value(false));
              store_element(v, {blk, o, n2 * D + d}, kv_value(true));
            }
          }
        }
      }
    }
    a.key = {k};
    a.value = {v};
  } else {
    const int64_t tensors = c.list_mode ? B : 1;
    for (int64_t t = 0; t < tensors; ++t) {
      const int64_t tb = c.list_mode ? 1 : B;
      const int64_t S = seq_cap_[t];
      std::vector<int64_t> shape;
      if (bsh)
        shape = {tb, S, KVN * D};
      else if (bnsd)
        shape = {tb, KVN, S, D};
      else
        shape = {tb, S, KVN, D};
      TensorView k = alloc(c.kv_dtype, shape, c.strided, k_poison);
      TensorView v = alloc(c.kv_dtype, shape, c.strided, v_poison);
      for (int64_t bi = 0; bi < tb; ++bi) {
        const int64_t b = c.list_mode ? t : bi;
        for (int64_t j = begin_[b]; j < begin_[b] + count_[b]; ++j) {
          for (int64_t n2 = 0; n2 < KVN; ++n2) {
            for (int64_t d = 0; d < D; ++d) {
              const double kx = kv_value(false), vx = kv_value(true);
              if (bsh) {
                store_element(k, {bi, j, n2 * D + d}, kx);
                store_element(v, {bi, j, n2 * D + d}, vx);
              } else if (bnsd) {
                store_element(k, {bi, n2, j, d}, kx);
                store_element(v, {bi, n2, j, d}, vx);
              } else {
                store_element(k, {bi, j, n2, d}, kx);
                store_element(v, {bi, j, n2, d}, vx);
              }
            }
          }
        }
      }
      a.key.push_back(k);
      a.value.push_back(v);
    }
  }
}

void IfaCaseData::build_mask_pse(TestRng& rng) {
  const IfaCase& c = case_;
  IfaArgs& a = args_;
  const int64_t B = c.batch, N = c.num_heads;
  const int64_t width = *std::max_element(seq_cap_.begin(), seq_cap_.end()) + 2;
  if (c.mask != MaskShape::kNone) {
    std::vector<int64_t> shape;
    switch (c.mask) {
      case MaskShape::kBS:
        shape = {B, width};
        break;
      case MaskShape::kB1S:
        shape = {B, 1, width};
        break;
      case MaskShape::kB11S:
        shape = {B, 1, 1, width};
        break;
      case MaskShape::kBN1S:
        shape = {B, N, 1, width};
        break;
      case MaskShape::k1N1S:
        shape = {1, N, 1, width};
        break;
      case MaskShape::k111S:
        shape = {1, 1, 1, width};
        break;
      case MaskShape::kNone:
        break;
    }
    TensorView m = alloc(c.mask_dtype, shape, c.strided, 1);
    const bool per_head = c.mask == MaskShape::kBN1S || c.mask == MaskShape::k1N1S;
    const int64_t mb = shape[0], mh = per_head ? N : 1;
    for (int64_t b = 0; b < mb; ++b) {
      for (int64_t h = 0; h < mh; ++h) {
        // Fully masked rows: head 0 of a per-head mask, batch 0 of a per-batch one, or everything
        // for the fully broadcast shape.
        const bool full = c.mask_full_rows && (per_head ? h == 0 : b == 0);
        for (int64_t j = 0; j < width; ++j) {
          double x = (full || rng.uniform(0.0, 1.0) < 0.25) ? 1.0 : 0.0;
          // Any nonzero byte masks (docs/semantics.md §2.5): integer masks use arbitrary nonzero
          // codes.
          if (x != 0 && c.mask_dtype != DType::kBool) x = 1 + static_cast<double>(rng.below(126));
          switch (m.rank) {
            case 2:
              store_element(m, {b, j}, x);
              break;
            case 3:
              store_element(m, {b, 0, j}, x);
              break;
            default:
              store_element(m, {b, h, 0, j}, x);
              break;
          }
        }
      }
    }
    a.atten_mask = m;
  }
  if (c.pse != PseShape::kNone) {
    const int64_t pb = c.pse == PseShape::kBatch ? B : 1;
    TensorView p = alloc(c.q_dtype, {pb, N, 1, width}, c.strided, kNaN);
    for (int64_t b = 0; b < pb; ++b) {
      for (int64_t h = 0; h < N; ++h) {
        for (int64_t j = 0; j < width; ++j) {
          // Finite only in columns some batch using this pse row attends.
          bool used = false;
          for (int64_t bb = (pb == 1 ? 0 : b); bb < (pb == 1 ? B : b + 1); ++bb) {
            used = used || (j >= begin_[bb] && j < begin_[bb] + count_[bb]);
          }
          store_element(p, {b, h, 0, j}, used ? rng.normal() : kNaN);
        }
      }
    }
    a.pse_shift = p;
  }
}

void IfaCaseData::build_quant(TestRng& rng) {
  const IfaCase& c = case_;
  IfaArgs& a = args_;
  const int64_t KVN = c.num_kv_heads, D = c.head_dim;
  if (c.antiquant != QuantMode::kNone) {
    std::vector<int64_t> shape;
    if (c.antiquant == QuantMode::kPerTensor) {
      shape = {2};
    } else {
      switch (c.antiquant_shape % 4) {
        case 0:
          shape = {2, KVN, 1, D};
          break;
        case 1:
          shape = {2, 1, KVN, D};
          break;
        case 2:
          shape = {2, KVN, D};
          break;
        default:
          shape = {2, KVN * D};
          break;
      }
    }
    const int64_t n = c.antiquant == QuantMode::kPerTensor ? 2 : 2 * KVN * D;
    TensorView sc = alloc(c.q_dtype, shape, c.strided, kNaN);
    for (int64_t i = 0; i < n; ++i) store_element_flat(sc, i, rng.uniform(0.005, 0.03));
    a.antiquant_scale = sc;
    if (c.antiquant_offset) {
      TensorView off = alloc(c.q_dtype, shape, c.strided, kNaN);
      for (int64_t i = 0; i < n; ++i) store_element_flat(off, i, rng.uniform(-8.0, 8.0));
      a.antiquant_offset = off;
    }
  }
}

void IfaCaseData::build_outputs(TestRng& rng) {
  const IfaCase& c = case_;
  IfaArgs& a = args_;
  const int64_t B = c.batch, N = c.num_heads, D = c.head_dim;
  {
    const std::vector<int64_t> shape = query_shape();
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    const int64_t lead = c.strided ? 1 : 0;  // strided cases: an unaligned output pointer
    buffers_.emplace_back(static_cast<size_t>(n + lead) * dtype_size(c.out_dtype));
    a.attention_out = TensorView::contiguous(
        buffers_.back().data() + lead * dtype_size(c.out_dtype), c.out_dtype, shape);
  }
  if (c.out_quant != QuantMode::kNone) {
    std::vector<int64_t> shape;
    if (c.out_quant == QuantMode::kPerTensor) {
      shape = {1};
    } else {
      switch (c.out_quant_shape % 8) {
        case 0:
          shape = {N * D};
          break;
        case 1:
          shape = {1, N * D};
          break;
        case 2:
          shape = {1, 1, N * D};
          break;
        case 3:
          shape = {N, D};
          break;
        case 4:
          shape = {1, N, D};
          break;
        case 5:
          shape = {N, 1, D};
          break;
        case 6:
          shape = {1, N, 1, D};
          break;
        default:
          shape = {1, 1, N, D};
          break;
      }
    }
    const DType st = c.out_quant_bf16 ? DType::kBFloat16 : DType::kFloat32;
    const int64_t n = c.out_quant == QuantMode::kPerTensor ? 1 : N * D;
    TensorView sc = alloc(st, shape, c.strided, kNaN);
    for (int64_t i = 0; i < n; ++i)
      store_element_flat(sc, i, rng.uniform(20.0, 70.0) / c.value_scale);
    a.quant_scale2 = sc;
    if (c.out_quant_offset) {
      TensorView off = alloc(st, shape, c.strided, kNaN);
      for (int64_t i = 0; i < n; ++i) store_element_flat(off, i, rng.uniform(-6.0, 6.0));
      a.quant_offset2 = off;
    }
  }
  if (c.lse) {
    buffers_.emplace_back(static_cast<size_t>(B * N) * sizeof(float));
    a.softmax_lse = TensorView::contiguous(buffers_.back().data(), DType::kFloat32, {B, N});
  }
}

void IfaCaseData::poison_outputs() {
  // 0xFF bytes: NaN for fp16/bf16/fp32, -1 for int8.
  auto fill = [](const TensorView& v) {
    std::memset(v.data, 0xFF, static_cast<size_t>(v.numel()) * dtype_size(v.dtype));
  };
  fill(args_.attention_out);
  if (args_.softmax_lse) fill(*args_.softmax_lse);
}

std::vector<std::byte> IfaCaseData::output_bytes() const {
  const TensorView& v = args_.attention_out;
  const auto* p = static_cast<const std::byte*>(v.data);
  return {p, p + v.numel() * static_cast<int64_t>(dtype_size(v.dtype))};
}

std::vector<std::byte> IfaCaseData::lse_bytes() const {
  if (!args_.softmax_lse) return {};
  const TensorView& v = *args_.softmax_lse;
  const auto* p = static_cast<const std::byte*>(v.data);
  return {p, p + v.numel() * static_cast<int64_t>(sizeof(float))};
}

}  // namespace kvflash::testing
