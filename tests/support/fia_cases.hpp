// The one generated list of PFA / FIA test cases (tiers smoke / ci / full via KVFLASH_TEST_TIER),
// shared by the reference test and every kernel sweep, like tests/support/ifa_cases.hpp for IFA.
//
// A FiaCase is a plain description; name() identifies it everywhere. FiaCaseData builds
// deterministic pseudo-random inputs (seed = hash of the name), owns every buffer and exposes them
// as reference::FiaCall. Every slot the operator must not read (rows and positions past a length,
// left-padding regions, unused blocks, the compressed mask's contents) holds NaN (int8: 127, masks:
// 1), so a read that leaks into the output shows. It also keeps a *logical* copy of what each
// batch attends (queries, dequantised keys and values, mask and pse per (row, position)), built by
// its own layout code, for tests that compute attention independently of the reference.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "fia_reference.hpp"
#include "support/ifa_cases.hpp"  // Tier, test_tier(), under_sanitizer()

namespace kvflash::testing {

enum class FiaLayout { kBsh, kBsnd, kBnsd, kTnd, kNtd };
/// The output half of input_layout: kSame, or BNSD_BSND, *_NBSD (from BSH/BSND/BNSD), TND_NTD,
/// NTD_TND.
enum class FiaOut { kSame, kBsnd, kNbsd, kNtd, kTnd };
/// kFull2: (S1, S2); kFull3: (B, S1, S2); kFull4: (1, 1, S1, S2); kCompressed: 2048x2048 (modes
/// 2-4); kIfaBS: IFA's (B, S) decode mask.
enum class FiaMask { kNone, kFull2, kFull3, kFull4, kCompressed, kIfaBS };
enum class FiaAntiquant {
  kNone,
  kCombinedChannel,  ///< antiquant_scale (2, KV_N, 1, D), mode 0
  kCombinedTensor,   ///< antiquant_scale (2,), mode 0
  kCombinedToken,    ///< antiquant_scale (2, B, S2), mode 1
  kSplitChannel,     ///< key_/value_antiquant_scale (KV_N, D), modes 0/0
  kSplitToken,       ///< key_/value_antiquant_scale (1, B, S2), modes 1/1
};
enum class FiaOutQuant { kNone, kPerTensor, kPerChannel };

struct FiaCase {
  bool prompt = false;  ///< PromptFlashAttention (no decode branch)
  FiaLayout layout = FiaLayout::kBsnd;
  FiaOut out = FiaOut::kSame;
  DType q_dtype = DType::kFloat16;
  DType kv_dtype = DType::kFloat16;  ///< int8 requires antiquant
  DType out_dtype = DType::kFloat16;  ///< int8 requires out_quant
  int64_t num_heads = 1, num_kv_heads = 1;
  int64_t head_dim = 64;   ///< query / key D (without rope)
  int64_t value_dim = 0;   ///< 0 = head_dim
  int64_t rope_dim = 0;    ///< MLA query_rope / key_rope D (0 = none)
  bool value_is_key = false;  ///< MLA absorbed decode: value is the key tensor (value_dim = head_dim)
  std::vector<int64_t> q_lens{1}, kv_lens{1};  ///< per batch (actual lengths)
  int64_t q_slack = 0;   ///< S1 beyond the longest q_len (B/S layouts); TND: rows past the last
  int64_t kv_slack = 3;  ///< S2 beyond the longest kv_len (never attended)
  bool pass_q_lens = true, pass_kv_lens = true;  ///< B/S layouts: give actual_seq_lengths(_kv)
  int64_t sparse_mode = 0;
  int64_t pre_tokens = reference::kFiaTokensMax, next_tokens = reference::kFiaTokensMax;
  FiaMask mask = FiaMask::kNone;
  /// kCompressed's rank: (2048, 2048), (1, 2048, 2048) or (1, 1, 2048, 2048) (D3).
  int compressed_rank = 2;
  bool mask_full_rows = false;  ///< some rows of the full mask entirely masked
  bool pse = false;             ///< pse_shift (B, N, S1, S2)
  bool paged = false;
  bool cache_bnsd = false;  ///< BnNBsD cache (else BnBsH)
  int64_t block_size = 16;
  FiaAntiquant antiquant = FiaAntiquant::kNone;
  FiaOutQuant out_quant = FiaOutQuant::kNone;
  int64_t q_padding = -1, kv_padding = -1;  ///< >= 0: query/kv_padding_size (left padding)
  int64_t prefix_len = 0;                   ///< shared prefix length (key_shared_prefix S)
  bool list_mode = false;                   ///< key/value as B tensors
  bool lse = false, sink = false;
  double logit_scale = 1.5;  ///< scale = logit_scale / sqrt(D + Dr)
  std::string tag;
  /// Most rows legitimately see nothing (a narrow band with a random mask, S1 > S2 in mode 3).
  bool expect_mostly_empty = false;

  int64_t batch() const { return static_cast<int64_t>(q_lens.size()); }
  int64_t dv() const { return value_dim == 0 ? head_dim : value_dim; }
  bool tnd() const { return layout == FiaLayout::kTnd || layout == FiaLayout::kNtd; }
  int64_t max_q() const;
  int64_t max_kv() const;
  std::string input_layout() const;  ///< e.g. "BNSD_BSND"
  std::string name() const;
  std::string test_name() const;  ///< name() with [^A-Za-z0-9_] -> '_'
  int64_t work() const;           ///< sum_b N * q_len * kv_len * (D + Dv)
};

inline void PrintTo(const FiaCase& c, std::ostream* os) { *os << c.name(); }

/// Every case of a tier.
std::vector<FiaCase> fia_cases(Tier tier);
/// The cases of test_tier() (under sanitizers without the largest).
std::vector<FiaCase> fia_cases_for_run();

/// The logical view of one batch, as the builder wrote it (values exactly as stored).
struct FiaLogicalBatch {
  int64_t q_len = 0, kv_len = 0;  ///< S1_b and S2_b (S2_b includes the shared prefix)
  std::vector<double> q;     ///< [q_len][N][D + Dr]
  std::vector<double> k;     ///< [KV_N][kv_len][D + Dr], dequantised
  std::vector<double> v;     ///< [KV_N][kv_len][Dv], dequantised
  std::vector<uint8_t> mask;  ///< [q_len][kv_len] full-mask values (empty without a full mask)
  std::vector<double> pse;    ///< [N][q_len][kv_len] (empty without pse)
  std::vector<int64_t> rows;  ///< [q_len]: the query row r (as reference::FiaReference counts)
};

class FiaCaseData {
 public:
  explicit FiaCaseData(const FiaCase& c);
  FiaCaseData(FiaCaseData&&) = default;
  FiaCaseData& operator=(FiaCaseData&&) = default;

  const FiaCase& spec() const { return case_; }
  const reference::FiaCall& call() const { return call_; }
  reference::FiaCall& mutable_call() { return call_; }
  const std::vector<FiaLogicalBatch>& logical() const { return logical_; }
  const std::vector<double>& sink() const { return sink_; }
  double scale() const { return static_cast<double>(static_cast<float>(call_.scale)); }
  int64_t rows() const { return rows_; }  ///< query rows (B*S1 or T)
  void poison_outputs();

 private:
  TensorView alloc(DType dtype, std::vector<int64_t> shape, double fill);

  FiaCase case_;
  reference::FiaCall call_;
  std::vector<FiaLogicalBatch> logical_;
  std::vector<double> sink_;
  int64_t rows_ = 0;
  std::vector<std::vector<std::byte>> buffers_;
};

/// Compares call.attention_out (and softmax_lse) with the reference on every element. Tolerance
/// (docs/semantics.md §0.2 item 3): |got - want| <= rtol * (|want| + v_absmax of the row) with rtol of the
/// output dtype (fp16 2^-10, bf16 2^-7, fp32 2^-16); int8 within 1 LSB; empty / padding rows
/// exactly 0 (int8: sat(round(offset))); LSE within 2^-14 relative-or-absolute, +inf exactly.
/// `worst` (if not null) receives the largest |err| / bound seen.
::testing::AssertionResult compare_fia_output(const std::string& name,
                                              const reference::FiaCall& call,
                                              const reference::FiaReference& ref,
                                              double* worst = nullptr,
                                              bool allow_mostly_empty = false);

}  // namespace kvflash::testing
