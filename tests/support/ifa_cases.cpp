#include "support/ifa_cases.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "support/test_rng.hpp"

namespace kvflash::testing {
namespace {

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

}  // namespace

const char* ifa_layout_name(IfaLayout l) {
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
  s += std::string(":") + ifa_layout_name(layout);
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

}  // namespace kvflash::testing
