// The one generated list of SFA test cases, shared by the kernel sweep, the determinism test and
// the aclnn tests.
//
// An SfaCase is a plain description; its name() identifies it everywhere. SfaCaseData builds
// deterministic inputs (the seed is a hash of the name), owns every buffer and exposes them as
// kvflash::SfaArgs. Every KV slot that no row selects (beyond the lengths, unselected positions
// inside them, unused cache blocks, gaps of strided views) holds NaN, so any read of a slot the
// operator must not use shows in the output.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "kvflash/sfa.hpp"
#include "support/ifa_cases.hpp"  // Tier, test_tier(), under_sanitizer()

namespace kvflash::testing {

enum class SfaQLayout { kBsnd, kTnd };
enum class SfaKvLayout { kBsnd, kTnd, kPaBsnd };

/// How each row's sparse_indices are filled (docs/semantics.md §3.4 step 2).
enum class SfaIndexPattern {
  kClean,           ///< distinct in-range block ids first, then -1 padding
  kMixed,           ///< also out-of-range ids, duplicates, values < -1, valid ids past validCount
  kMinusOneMiddle,  ///< a -1 in the middle followed by valid ids (which must be ignored)
  kSomeEmpty,  ///< like kMixed, but every third row selects nothing (-1 first or all out of range)
};

struct SfaCase {
  SfaQLayout q_layout = SfaQLayout::kBsnd;
  SfaKvLayout kv_layout = SfaKvLayout::kBsnd;
  DType dtype = DType::kFloat16;
  int64_t num_heads = 16;    ///< N1
  int64_t sparse_size = 64;  ///< K
  int64_t sparse_block_size = 1;
  std::vector<int64_t> q_lens{1};    ///< per batch (B = size)
  std::vector<int64_t> kv_lens{64};  ///< per batch
  int64_t q_slack = 0;   ///< BSND: S1 = max q_len + q_slack (> 0 forces actual_seq_lengths_query)
  int64_t kv_slack = 5;  ///< BSND: S2 = max kv_len + kv_slack; TND: extra rows; PA: spare blocks
  int64_t block_size = 16;  ///< PA only
  int64_t sparse_mode = 3;
  SfaIndexPattern indices = SfaIndexPattern::kMixed;
  bool sinks = false;
  double sink_scale = 2.0;  ///< sinks ~ N(0, sink_scale^2)
  bool lse = false;
  bool fp32_out = false;  ///< fp32 attention_out (kvflash extension; not through aclnn)
  bool value_separate = false;  ///< pass a value tensor distinct from key (else value = null)
  bool strided = false;         ///< non-contiguous, offset inputs
  bool pass_kv_lens = true;     ///< BSND KV: give actual_seq_lengths_kv (forced for TND/PA)
  DType lengths_dtype = DType::kInt32;  ///< of both length tensors: int32 or int64
  double logit_scale = 1.5;     ///< scale_value = logit_scale / sqrt(576), q, k ~ N(0, 1)
  bool expect_mostly_empty = false;
  std::string tag;

  int64_t batch() const { return static_cast<int64_t>(q_lens.size()); }
  std::string name() const;
  std::string test_name() const;
  /// Rough reference cost: rows * N1 * K * sparse_block_size.
  int64_t work() const;
};

/// gtest printer: the case name instead of a byte dump.
void PrintTo(const SfaCase& c, std::ostream* os);

/// Every case of a tier.
std::vector<SfaCase> sfa_cases(Tier tier);
/// The cases of test_tier(), without the largest ones under sanitizers.
std::vector<SfaCase> sfa_cases_for_run();

/// The inputs of one case: owns every buffer, exposes them as SfaArgs.
class SfaCaseData {
 public:
  explicit SfaCaseData(const SfaCase& c);
  SfaCaseData(SfaCaseData&&) = default;
  SfaCaseData& operator=(SfaCaseData&&) = default;

  const SfaCase& spec() const { return case_; }
  const SfaArgs& args() const { return args_; }
  SfaArgs& mutable_args() { return args_; }
  /// Refills the outputs with a NaN sentinel.
  void poison_outputs();
  /// The bytes of attention_out, softmax_max and softmax_sum (for bit-exact comparisons).
  std::vector<std::byte> output_bytes() const;
  int64_t num_blocks() const { return num_blocks_; }
  /// The (block-table) positions of batch b's logical block slot (PA only), for tests that
  /// corrupt one entry.
  int32_t* block_table_entry(int64_t b, int64_t slot);

 private:
  TensorView alloc(DType dtype, std::vector<int64_t> shape, bool strided, double fill);

  SfaCase case_;
  SfaArgs args_;
  int64_t num_blocks_ = 0;
  std::vector<std::vector<std::byte>> buffers_;
};

}  // namespace kvflash::testing
