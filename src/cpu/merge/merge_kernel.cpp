// merge_attention_states on the CPU (see merge_kernel.hpp and kvflash/merge.hpp for the math; the
// NaN-keeping max and the LSE are core/online_softmax.hpp's). Compiled with the library's baseline
// flags: plain fp32 IEEE arithmetic, no FMA contraction possible, kvflash's scalar exp (the
// IFA/SFA kernels' exp, lane for lane). The statistics (max, weights, L, LSE) are always computed
// here; the weighted sum of contiguous rows runs the active level's vector row kernel
// (merge_rows.hpp), which gives this file's portable loop's bits.
#include "cpu/merge/merge_kernel.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/half.hpp"
#include "core/online_softmax.hpp"
#include "cpu/isa.hpp"
#include "cpu/merge/merge_exp4.h"
#include "cpu/merge/merge_rows.hpp"
#include "cpu/simd_scalar.h"
#include "cpu/thread_pool.hpp"

namespace kvflash::cpu {
namespace scalar {
// clang-format off
#include "cpu/simd_math-inl.h"
#include "cpu/softmax_state.h"
// clang-format on
}  // namespace scalar

namespace {

using core::MergeData;
using core::MergeProblem;
using core::MergeRowStrides;

/// Output values accumulated at once (an fp32 stack buffer).
constexpr int64_t kChunk = 512;
/// Parts listed per row with their weights; more parts recompute theirs for each chunk (same
/// bits) and take the portable loop.
constexpr int64_t kWeightCache = 256;
/// Roughly the elements one parallel task reads.
constexpr int64_t kTaskElements = int64_t{1} << 15;

// fp32 elements are read and written through memcpy: a caller's tensors need not be 4-byte
// aligned (the validation checks strides and extents, not alignment), and x86 loads them the same.
inline float ld32(const void* base, int64_t i) {
  float x;
  std::memcpy(&x, static_cast<const std::byte*>(base) + i * int64_t{sizeof(float)}, sizeof(x));
  return x;
}

inline void st32(void* base, int64_t i, float x) {
  std::memcpy(static_cast<std::byte*>(base) + i * int64_t{sizeof(float)}, &x, sizeof(x));
}

inline float load(const void* base, DType dt, int64_t i) {
  if (dt == DType::kFloat32) return ld32(base, i);
  uint16_t h;
  std::memcpy(&h, static_cast<const uint16_t*>(base) + i, sizeof(h));
  return dt == DType::kBFloat16 ? core::bf16_to_float(h) : core::fp16_to_float(h);
}

inline void store(void* base, DType dt, int64_t i, float x) {
  if (dt == DType::kFloat32) {
    st32(base, i, x);
    return;
  }
  const uint16_t h = dt == DType::kBFloat16 ? core::float_to_bf16(x) : core::float_to_fp16(x);
  std::memcpy(static_cast<uint16_t*>(base) + i, &h, sizeof(h));
}

inline int64_t offset(const int64_t* idx, const MergeRowStrides& s, int rank) {
  int64_t o = 0;
  for (int i = 0; i < rank; ++i) o += idx[i] * s.s[i];
  return o;
}

inline bool aligned(const void* p, int64_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % static_cast<uintptr_t>(bytes) == 0;
}

class RowMerge {
 public:
  /// Row r, whose index over the row dims is idx (merge_run steps it from row to row).
  RowMerge(const MergeProblem& p, const MergeData& d, int64_t r, const int64_t* idx,
           MergeRowFn row_fn)
      : p_(p), d_(d), r_(r), row_fn_(row_fn) {
    o_po_ = offset(idx, p.po, p.row_rank);
    o_pm_ = offset(idx, p.pm, p.row_rank);
    o_ps_ = offset(idx, p.ps, p.row_rank);
    o_sink_ = offset(idx, p.sink, p.row_rank);
  }

  void run() {
    const MergeProblem& p = p_;
    // Pass 1: the overall max M over the non-empty parts (and the sink), NaN-keeping; the live
    // parts below kWeightCache listed in part order, w_ holding their statistic for now.
    float m = core::kSoftmaxNegInf;
    bool any = false;
    for (int64_t k = 0; k < p.num_parts; ++k) {
      const float s = stat(k);
      if (empty(k, s)) continue;
      m = core::softmax_max_nan(m, s);
      any = true;
      if (k < kWeightCache) {
        live_[n_live_] = k;
        w_[n_live_++] = s;
      }
    }
    const float sink = p.has_sink ? ld32(d_.sink, o_sink_) : 0.0f;
    if (p.has_sink) m = core::softmax_max_nan(m, sink);
    if (!any && !p.has_sink) {
      write_empty();
      return;
    }
    m_ = m;
    // Pass 2: the weights and their sum L, in part order; the sink's term last.
    listed_weights();
    float l = 0.0f;
    for (int64_t j = 0; j < n_live_; ++j) l += w_[j];
    for (int64_t k = kWeightCache; k < p.num_parts; ++k) {
      if (!empty(k, stat(k))) l += weight(k);
    }
    if (p.has_sink) l += scalar::exp_scalar(sink - m);  // exp(-inf - -inf) = NaN, as SFA's
    l_ = l;
    // Pass 3: sum_k w_k * o_k / L.
    if (!vector_rows()) portable_rows();
    if (d_.out_lse != nullptr) {
      st32(d_.out_lse, r_, core::softmax_lse(m, l, scalar::SoftmaxLog{}));
    }
    if (d_.out_max != nullptr) {
      st32(d_.out_max, r_, m);
      st32(d_.out_sum, r_, l);
    }
  }

 private:
  const std::byte* part_row(int64_t k, int64_t esize) const {
    const std::byte* part =
        p_.parts ? static_cast<const std::byte*>(d_.part_out[k].base())
                 : static_cast<const std::byte*>(d_.partial_out) + k * p_.po_k * esize;
    return part + o_po_ * esize;
  }

  /// Pass 3 through the active level's row kernel: contiguous D, naturally aligned rows and
  /// output, every live part listed. Returns false (nothing written) otherwise.
  bool vector_rows() {
    const MergeProblem& p = p_;
    if (row_fn_ == nullptr || p.po_d != 1 || p.num_parts > kWeightCache) return false;
    const int64_t esize = static_cast<int64_t>(dtype_size(p.part_dtype));
    const int64_t osize = static_cast<int64_t>(dtype_size(p.out_dtype));
    auto* out = static_cast<std::byte*>(d_.out) + r_ * p.head_dim * osize;
    if (!aligned(out, osize)) return false;
    for (int64_t j = 0; j < n_live_; ++j) {
      rows_[j] = part_row(live_[j], esize);
      if (!aligned(rows_[j], esize)) return false;
    }
    row_fn_(MergeRowJob{rows_, w_, n_live_, p.head_dim, l_, out, p.part_dtype, p.out_dtype});
    return true;
  }

  /// Pass 3 in portable code: kChunk values at a time through an fp32 buffer, any strides.
  void portable_rows() {
    const MergeProblem& p = p_;
    const float l = l_;
    const int64_t dim = p.head_dim;
    const int64_t esize = static_cast<int64_t>(dtype_size(p.part_dtype));
    alignas(64) float acc[kChunk];
    for (int64_t d0 = 0; d0 < dim; d0 += kChunk) {
      const int64_t n = std::min(kChunk, dim - d0);
      std::fill(acc, acc + n, 0.0f);
      auto add = [&](int64_t k, float w) {
        const void* row = part_row(k, esize) + d0 * p.po_d * esize;
        if (p.part_dtype == DType::kFloat32 && p.po_d == 1) {
          for (int64_t i = 0; i < n; ++i) acc[i] += w * ld32(row, i);
        } else {
          for (int64_t i = 0; i < n; ++i) acc[i] += w * load(row, p.part_dtype, i * p.po_d);
        }
      };
      for (int64_t j = 0; j < n_live_; ++j) add(live_[j], w_[j]);
      for (int64_t k = kWeightCache; k < p.num_parts; ++k) {
        if (!empty(k, stat(k))) add(k, weight(k));
      }
      const int64_t base = r_ * dim + d0;
      if (p.out_dtype == DType::kFloat32) {
        for (int64_t i = 0; i < n; ++i) st32(d_.out, base + i, acc[i] / l);
      } else {
        for (int64_t i = 0; i < n; ++i) store(d_.out, p.out_dtype, base + i, acc[i] / l);
      }
    }
  }

  float stat(int64_t k) const {
    return p_.parts ? ld32(d_.part_lse[k].base(), o_pm_) : ld32(d_.partial_m, k * p_.pm_k + o_pm_);
  }
  float part_sum(int64_t k) const { return ld32(d_.partial_sum, k * p_.ps_k + o_ps_); }
  /// An empty part (nothing attended): lse -inf, or sum 0 (s is its stat(k)). Never read further.
  bool empty(int64_t k, float s) const {
    return p_.lse_form ? s == core::kSoftmaxNegInf : part_sum(k) == 0.0f;
  }
  float weight(int64_t k) const { return weight_of(k, scalar::exp_scalar(stat(k) - m_)); }
  float weight_of(int64_t k, float e) const { return p_.lse_form ? e : part_sum(k) * e; }
  /// The listed parts' weights in place of their statistics, the exps four at a time straight
  /// from w_ (sse2::vexp: exp_scalar's bits in every lane; lanes past the list compute exp(0)).
  /// Once the weighted sum runs vectorised, one scalar exp per part costs more than the sum.
  void listed_weights() {
    for (int i = 0; i < sse2::kLanes - 1; ++i) w_[n_live_ + i] = m_;
    const sse2::Vec m = sse2::vset1(m_);
    for (int64_t j = 0; j < n_live_; j += sse2::kLanes) {
      sse2::vstore(w_ + j, sse2::vexp(sse2::vsub(sse2::vload(w_ + j), m)));
    }
    if (!p_.lse_form) {
      for (int64_t j = 0; j < n_live_; ++j) w_[j] = weight_of(live_[j], w_[j]);
    }
  }
  /// No part attended anything and there is no sink: zeros, lse -inf, max = sum = 0.
  void write_empty() {
    for (int64_t i = 0; i < p_.head_dim; ++i) {
      store(d_.out, p_.out_dtype, r_ * p_.head_dim + i, 0.0f);
    }
    if (d_.out_lse != nullptr) st32(d_.out_lse, r_, core::kSoftmaxNegInf);
    if (d_.out_max != nullptr) {
      st32(d_.out_max, r_, 0.0f);
      st32(d_.out_sum, r_, 0.0f);
    }
  }

  const MergeProblem& p_;
  const MergeData& d_;
  const int64_t r_;
  const MergeRowFn row_fn_;
  int64_t o_po_ = 0, o_pm_ = 0, o_ps_ = 0, o_sink_ = 0;
  float m_ = core::kSoftmaxNegInf;
  float l_ = 0.0f;
  // The live parts below kWeightCache in part order (their count, indices, weights, rows).
  int64_t n_live_ = 0;
  int64_t live_[kWeightCache];
  float w_[kWeightCache + sse2::kLanes - 1];
  const std::byte* rows_[kWeightCache];
};

struct Run {
  const MergeProblem* p;
  const MergeData* d;
  int64_t rows_per_task;
  MergeRowFn row_fn;
};

}  // namespace

MergeRowFn merge_row_fn(Isa isa) {
  if (isa >= Isa::kAvx512) return avx512::merge_row;
  if (isa >= Isa::kAvx2) return avx2::merge_row;
  return nullptr;
}

Status merge_run(const MergeProblem& p, const MergeData& d, const core::RunContext& ctx) {
  if (p.num_rows == 0) return Status::kSuccess;
  const int num_threads = ctx.num_threads;
  const int64_t per_row = std::max<int64_t>(1, p.num_parts * p.head_dim);
  const int64_t rows_per_task = std::max<int64_t>(1, kTaskElements / per_row);
  const int64_t tasks = (p.num_rows + rows_per_task - 1) / rows_per_task;
  const int threads = num_threads > 0 ? num_threads : default_num_threads();
  const Run run{&p, &d, rows_per_task, merge_row_fn(active_isa())};
  // The lambda captures one pointer, so std::function keeps it inline (no allocation).
  parallel_for(tasks, threads, [r = &run](int64_t task, int) {
    const int64_t begin = task * r->rows_per_task;
    const int64_t end = std::min(r->p->num_rows, begin + r->rows_per_task);
    // The row's index over the row dims, stepped from row to row.
    const core::MergeProblem& p = *r->p;
    int64_t idx[core::kMergeMaxRowDims] = {};
    int64_t rest = begin;
    for (int i = p.row_rank - 1; i >= 0; --i) {
      idx[i] = rest % p.row_dims[i];
      rest /= p.row_dims[i];
    }
    for (int64_t row = begin; row < end; ++row) {
      RowMerge(p, *r->d, row, idx, r->row_fn).run();
      for (int i = p.row_rank - 1; i >= 0 && ++idx[i] == p.row_dims[i]; --i) idx[i] = 0;
    }
  });
  return Status::kSuccess;
}

}  // namespace kvflash::cpu
