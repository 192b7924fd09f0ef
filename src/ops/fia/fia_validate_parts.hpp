// What the FIA validator's files share: the shape of the call as the first checks derive it, the
// checks of each argument group that fia::validate (fia_validate.cpp) calls in order, and the
// helpers they share. Internal to src/ops/fia.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kvflash/fia.hpp"
#include "kvflash/status.hpp"
#include "ops/fia/fia_problem.hpp"

namespace kvflash::fia {

/// (batch, row, head) element strides of a tensor in one layout.
struct FiaStrides {
  int64_t batch = 0, row = 0, head = 0;
};

/// The call's geometry, from the checks of query, key / value and the host lengths.
struct FiaShape {
  std::string in, out;  ///< query and output layouts ("BSH", "BSND", "BNSD", "NBSD", "TND", "NTD")
  bool tnd = false, decode = false, paged = false, list = false, rope = false;
  int64_t B = 0, S1 = 0, T = 0, N = 0, KVN = 0, D = 0, Dv = 0, Dr = 0;
  int64_t S2 = 0;                          ///< the key tensor's S (non-paged, non-list)
  int64_t P = 0;                           ///< shared prefix length
  int64_t capacity = 0;                    ///< paged: block_table columns * block_size
  std::vector<int64_t> q_len, kv_len;      ///< per batch (kv_len without the prefix)
  std::vector<int64_t> q_first, kv_first;  ///< TND: cumulative starts (else 0)
  int64_t max_q = 0, max_kv = 0;
  /// Mask / pse columns a row may read (prefix first): P + the key S, the paged capacity or the
  /// longest TND length.
  int64_t columns = 0;
};

/// D4, the decode branch, written once: FIA (not PFA) with a query S of 1, no rope and a B/S query
/// layout (BSH, BSND or BNSD, any output variant). Upstream: the FIA documents' "Q_S为1且不带rope
/// 输入时，sparseMode参数无效" and "preTokens / nextTokens: Q_S为1时该参数无效"; the torch_npu
/// document's "当query矩阵的S=1，进入IncreFlashAttention分支". On it sparse_mode, pre_tokens and
/// next_tokens are ignored, no mask is needed and a full mask has IFA's shapes (check_mask,
/// docs/fia-semantics.md); the query lengths are ignored (check_lengths). The route
/// (plan_decode, core::fia_band) reads the same FiaShape::decode / FiaProblem::decode that
/// check_query sets from this.
inline bool decode_branch(const FiaArgs& a, const FiaShape& s) {
  return !a.prompt && !s.rope && !s.tnd && s.S1 == 1;
}

inline constexpr int64_t kMaxHeadDim = 512;
inline constexpr int64_t kRopeDim = 64;
inline constexpr int64_t kMaxHeads = 1024;  // far above upstream's 256; keeps N x D products small
/// The finest key tiling the size bound (check_size, fia_validate_problem.cpp) counts in: the CPU prefill kernel's
/// (cpu::kFiaKeyTile).
inline constexpr int64_t kSizeTile = 64;

Status invalid(const std::string& msg);
Status refused(const std::string& feature);

/// The element strides of t in layout l ("BSH" heads of D elements).
FiaStrides layout_strides(const TensorView& t, const std::string& l, int64_t D);
/// d (the last dim) must be contiguous: the kernels read rows of D elements.
Status check_rows(const TensorView& v, const char* name);
/// Dims of a tensor in the query layout `l` with `n` heads of `d` (batch b, sequence s; -1: any).
Status expect_layout(const TensorView& v, const char* name, const std::string& l, int64_t b,
                     int64_t s, int64_t n, int64_t d);
/// S of a tensor in layout l (T for TND / NTD).
int64_t seq_dim(const TensorView& v, const std::string& l);

/// The argument groups, in validation order (fia_validate_attrs.cpp, fia_validate_tensors.cpp,
/// fia_validate_lengths.cpp); each fills its part of s.
Status check_refused(const FiaArgs& a);
Status check_attributes(const FiaArgs& a, FiaShape* s);
Status check_query(const FiaArgs& a, FiaShape* s);
Status check_kv(const FiaArgs& a, FiaShape* s);
Status check_outputs(const FiaArgs& a, const FiaShape& s);
Status check_lengths(const FiaArgs& a, FiaShape* s);
Status check_rope_prefix(const FiaArgs& a, FiaShape* s);

/// The optional parts, in validation order; each fills its part of p.
Status check_mask(const FiaArgs& a, const FiaShape& s, core::FiaProblem* p, int64_t* mask_batch);
Status check_pse(const FiaArgs& a, const FiaShape& s, core::FiaProblem* p, int64_t* pse_batch);
Status check_antiquant(const FiaArgs& a, const FiaShape& s, core::FiaProblem* p);
Status check_post_quant(const FiaArgs& a, const FiaShape& s, core::FiaProblem* p);
Status check_sink(const FiaArgs& a, const FiaShape& s, core::FiaProblem* p);

/// The bound on what the workspace derives from, and the problem of a validated call
/// (fia_validate_problem.cpp).
Status check_size(const FiaShape& s);
void fill_problem(const FiaArgs& a, const FiaShape& s, int64_t mask_batch, int64_t pse_batch,
                  core::FiaProblem* pr);

/// D4: when the call is a decode step the decode kernels take (the decode branch, or a TND call's
/// leading requests of one row each; fia_validate_decode.cpp's decode_route), p->ifa holds its
/// decode description and p->use_ifa is set; otherwise the prefill kernel runs it.
Status plan_decode(const FiaArgs& a, const FiaShape& s, core::FiaProblem* p);

}  // namespace kvflash::fia
