#include "support/ifa_cases.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "core/half.hpp"
#include "support/test_rng.hpp"

namespace kvflash::testing {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
// Work cap (B * N * max_len * D) under sanitizers: they slow the reference and kernels ~20x.
constexpr int64_t kSanitizerWorkCap = int64_t{1} << 22;

const char* short_dtype(DType t) {
  switch (t) {
    case DType::kFloat16:
      return "f16";
    case DType::kBFloat16:
      return "bf16";
    case DType::kInt8:
      return "i8";
    case DType::kUInt8:
      return "u8";
    case DType::kBool:
      return "bool";
    case DType::kFloat32:
      return "f32";
    default:
      return "?";
  }
}

const char* layout_name(IfaLayout l) {
  switch (l) {
    case IfaLayout::kBsh:
      return "BSH";
    case IfaLayout::kBsnd:
      return "BSND";
    case IfaLayout::kBnsd:
      return "BNSD";
  }
  return "?";
}

const char* mask_name(MaskShape m) {
  switch (m) {
    case MaskShape::kNone:
      return "none";
    case MaskShape::kBS:
      return "bs";
    case MaskShape::kB1S:
      return "b1s";
    case MaskShape::kB11S:
      return "b11s";
    case MaskShape::kBN1S:
      return "bn1s";
    case MaskShape::k1N1S:
      return "1n1s";
    case MaskShape::k111S:
      return "111s";
  }
  return "?";
}

// ---- writing elements --------------------------------------------------------------------------

void store(const TensorView& v, int64_t elem, double x) {
  char* p = static_cast<char*>(v.data) + elem * static_cast<int64_t>(dtype_size(v.dtype));
  switch (v.dtype) {
    case DType::kFloat32: {
      const float f = static_cast<float>(x);
      std::memcpy(p, &f, 4);
      break;
    }
    case DType::kFloat16: {
      const uint16_t h = core::float_to_fp16(static_cast<float>(x));
      std::memcpy(p, &h, 2);
      break;
    }
    case DType::kBFloat16: {
      const uint16_t h = core::float_to_bf16(static_cast<float>(x));
      std::memcpy(p, &h, 2);
      break;
    }
    case DType::kInt8:
      *p = static_cast<char>(static_cast<int8_t>(std::clamp(x, -128.0, 127.0)));
      break;
    case DType::kUInt8:
    case DType::kBool:
      *p = static_cast<char>(static_cast<uint8_t>(std::clamp(x, 0.0, 255.0)));
      break;
    case DType::kInt32: {
      const int32_t i = static_cast<int32_t>(x);
      std::memcpy(p, &i, 4);
      break;
    }
    case DType::kInt64: {
      const int64_t i = static_cast<int64_t>(x);
      std::memcpy(p, &i, 8);
      break;
    }
  }
}

void put(const TensorView& v, std::initializer_list<int64_t> idx, double x) {
  int64_t e = v.offset;
  int k = 0;
  for (int64_t i : idx) e += i * v.strides[k++];
  store(v, e, x);
}

// Row-major flat index over the view's shape.
void put_flat(const TensorView& v, int64_t flat, double x) {
  int64_t e = v.offset;
  for (int k = v.rank - 1; k >= 0; --k) {
    const int64_t n = std::max<int64_t>(v.shape[k], 1);
    e += (flat % n) * v.strides[k];
    flat /= n;
  }
  store(v, e, x);
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

// ---- IfaCase -----------------------------------------------------------------------------------

int64_t IfaCase::max_len() const {
  int64_t m = 0;
  for (int64_t l : kv_lens) m = std::max(m, l);
  return m;
}

int64_t IfaCase::work() const {
  return batch * num_heads * std::max<int64_t>(max_len(), 1) * head_dim;
}

std::string IfaCase::name() const {
  std::string s = "ifa:b" + std::to_string(batch) + ":n" + std::to_string(num_heads) + ":kvn" +
                  std::to_string(num_kv_heads) + ":d" + std::to_string(head_dim) + ":s" +
                  std::to_string(max_len());
  if (paged) s += ":bs" + std::to_string(block_size);
  s += std::string(":q=") + short_dtype(q_dtype) + ",kv=" + short_dtype(kv_dtype) +
       ",o=" + short_dtype(out_dtype);
  s += std::string(":") + layout_name(layout);
  bool uniform = true;
  for (int64_t l : kv_lens) uniform = uniform && l == max_len();
  if (!uniform) {
    std::string list;
    for (size_t i = 0; i < kv_lens.size(); ++i) list += (i ? "-" : "") + std::to_string(kv_lens[i]);
    if (kv_lens.size() <= 8) {
      s += ":lens=" + list;
    } else {
      // Long batches: a digest keeps names short while still telling length lists apart.
      char digest[16];
      std::snprintf(digest, sizeof(digest), "%08llx",
                    static_cast<unsigned long long>(fnv1a(list) & 0xffffffffu));
      s += std::string(":lens=#") + digest;
    }
  }
  if (!pass_lengths) s += ":nolens";
  if (broadcast_length) s += ":len1";
  if (kvn_attr_zero) s += ":kvn0";
  if (mask != MaskShape::kNone) {
    s += std::string(":mask=") + short_dtype(mask_dtype) + "." + mask_name(mask);
    if (mask_full_rows) s += ".full";
  }
  if (pse == PseShape::kBatch) s += ":pse=b";
  if (pse == PseShape::kBroadcast) s += ":pse=1";
  if (paged) s += cache_bnsd ? ":pa4d" : ":pa3d";
  if (antiquant == QuantMode::kPerTensor) s += ":aq=pt";
  if (antiquant == QuantMode::kPerChannel) s += ":aq=pc" + std::to_string(antiquant_shape);
  if (antiquant != QuantMode::kNone && !antiquant_offset) s += ".nooff";
  if (out_quant == QuantMode::kPerTensor) s += ":oq=pt";
  if (out_quant == QuantMode::kPerChannel) s += ":oq=pc" + std::to_string(out_quant_shape);
  if (out_quant != QuantMode::kNone && !out_quant_offset) s += ".nooff";
  if (out_quant != QuantMode::kNone && out_quant_bf16) s += ".bf16";
  if (kv_padding >= 0) s += ":pad=" + std::to_string(kv_padding);
  if (list_mode) s += ":list";
  if (strided) s += ":strided";
  if (lse) s += ":lse";
  if (zero_fully_masked) s += ":zfm";
  if (logit_scale != 1.5) s += ":logit=" + std::to_string(static_cast<int>(logit_scale));
  if (value_scale != 1.0) s += ":vscale=" + std::to_string(static_cast<int>(value_scale));
  if (!tag.empty()) s += ":" + tag;
  return s;
}

std::string IfaCase::test_name() const {
  std::string s = name();
  for (char& c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!ok) c = '_';
  }
  return s;
}

Tier test_tier() {
  const char* e = std::getenv("KVFLASH_TEST_TIER");
  if (e == nullptr) return Tier::kCi;
  const std::string t = e;
  if (t == "smoke") return Tier::kSmoke;
  if (t == "full") return Tier::kFull;
  return Tier::kCi;
}

bool under_sanitizer() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
  return true;
#else
  return false;
#endif
#else
  return false;
#endif
}

std::vector<IfaCase> ifa_cases_for_run() {
  std::vector<IfaCase> all = ifa_cases(test_tier());
  if (!under_sanitizer()) return all;
  std::vector<IfaCase> kept;
  for (const IfaCase& c : all) {
    if (c.work() <= kSanitizerWorkCap) kept.push_back(c);
  }
  return kept;
}

// ---- IfaCaseData -------------------------------------------------------------------------------

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
  for (int64_t e = 0; e < span; ++e) store(v, e, poison);
  return v;
}

std::string IfaCase::inconsistency() const {
  if (static_cast<int64_t>(kv_lens.size()) != batch) return "kv_lens must have batch entries";
  if (num_kv_heads <= 0 || num_heads % num_kv_heads != 0) return "num_heads % num_kv_heads != 0";
  if (kvn_attr_zero && num_kv_heads != num_heads) return "kvn_attr_zero needs num_kv_heads == N";
  bool uniform = true;
  for (int64_t l : kv_lens) uniform = uniform && l == kv_lens[0];
  if (broadcast_length && !uniform) return "broadcast_length needs equal kv_lens";
  if (!pass_lengths && !paged && !list_mode && !uniform) {
    return "without lengths, batch-contiguous KV needs equal kv_lens (len_b = S)";
  }
  if (paged && block_size <= 0) return "paged needs block_size > 0";
  if (cache_bnsd && (!paged || layout != IfaLayout::kBnsd)) return "cache_bnsd needs paged BNSD";
  if ((kv_dtype == DType::kInt8) != (antiquant != QuantMode::kNone)) {
    return "antiquant must be set exactly for int8 KV";
  }
  if ((out_dtype == DType::kInt8) != (out_quant != QuantMode::kNone)) {
    return "out_quant must be set exactly for int8 output";
  }
  return "";
}

IfaCaseData::IfaCaseData(const IfaCase& c) : case_(c) {
  if (const std::string why = c.inconsistency(); !why.empty()) {
    throw std::invalid_argument("IfaCase " + c.name() + ": " + why);
  }
  TestRng rng(fnv1a(c.name()));
  const int64_t B = c.batch, N = c.num_heads, KVN = c.num_kv_heads, D = c.head_dim;
  const bool int8_kv = c.kv_dtype == DType::kInt8;
  const bool bsh = c.layout == IfaLayout::kBsh, bnsd = c.layout == IfaLayout::kBnsd;

  IfaArgs& a = args_;
  a.num_heads = N;
  a.num_key_value_heads = c.kvn_attr_zero ? 0 : KVN;
  a.scale_value = c.logit_scale / std::sqrt(static_cast<double>(D));
  a.input_layout = layout_name(c.layout);
  a.zero_fully_masked_rows = c.zero_fully_masked;

  // ---- query ----
  auto qshape = [&]() -> std::vector<int64_t> {
    if (bsh) return {B, 1, N * D};
    if (bnsd) return {B, N, 1, D};
    return {B, 1, N, D};
  };
  a.query = alloc(c.q_dtype, qshape(), c.strided, kNaN);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < N; ++h) {
      for (int64_t d = 0; d < D; ++d) {
        const double x = rng.normal();
        if (bsh)
          put(a.query, {b, 0, h * D + d}, x);
        else if (bnsd)
          put(a.query, {b, h, 0, d}, x);
        else
          put(a.query, {b, 0, h, d}, x);
      }
    }
  }

  // ---- lengths and the attended range of each batch ----
  const std::vector<int64_t>& lens = c.kv_lens;
  const int64_t max_len = c.max_len();
  std::vector<int64_t> seq_cap(B);  // S (or S_b in list mode, or the paged capacity)
  std::vector<int64_t> begin(B, 0), count(B);
  int64_t blocks_per_seq = 0;
  // Left padding applies only with lengths and batch-contiguous KV; otherwise it is silently
  // ignored (spec §2.7), and the data must be laid out as right padding.
  const bool padding_active = c.kv_padding >= 0 && c.pass_lengths && !c.list_mode && !c.paged;
  if (c.paged) {
    for (int64_t b = 0; b < B; ++b)
      blocks_per_seq = std::max(blocks_per_seq, ceil_div(lens[b], c.block_size));
    blocks_per_seq += 1;  // one spare slot per sequence, always -1
  }
  for (int64_t b = 0; b < B; ++b) {
    const int64_t slack = c.pass_lengths ? c.kv_slack : 0;
    if (c.paged)
      seq_cap[b] = blocks_per_seq * c.block_size;
    else if (c.list_mode)
      seq_cap[b] = lens[b] + slack + (c.pass_lengths ? (b % 3) * 4 : 0);
    else
      seq_cap[b] = max_len + slack;
    count[b] = lens[b];
    if (padding_active) {
      begin[b] = seq_cap[b] - c.kv_padding - lens[b];
      if (begin[b] < 0) count[b] = begin[b] = 0;
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
    put(*a.kv_padding_size, {0}, static_cast<double>(c.kv_padding));
  }

  // ---- key / value ----
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
    TensorView bt = alloc(DType::kInt32, {B, blocks_per_seq}, c.strided, -7);
    std::vector<std::vector<int32_t>> table(B, std::vector<int32_t>(blocks_per_seq, -1));
    int64_t next = 0;
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t i = 0; i < blocks_per_seq; ++i) {
        if (i < nb[b]) table[b][i] = perm[next++];
        put(bt, {b, i}, table[b][i]);
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
              put(k, {blk, n2, o, d}, kv_value(false));
              put(v, {blk, n2, o, d}, kv_value(true));
            } else {
              put(k, {blk, o, n2 * D + d}, kv_value(false));
              put(v, {blk, o, n2 * D + d}, kv_value(true));
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
      const int64_t S = seq_cap[t];
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
        for (int64_t j = begin[b]; j < begin[b] + count[b]; ++j) {
          for (int64_t n2 = 0; n2 < KVN; ++n2) {
            for (int64_t d = 0; d < D; ++d) {
              const double kx = kv_value(false), vx = kv_value(true);
              if (bsh) {
                put(k, {bi, j, n2 * D + d}, kx);
                put(v, {bi, j, n2 * D + d}, vx);
              } else if (bnsd) {
                put(k, {bi, n2, j, d}, kx);
                put(v, {bi, n2, j, d}, vx);
              } else {
                put(k, {bi, j, n2, d}, kx);
                put(v, {bi, j, n2, d}, vx);
              }
            }
          }
        }
      }
      a.key.push_back(k);
      a.value.push_back(v);
    }
  }

  // ---- mask and pse: columns are absolute positions; width = the largest S ----
  const int64_t width = *std::max_element(seq_cap.begin(), seq_cap.end()) + 2;
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
          // Any nonzero byte masks (spec §2.5): integer masks use arbitrary nonzero codes.
          if (x != 0 && c.mask_dtype != DType::kBool) x = 1 + static_cast<double>(rng.below(126));
          switch (m.rank) {
            case 2:
              put(m, {b, j}, x);
              break;
            case 3:
              put(m, {b, 0, j}, x);
              break;
            default:
              put(m, {b, h, 0, j}, x);
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
            used = used || (j >= begin[bb] && j < begin[bb] + count[bb]);
          }
          put(p, {b, h, 0, j}, used ? rng.normal() : kNaN);
        }
      }
    }
    a.pse_shift = p;
  }

  // ---- antiquant (int8 KV) ----
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
    for (int64_t i = 0; i < n; ++i) put_flat(sc, i, rng.uniform(0.005, 0.03));
    a.antiquant_scale = sc;
    if (c.antiquant_offset) {
      TensorView off = alloc(c.q_dtype, shape, c.strided, kNaN);
      for (int64_t i = 0; i < n; ++i) put_flat(off, i, rng.uniform(-8.0, 8.0));
      a.antiquant_offset = off;
    }
  }

  // ---- output, post-quant, lse ----
  {
    const std::vector<int64_t> shape = qshape();
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
    for (int64_t i = 0; i < n; ++i) put_flat(sc, i, rng.uniform(20.0, 70.0) / c.value_scale);
    a.quant_scale2 = sc;
    if (c.out_quant_offset) {
      TensorView off = alloc(st, shape, c.strided, kNaN);
      for (int64_t i = 0; i < n; ++i) put_flat(off, i, rng.uniform(-6.0, 6.0));
      a.quant_offset2 = off;
    }
  }
  if (c.lse) {
    buffers_.emplace_back(static_cast<size_t>(B * N) * sizeof(float));
    a.softmax_lse = TensorView::contiguous(buffers_.back().data(), DType::kFloat32, {B, N});
  }
  poison_outputs();
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
