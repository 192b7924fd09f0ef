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
  std::vector<uint16_t> query, key, value, out, sample_q, sample_out, k_scale, v_scale, sink;
  std::vector<int8_t> key8, value8;
  std::vector<float> lse, sample_lse;
  std::vector<uint8_t> mask;  // the compressed mask of mode 3 (never read, D3)
  int64_t row() const { return shape.num_heads * shape.head_dim; }
  int64_t kv_row() const { return shape.num_kv_heads * shape.head_dim; }
  bool is_paged() const { return shape.block_size > 0; }
  bool int8() const { return shape.kv_int8 != 0; }
  // Per-token parameters: positions per request (the paged capacity, or the cache's S).
  int64_t token_cols() const {
    return is_paged() ? paged.blocks_per_seq * shape.block_size : shape.kv();
  }

  // The call over requests of query lengths qs and KV lengths ks (BSND: all equal) reading query
  // qd and block table rows bt, writing o / lse.
  FiaArgs args(const std::vector<int64_t>& qs, const std::vector<int64_t>& ks, uint16_t* qd,
               uint16_t* od, float* ld, int32_t* bt) {
    const FiaWorkloadShape& s = shape;
    const DType dt = s.dtype, kvt = int8() ? DType::kInt8 : dt;
    const int64_t b = static_cast<int64_t>(qs.size()), N = s.num_heads, D = s.head_dim;
    int64_t T = 0;
    std::vector<int64_t> cum;
    for (int64_t q : qs) cum.push_back(T += q);
    FiaArgs a;
    void* kd = int8() ? static_cast<void*>(key8.data()) : key.data();
    void* vd = int8() ? static_cast<void*>(value8.data()) : value.data();
    if (s.tnd) {
      a.query = TensorView::contiguous(qd, dt, {T, N, D});
      a.attention_out = TensorView::contiguous(od, dt, {T, N, D});
      a.actual_seq_lengths = cum;
      a.input_layout = "TND";
    } else {
      a.query = TensorView::contiguous(qd, dt, {b, qs[0], N, D});
      a.attention_out = TensorView::contiguous(od, dt, {b, qs[0], N, D});
      a.input_layout = "BSND";
    }
    if (is_paged()) {
      const int64_t rows = paged.num_blocks;
      a.key = {TensorView::contiguous(kd, kvt, {rows, s.block_size, kv_row()})};
      a.value = {TensorView::contiguous(vd, kvt, {rows, s.block_size, kv_row()})};
      a.block_table = TensorView::contiguous(bt, DType::kInt32, {b, paged.blocks_per_seq});
      a.block_size = s.block_size;
      a.actual_seq_lengths_kv = ks;
    } else {
      a.key = {TensorView::contiguous(kd, kvt, {b, ks[0], s.num_kv_heads, D})};
      a.value = {TensorView::contiguous(vd, kvt, {b, ks[0], s.num_kv_heads, D})};
    }
    if (s.kv_int8 == 1) {
      a.key_antiquant_scale = TensorView::contiguous(k_scale.data(), dt, {s.num_kv_heads, D});
      a.value_antiquant_scale = TensorView::contiguous(v_scale.data(), dt, {s.num_kv_heads, D});
    } else if (s.kv_int8 == 2) {
      // Request r's row of (1, B, S): a sample call of request 0 reads the first row.
      a.key_antiquant_scale = TensorView::contiguous(k_scale.data(), dt, {1, b, token_cols()});
      a.value_antiquant_scale = TensorView::contiguous(v_scale.data(), dt, {1, b, token_cols()});
      a.key_antiquant_mode = a.value_antiquant_mode = 1;
    }
    if (s.sink) a.learnable_sink = TensorView::contiguous(sink.data(), dt, {N});
    if (s.lse) {
      a.softmax_lse_flag = true;
      a.softmax_lse = s.tnd ? TensorView::contiguous(ld, DType::kFloat32, {T, N, 1})
                            : TensorView::contiguous(ld, DType::kFloat32, {b, N, qs[0], 1});
    }
    if (s.sparse_mode == 3 && s.mask_rank > 0) {
      std::vector<int64_t> dims(static_cast<size_t>(s.mask_rank), 1);
      dims[dims.size() - 2] = dims.back() = kMaskSide;
      a.atten_mask = TensorView::contiguous(mask.data(), DType::kInt8, dims);
    }
    a.num_heads = N;
    a.num_key_value_heads = s.num_kv_heads;
    a.scale = 1.0 / std::sqrt(static_cast<double>(D));
    a.sparse_mode = s.sparse_mode;
    a.prompt = s.prompt;
    if (s.prompt) a.next_tokens = 0, a.inner_precise = 1;  // PFA's defaults
    return a;
  }
};

// Visible (row, key) pairs of a request of q rows over kv keys (D3: mode 3 sees j <= i + kv - q;
// mode 0 all).
double visible_pairs(int64_t q, int64_t kv, int64_t mode) {
  double n = 0;
  for (int64_t i = 0; i < q; ++i)
    n += mode == 3 ? static_cast<double>(std::clamp<int64_t>(i + kv - q + 1, 0, kv))
                   : static_cast<double>(kv);
  return n;
}

}  // namespace

bool run_fia_workload(const FiaWorkloadShape& shape, const DemoOptions& options,
                      FiaWorkloadResult* result) {
  FiaWorkload w;
  w.shape = shape;
  const int64_t R = shape.requests();
  std::vector<int64_t> qs(R), ks(R);
  int64_t T = 0, kv_total = 0;
  for (int64_t r = 0; r < R; ++r) {
    qs[r] = shape.q_of(r), ks[r] = shape.kv_of(r);
    T += qs[r], kv_total += ks[r];
  }
  const int64_t q0 = qs[0], s2 = ks[0];
  Rng rng(static_cast<uint64_t>(R) * 1009 + static_cast<uint64_t>(T * 31 + kv_total));
  int64_t kv_elems = 0;
  if (w.is_paged()) {
    w.paged = make_paged_layout(ks, shape.block_size, 0, rng);
    kv_elems = w.paged.num_blocks * shape.block_size * w.kv_row();
  } else {
    kv_elems = R * s2 * w.kv_row();
  }
  w.query.resize(T * w.row());
  w.out.assign(w.query.size(), 0);
  if (shape.lse) w.lse.assign(T * shape.num_heads, 0.0f);
  for (auto& x : w.query) x = to_16bit(rng.normal(), shape.dtype);
  if (w.int8()) {
    for (auto* v : {&w.key8, &w.value8}) {
      v->resize(kv_elems);
      for (auto& x : *v)
        x = static_cast<int8_t>(std::lround(std::clamp(rng.normal() * 40.0f, -127.0f, 127.0f)));
    }
    const int64_t n = shape.kv_int8 == 1 ? w.kv_row() : R * w.token_cols();
    for (auto* v : {&w.k_scale, &w.v_scale}) {
      v->resize(n);
      for (auto& x : *v)
        x = to_16bit(static_cast<float>(0.02 + 0.01 * std::fabs(rng.normal())), shape.dtype);
    }
  } else {
    for (auto* v : {&w.key, &w.value}) {
      v->resize(kv_elems);
      for (auto& x : *v) x = to_16bit(rng.normal(), shape.dtype);
    }
  }
  if (shape.sink) {
    w.sink.resize(shape.num_heads);
    for (auto& x : w.sink) x = to_16bit(rng.normal(), shape.dtype);
  }
  if (shape.sparse_mode == 3 && shape.mask_rank > 0) w.mask.assign(kMaskSide * kMaskSide, 1);
  FiaArgs args =
      w.args(qs, ks, w.query.data(), w.out.data(), w.lse.data(), w.paged.block_table.data());
  args.num_threads = options.num_threads;
  std::unique_ptr<FiaPlan> plan;
  if (FiaPlan::create(args, &plan) != Status::kSuccess) {
    std::printf("%s: plan failed: %s\n", shape.name.c_str(), last_error_message());
    return false;
  }
  std::vector<std::byte> ws(plan->workspace_size());
  Status st = Status::kSuccess;
  const CallTimes times = time_calls(
      1, options.iterations, [&] { st = plan->run(args, ws.data(), ws.size()); },
      flush_before(options));
  const double seconds = times.median_seconds();
  if (st != Status::kSuccess) {
    std::printf("%s: run failed: %s\n", shape.name.c_str(), last_error_message());
    return false;
  }
  double pairs = 0;
  for (int64_t r = 0; r < R; ++r) pairs += visible_pairs(qs[r], ks[r], shape.sparse_mode);
  FiaWorkloadResult& res = *result;
  res.times = times;
  // The FLOPs and bytes of tools/roofline.hpp: the visible pairs; Q, O, and K, V once.
  const Work work = prefill_work(pairs, T, kv_total, shape.num_heads, shape.num_kv_heads,
                                 shape.head_dim, w.int8() ? 1 : 2, 2);
  res.flops = work.flops;
  res.gflops = work.flops / seconds / 1e9;
  res.bytes = work.bytes;
  res.gbs = res.bytes / seconds / 1e9;
  const char* kv_name = shape.kv_int8 == 1 ? "int8/ch" : shape.kv_int8 == 2 ? "int8/tok" : "";
  std::printf(
      "%s  %s  %s%s%s %s%s%s  %s=%lld T=%lld S2[0]=%lld N=%lld KV_N=%lld D=%lld mode=%lld  %s  "
      "%7.1f GFLOP/s\n",
      shape.prompt ? "pfa" : "fia", shape.name.c_str(), dtype_name(shape.dtype),
      w.int8() ? " kv " : "", kv_name,
      w.is_paged() ? ("paged bs=" + std::to_string(shape.block_size)).c_str() : "contiguous",
      shape.lse ? " lse" : "", shape.sink ? " sink" : "", shape.tnd ? "TND requests" : "B",
      static_cast<long long>(R), static_cast<long long>(T), static_cast<long long>(s2),
      static_cast<long long>(shape.num_heads), static_cast<long long>(shape.num_kv_heads),
      static_cast<long long>(shape.head_dim), static_cast<long long>(shape.sparse_mode),
      describe(times, options.warm(), "/call").c_str(), res.gflops);

  // Sample check: the last kCheckRows query rows of request 0 as a call of their own (with
  // lengths of their own, mode 3's band is the same: row i sees j <= i + S2 - rows) against the
  // fp64 oracle, and their bits against the batch's (the kernel's rows do not depend on tiling
  // or batch; a sample small enough to split its key range may round differently, so bits are
  // compared only when neither splits).
  const int64_t rows = std::min(kCheckRows, q0);
  w.sample_q.assign(w.query.begin() + (q0 - rows) * w.row(), w.query.begin() + q0 * w.row());
  w.sample_out.assign(rows * w.row(), 0);
  w.sample_lse.assign(rows * shape.num_heads, 0.0f);
  std::vector<int32_t> bt0(w.paged.block_table.begin(),
                           w.paged.block_table.begin() + w.paged.blocks_per_seq);
  FiaArgs sample =
      w.args({rows}, {s2}, w.sample_q.data(), w.sample_out.data(), w.sample_lse.data(), bt0.data());
  sample.num_threads = options.num_threads;
  if (fused_infer_attention_score(sample) != Status::kSuccess) {
    std::printf("%s: sample run failed: %s\n", shape.name.c_str(), last_error_message());
    return false;
  }
  const reference::FiaReference ref = reference::fia_reference(sample);
  const double rtol = shape.dtype == DType::kFloat16 ? 0x1p-10 : 0x1p-7;  // docs/conventions.md
  const int64_t group = shape.num_heads / shape.num_kv_heads;
  // (A mixed batch's decode requests run on IFA's kernels as they do alone:
  // src/ops/fia/fia_validate_decode.cpp.)
  const bool bits_comparable = rows * group > 16 || rows == q0;  // cpu::kFiaSplitRows
  SampleCheck check;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t h = 0; h < shape.num_heads; ++h) {
      for (int64_t d = 0; d < shape.head_dim; ++d) {
        const int64_t e = (r * shape.num_heads + h) * shape.head_dim + d;
        const uint16_t got = w.sample_out[e];
        const uint16_t in_batch = w.out[(q0 - rows) * w.row() + e];
        check.add(from_16bit(got, shape.dtype), !bits_comparable || got == in_batch,
                  ref.attention[ref.index(r, h, d)], rtol * ref.v_absmax[ref.row(r, h)], rtol);
      }
    }
  }
  check.print("the last query rows of request 0");
  res.passed = check.passed();
  return res.passed;
}

}  // namespace kvflash::tools
