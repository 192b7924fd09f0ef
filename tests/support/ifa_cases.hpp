// The one generated list of IFA test cases, shared by every kernel-vs-reference sweep.
//
// An IfaCase is a plain description (shapes, dtypes, features); its name() is the short string that
// identifies it everywhere (test names, failure messages, benchmarks). IfaCaseData builds
// deterministic pseudo-random inputs for a case (the seed is a hash of the name), owns every
// buffer and exposes them as kvflash::IfaArgs. Every slot the operator must not read (positions
// beyond a length, the left-padding region, unused blocks, gaps of strided views) holds NaN/inf (or
// extreme int8 values), so a read that leaks into the output shows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "kvflash/ifa.hpp"
#include "support/test_rng.hpp"

namespace kvflash::testing {

enum class IfaLayout { kBsh, kBsnd, kBnsd };
/// Mask shapes of docs/semantics.md §2.2 (S = mask width).
enum class MaskShape { kNone, kBS, kB1S, kB11S, kBN1S, k1N1S, k111S };
/// pseShift batch dim: B or 1 (broadcast).
enum class PseShape { kNone, kBatch, kBroadcast };
enum class QuantMode { kNone, kPerTensor, kPerChannel };

struct IfaCase {
  IfaLayout layout = IfaLayout::kBsh;
  DType q_dtype = DType::kFloat16;
  DType kv_dtype = DType::kFloat16;
  DType out_dtype = DType::kFloat16;
  int64_t batch = 1, num_heads = 1, num_kv_heads = 1, head_dim = 64;
  /// Per-batch KV lengths (size batch).
  std::vector<int64_t> kv_lens{1};
  /// Extra positions in the KV tensors beyond the longest sequence (never attended).
  int64_t kv_slack = 3;
  bool pass_lengths = true;       ///< give actual_seq_lengths (forced for paged KV)
  bool broadcast_length = false;  ///< actual_seq_lengths of length 1 (all kv_lens must be equal)
  bool kvn_attr_zero = false;     ///< pass num_key_value_heads = 0 (requires num_kv_heads == N)

  MaskShape mask = MaskShape::kNone;
  DType mask_dtype = DType::kBool;
  bool mask_full_rows = false;  ///< some rows (a batch, or a head for per-head masks) fully masked

  PseShape pse = PseShape::kNone;

  bool paged = false;
  bool cache_bnsd = false;  ///< 4-D cache (blocks, KV_N, block_size, D); layout must be BNSD
  int64_t block_size = 0;

  QuantMode antiquant = QuantMode::kNone;  ///< required for int8 KV
  int antiquant_shape = 0;                 ///< per-channel shape variant 0..3
  bool antiquant_offset = true;

  QuantMode out_quant = QuantMode::kNone;  ///< required for int8 output
  int out_quant_shape = 0;                 ///< per-channel shape variant 0..7
  bool out_quant_offset = true;
  bool out_quant_bf16 = false;  ///< bf16 quant_scale2 (bf16 query only); fp32 otherwise

  int64_t kv_padding = -1;  ///< >= 0: kv_padding_size given (left padding)
  bool list_mode = false;   ///< key/value as B tensors with differing S
  bool strided = false;     ///< non-contiguous, offset inputs and an unaligned output pointer

  bool lse = false;                ///< request softmax_lse
  bool zero_fully_masked = false;  ///< zero_fully_masked_rows

  double logit_scale = 1.5;          ///< scale_value = logit_scale / sqrt(D) (q, k ~ N(0, 1))
  double value_scale = 1.0;          ///< V ~ N(0, value_scale^2)
  std::string tag;                   ///< appended to the name to tell apart otherwise equal cases
  bool expect_mostly_empty = false;  ///< the output is legitimately (almost) all zeros/offsets

  std::string name() const;
  /// The name with every character outside [A-Za-z0-9_] replaced by '_' (for gtest).
  std::string test_name() const;
  int64_t max_len() const;
  /// Rough cost (B * N * max_len * D) used for size caps.
  int64_t work() const;
  /// "" if the description is self-consistent (the builder's preconditions), else what is wrong.
  /// It does not judge the operator's own rules: a case may describe input the operator rejects.
  std::string inconsistency() const;
};

/// "BSH" | "BSND" | "BNSD".
const char* ifa_layout_name(IfaLayout layout);

/// gtest prints a case by its name.
inline void PrintTo(const IfaCase& c, std::ostream* os) { *os << c.name(); }

enum class Tier { kSmoke, kCi, kFull };
/// KVFLASH_TEST_TIER = smoke | ci | full (default ci).
Tier test_tier();
/// True when built with AddressSanitizer or ThreadSanitizer.
bool under_sanitizer();
/// Every case of a tier.
std::vector<IfaCase> ifa_cases(Tier tier);
/// The cases of test_tier(), without those above the sanitizer size cap when under_sanitizer().
std::vector<IfaCase> ifa_cases_for_run();

/// The inputs of one case: owns every buffer, exposes them as IfaArgs.
class IfaCaseData {
 public:
  explicit IfaCaseData(const IfaCase& c);
  IfaCaseData(IfaCaseData&&) = default;
  IfaCaseData& operator=(IfaCaseData&&) = default;
  IfaCaseData(const IfaCaseData&) = delete;
  IfaCaseData& operator=(const IfaCaseData&) = delete;

  const IfaCase& spec() const { return case_; }
  const IfaArgs& args() const { return args_; }
  /// For tests that alter one argument (e.g. a bad block id); the buffers stay owned here.
  IfaArgs& mutable_args() { return args_; }
  /// Refills attention_out (and softmax_lse) with a NaN-like sentinel pattern.
  void poison_outputs();
  /// The bytes of attention_out and softmax_lse (for bit-exact comparisons).
  std::vector<std::byte> output_bytes() const;
  std::vector<std::byte> lse_bytes() const;
  /// Number of blocks in the paged cache (0 when not paged).
  int64_t num_blocks() const { return num_blocks_; }

 private:
  TensorView alloc(DType dtype, std::vector<int64_t> shape, bool strided, double poison);
  std::vector<int64_t> query_shape() const;
  // The parts of the constructor, in order; each fills its arguments of args_.
  void build_query(TestRng& rng);
  void build_lengths();         // lengths, attended ranges, kv_padding_size
  void build_kv(TestRng& rng);  // key/value (contiguous, list or paged) and block table
  void build_mask_pse(TestRng& rng);
  void build_quant(TestRng& rng);    // antiquant scale/offset
  void build_outputs(TestRng& rng);  // attention_out, quant_scale2/offset2, softmax_lse

  IfaCase case_;
  IfaArgs args_;
  int64_t num_blocks_ = 0;
  // Per batch: S (S_b in list mode, the capacity when paged) and the attended [begin, begin+count).
  std::vector<int64_t> seq_cap_, begin_, count_;
  int64_t blocks_per_seq_ = 0;
  std::vector<std::vector<std::byte>> buffers_;
};

}  // namespace kvflash::testing
