#include "bench_fia.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <vector>

#include "demo_util.hpp"
#include "fia_reference.hpp"
#include "kvflash/fia.hpp"

namespace kvflash::tools {
namespace {

constexpr int64_t kCheckRows = 16;  // query rows of the first sequence checked against fp64
constexpr int64_t kMaskSide = 2048;

uint16_t to_16bit(float x, DType dtype) {
  return dtype == DType::kFloat16 ? core::float_to_fp16(x) : core::float_to_bf16(x);
}
float from_16bit(uint16_t x, DType dtype) {
  return dtype == DType::kFloat16 ? core::fp16_to_float(x) : core::bf16_to_float(x);
}

struct FiaWorkload {
  FiaWorkloadShape shape;
  PagedLayout paged;
  std::vector<uint16_t> query, key, value, out, sample_q, sample_out;
  std::vector<uint8_t> mask;  // the compressed mask of mode 3 (never read, D3)
  int64_t row() const { return shape.num_heads * shape.head_dim; }
  int64_t kv_row() const { return shape.num_kv_heads * shape.head_dim; }
  bool is_paged() const { return shape.block_size > 0; }

  // The call over `q` (b sequences of q rows) writing `o`.
  FiaArgs args(int64_t b, int64_t q, uint16_t* qd, uint16_t* od, int32_t* bt) {
    const FiaWorkloadShape& s = shape;
    const DType dt = s.dtype;
    FiaArgs a;
    a.query = TensorView::contiguous(qd, dt, {b, q, s.num_heads, s.head_dim});
    if (is_paged()) {
      const int64_t rows = paged.num_blocks;
      a.key = {TensorView::contiguous(key.data(), dt, {rows, s.block_size, kv_row()})};
      a.value = {TensorView::contiguous(value.data(), dt, {rows, s.block_size, kv_row()})};
      a.block_table = TensorView::contiguous(bt, DType::kInt32, {b, paged.blocks_per_seq});
      a.block_size = s.block_size;
      a.actual_seq_lengths_kv = std::vector<int64_t>(b, s.kv());
    } else {
      a.key = {TensorView::contiguous(key.data(), dt, {b, s.kv(), s.num_kv_heads, s.head_dim})};
      a.value = {TensorView::contiguous(value.data(), dt, {b, s.kv(), s.num_kv_heads, s.head_dim})};
    }
    if (s.sparse_mode == 3)
      a.atten_mask = TensorView::contiguous(mask.data(), DType::kInt8, {kMaskSide, kMaskSide});
    a.num_heads = s.num_heads;
    a.num_key_value_heads = s.num_kv_heads;
    a.scale = 1.0 / std::sqrt(static_cast<double>(s.head_dim));
    a.input_layout = "BSND";
    a.sparse_mode = s.sparse_mode;
    a.prompt = s.prompt;
    if (s.prompt) a.next_tokens = 0, a.inner_precise = 1;  // PFA's defaults
    a.attention_out = TensorView::contiguous(od, dt, {b, q, s.num_heads, s.head_dim});
    return a;
  }
};

// Visible (row, key) pairs of one sequence (D3: mode 3 sees j <= i + kv - q; mode 0 all).
double visible_pairs(const FiaWorkloadShape& s) {
  double n = 0;
  for (int64_t i = 0; i < s.q_len; ++i)
    n += s.sparse_mode == 3
             ? static_cast<double>(std::clamp<int64_t>(i + s.kv() - s.q_len + 1, 0, s.kv()))
             : static_cast<double>(s.kv());
  return n;
}

}  // namespace

bool run_fia_workload(const FiaWorkloadShape& shape, const DemoOptions& options,
                      FiaWorkloadResult* result) {
  FiaWorkload w;
  w.shape = shape;
  const int64_t b = shape.batch, s1 = shape.q_len, s2 = shape.kv();
  Rng rng(static_cast<uint64_t>(b) * 1009 + static_cast<uint64_t>(s1 * 31 + s2));
  if (w.is_paged()) {
    w.paged = make_paged_layout(std::vector<int64_t>(b, s2), shape.block_size, 0, rng);
    w.key.resize(w.paged.num_blocks * shape.block_size * w.kv_row());
  } else {
    w.key.resize(b * s2 * w.kv_row());
  }
  w.value.resize(w.key.size());
  w.query.resize(b * s1 * w.row());
  w.out.assign(w.query.size(), 0);
  for (auto* v : {&w.query, &w.key, &w.value})
    for (auto& x : *v) x = to_16bit(rng.normal(), shape.dtype);
  if (shape.sparse_mode == 3) w.mask.assign(kMaskSide * kMaskSide, 1);
  FiaArgs args = w.args(b, s1, w.query.data(), w.out.data(), w.paged.block_table.data());
  args.num_threads = options.num_threads;
  std::unique_ptr<FiaPlan> plan;
  if (FiaPlan::create(args, &plan) != Status::kSuccess) {
    std::printf("%s: plan failed: %s\n", shape.name.c_str(), last_error_message());
    return false;
  }
  std::vector<std::byte> ws(plan->workspace_size());
  Status st = Status::kSuccess;
  const double seconds = median_seconds(
      1, options.iterations, [&] { st = plan->run(args, ws.data(), ws.size()); },
      flush_before(options));
  if (st != Status::kSuccess) {
    std::printf("%s: run failed: %s\n", shape.name.c_str(), last_error_message());
    return false;
  }
  const double pairs = visible_pairs(shape) * static_cast<double>(b);
  FiaWorkloadResult& res = *result;
  res.ms_per_call = seconds * 1e3;
  res.gflops = 4.0 * pairs * shape.num_heads * shape.head_dim / seconds / 1e9;
  res.bytes = 2.0 * (2.0 * w.query.size() + 2.0 * static_cast<double>(b * s2 * w.kv_row()));
  res.gbs = res.bytes / seconds / 1e9;
  std::printf(
      "%s  %s  %s %s  B=%lld S1=%lld S2=%lld N=%lld KV_N=%lld D=%lld mode=%lld  %8.3f "
      "ms/call  %7.1f GFLOP/s\n",
      shape.prompt ? "pfa" : "fia", shape.name.c_str(), dtype_name(shape.dtype),
      w.is_paged() ? ("paged bs=" + std::to_string(shape.block_size)).c_str() : "contiguous",
      static_cast<long long>(b), static_cast<long long>(s1), static_cast<long long>(s2),
      static_cast<long long>(shape.num_heads), static_cast<long long>(shape.num_kv_heads),
      static_cast<long long>(shape.head_dim), static_cast<long long>(shape.sparse_mode),
      seconds * 1e3, res.gflops);

  // Sample check: the last kCheckRows query rows of sequence 0 as a call of their own (with
  // lengths of their own, mode 3's band is the same: row i sees j <= i + S2 - rows) against the
  // fp64 oracle, and their bits against the batch's (the kernel's rows do not depend on tiling
  // or batch; a sample small enough to split its key range may round differently, so bits are
  // compared only when neither splits).
  const int64_t rows = std::min(kCheckRows, s1);
  w.sample_q.assign(w.query.begin() + (s1 - rows) * w.row(), w.query.begin() + s1 * w.row());
  w.sample_out.assign(rows * w.row(), 0);
  std::vector<int32_t> bt0(w.paged.block_table.begin(),
                           w.paged.block_table.begin() + w.paged.blocks_per_seq);
  FiaArgs sample = w.args(1, rows, w.sample_q.data(), w.sample_out.data(), bt0.data());
  sample.num_threads = options.num_threads;
  if (fused_infer_attention_score(sample) != Status::kSuccess) {
    std::printf("%s: sample run failed: %s\n", shape.name.c_str(), last_error_message());
    return false;
  }
  reference::FiaCall call;
  call.query = sample.query;
  call.key = sample.key;
  call.value = sample.value;
  call.atten_mask = sample.atten_mask;
  call.block_table = sample.block_table;
  call.actual_seq_lengths_kv = sample.actual_seq_lengths_kv;
  call.num_heads = sample.num_heads;
  call.num_key_value_heads = sample.num_key_value_heads;
  call.scale_value = sample.scale;
  call.pre_tokens = sample.pre_tokens, call.next_tokens = sample.next_tokens;
  call.input_layout = sample.input_layout;
  call.sparse_mode = sample.sparse_mode;
  call.inner_precise = sample.inner_precise;
  call.block_size = sample.block_size;
  call.prompt = sample.prompt;
  call.attention_out = sample.attention_out;
  const reference::FiaReference ref = reference::fia_reference(call);
  const double rtol = shape.dtype == DType::kFloat16 ? 0x1p-10 : 0x1p-7;  // docs/conventions.md
  const int64_t group = shape.num_heads / shape.num_kv_heads;
  const bool bits_comparable = rows * group > 16 || rows == s1;  // cpu::kFiaSplitRows
  SampleCheck check;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t h = 0; h < shape.num_heads; ++h) {
      for (int64_t d = 0; d < shape.head_dim; ++d) {
        const int64_t e = (r * shape.num_heads + h) * shape.head_dim + d;
        const uint16_t got = w.sample_out[e];
        const uint16_t in_batch = w.out[(s1 - rows) * w.row() + e];
        check.add(from_16bit(got, shape.dtype), !bits_comparable || got == in_batch,
                  ref.attention[ref.index(r, h, d)], rtol * ref.v_absmax[ref.row(r, h)], rtol);
      }
    }
  }
  check.print("the last query rows of sequence 0");
  res.passed = check.passed();
  return res.passed;
}

}  // namespace kvflash::tools
