// The one generated list of LightningIndexer test cases, shared by the reference test, the kernel
// sweep and the determinism test (and, once the operator is wired, the aclnn / C++ API tests).
//
// An LiCase is a plain description; its name() identifies it everywhere. LiCaseData builds
// deterministic inputs (the seed is a hash of the name), owns every buffer and exposes them as
// reference::LiCall. Every slot the operator must not read (keys past a length, unused cache
// blocks, block-table slots past a length, query / weight rows of padding rows, gaps of strided
// views) holds NaN (block ids: INT32_MAX), so a read of one shows in the output: a NaN score ranks
// first, and an index past the row's valid keys is an error of its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "kvflash/tensor.hpp"
#include "li_reference.hpp"
#include "support/ifa_cases.hpp"  // Tier, test_tier(), under_sanitizer()

namespace kvflash::testing {

enum class LiQLayout { kBsnd, kTnd };
enum class LiKLayout { kBsnd, kTnd, kPaBsnd };

/// What the key / query values look like.
enum class LiValues {
  kRandom,     ///< q, k, w ~ N(0, 1) (rounded to their dtypes)
  kTies,       ///< key rows drawn from a pool of 4 distinct rows and the zero row: groups of
               ///< exactly equal scores, straddling the sparse_count boundary
  kNonFinite,  ///< some keys with a NaN or +inf element, one weight per batch NaN (NaN scores)
};

/// Device data made bad after the build (D10): the reference and the kernel must fault the same
/// rows and name the same entry.
enum class LiFault {
  kNone,
  kBlockId,      ///< PA: a used block-table entry of the last batch out of range
  kKeyLength,    ///< a per-batch key length above the capacity (TND: a decreasing prefix sum)
  kQueryLength,  ///< BSND: a query length above S1; TND: a decreasing query prefix sum
};

struct LiCase {
  LiQLayout q_layout = LiQLayout::kBsnd;
  LiKLayout k_layout = LiKLayout::kBsnd;
  DType dtype = DType::kBFloat16;    ///< query and key
  DType w_dtype = DType::kFloat32;   ///< fp32 or dtype
  int64_t num_heads = 16;            ///< N1
  int64_t sparse_count = 64;         ///< K
  std::vector<int64_t> q_lens{1};    ///< per batch (B = size)
  std::vector<int64_t> kv_lens{64};  ///< per batch
  int64_t q_slack = 0;      ///< BSND: S1 = max q_len + q_slack; TND: rows past the last prefix sum
  int64_t kv_slack = 3;     ///< BSND: S2 = max kv_len + kv_slack; TND: extra rows; PA: spare blocks
  int64_t block_size = 16;  ///< PA only
  int64_t sparse_mode = 3;
  bool pass_q_lens = true;   ///< BSND query: give actual_seq_lengths_query (forced for TND)
  bool pass_kv_lens = true;  ///< BSND key: give actual_seq_lengths_key (forced for TND / PA)
  bool return_value = false;
  bool strided = false;  ///< non-contiguous, offset inputs (d stride 2 on query and key)
  DType lengths_dtype = DType::kInt32;  ///< of both length tensors: int32 or int64
  LiValues values = LiValues::kRandom;
  LiFault fault = LiFault::kNone;
  bool expect_mostly_empty = false;  ///< by design (almost) every row is -1
  std::string tag;

  int64_t batch() const { return static_cast<int64_t>(q_lens.size()); }
  std::string name() const;
  std::string test_name() const;
  /// Rough reference cost: sum over rows of valid keys x N1.
  int64_t work() const;
};

/// gtest printer: the case name instead of a byte dump.
void PrintTo(const LiCase& c, std::ostream* os);

/// Every case of a tier.
std::vector<LiCase> li_cases(Tier tier);
/// The cases of test_tier(), without the largest ones under sanitizers.
std::vector<LiCase> li_cases_for_run();

/// The inputs of one case: owns every buffer, exposes them as an LiCall.
class LiCaseData {
 public:
  explicit LiCaseData(const LiCase& c);
  LiCaseData(LiCaseData&&) = default;
  LiCaseData& operator=(LiCaseData&&) = default;

  const LiCase& spec() const { return case_; }
  const reference::LiCall& call() const { return call_; }
  reference::LiCall& mutable_call() { return call_; }
  /// Refills the outputs with a sentinel (indices 0x7eadbeef, values NaN).
  void poison_outputs();
  /// The bytes of sparse_indices and sparse_values (for bit-exact comparisons).
  std::vector<std::byte> output_bytes() const;
  int64_t num_blocks() const { return num_blocks_; }

 private:
  TensorView alloc(DType dtype, std::vector<int64_t> shape, bool strided, double fill);

  LiCase case_;
  reference::LiCall call_;
  int64_t num_blocks_ = 0;
  std::vector<std::vector<std::byte>> buffers_;
};

}  // namespace kvflash::testing
