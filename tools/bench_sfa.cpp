#include "bench_sfa.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <numeric>
#include <vector>

#include "demo_util.hpp"
#include "kvflash/sfa.hpp"
#include "sfa_reference.hpp"

namespace kvflash::tools {
namespace {

constexpr int64_t kLatentDim = 512, kRopeDim = 64;

uint16_t to_16bit(float x, DType dtype) {
  return dtype == DType::kFloat16 ? core::float_to_fp16(x) : core::float_to_bf16(x);
}
float from_16bit(uint16_t x, DType dtype) {
  return dtype == DType::kFloat16 ? core::fp16_to_float(x) : core::bf16_to_float(x);
}

struct SfaWorkload {
  SfaWorkloadShape shape;
  int64_t cache_rows = 0;  // paged: blocks * block_size; contiguous: B * S
  PagedLayout paged;
  std::vector<uint16_t> query, query_rope;  // (B, 1, N, 512) / (B, 1, N, 64)
  std::vector<uint16_t> key, key_rope;      // cache_rows x 512 / x 64
  std::vector<int32_t> indices;             // (B, 1, 1, K)

  bool is_paged() const { return shape.block_size > 0; }
  int64_t q_row() const { return shape.num_heads * kLatentDim; }
  int64_t qr_row() const { return shape.num_heads * kRopeDim; }

  // Buffers one call owns: the rows' queries, indices, lengths, output and (contiguous cache) a
  // copy of the rows' caches, so that a sample of sequences runs on its own.
  struct Call {
    std::vector<uint16_t> q, qr, out, k, kr;
    std::vector<int32_t> idx, bt, lens;
  };
  SfaArgs args_for(const std::vector<int64_t>& rows, bool whole_batch, Call& c) const {
    const int64_t b = static_cast<int64_t>(rows.size()), n = shape.num_heads, k = shape.top_k;
    const int64_t s = shape.kv_len;
    c = Call{};
    for (int64_t r : rows) {
      auto take = [&](auto& dst, const auto& src, int64_t len) {
        dst.insert(dst.end(), src.begin() + r * len, src.begin() + (r + 1) * len);
      };
      take(c.q, query, q_row());
      take(c.qr, query_rope, qr_row());
      take(c.idx, indices, k);
      if (is_paged()) take(c.bt, paged.block_table, paged.blocks_per_seq);
      if (!is_paged() && !whole_batch) {
        take(c.k, key, s * kLatentDim);
        take(c.kr, key_rope, s * kRopeDim);
      }
      c.lens.push_back(static_cast<int32_t>(s));
    }
    c.out.assign(b * q_row(), 0);
    const DType dt = shape.dtype;
    uint16_t* kp = whole_batch || is_paged() ? const_cast<uint16_t*>(key.data()) : c.k.data();
    uint16_t* krp =
        whole_batch || is_paged() ? const_cast<uint16_t*>(key_rope.data()) : c.kr.data();
    SfaArgs a;
    a.query = TensorView::contiguous(c.q.data(), dt, {b, 1, n, kLatentDim});
    a.query_rope = TensorView::contiguous(c.qr.data(), dt, {b, 1, n, kRopeDim});
    if (is_paged()) {
      a.key = TensorView::contiguous(kp, dt, {paged.num_blocks, shape.block_size, 1, kLatentDim});
      a.key_rope =
          TensorView::contiguous(krp, dt, {paged.num_blocks, shape.block_size, 1, kRopeDim});
      a.block_table = TensorView::contiguous(c.bt.data(), DType::kInt32, {b, paged.blocks_per_seq});
      a.layout_kv = "PA_BSND";
    } else {
      a.key = TensorView::contiguous(kp, dt, {b, s, 1, kLatentDim});
      a.key_rope = TensorView::contiguous(krp, dt, {b, s, 1, kRopeDim});
      a.layout_kv = "BSND";
    }
    a.sparse_indices = TensorView::contiguous(c.idx.data(), DType::kInt32, {b, 1, 1, k});
    a.actual_seq_lengths_kv = TensorView::contiguous(c.lens.data(), DType::kInt32, {b});
    a.scale_value = 1.0 / std::sqrt(static_cast<double>(kLatentDim + kRopeDim));
    a.sparse_block_size = shape.sparse_block_size;
    a.layout_query = "BSND";
    a.sparse_mode = 3;
    a.attention_out = TensorView::contiguous(c.out.data(), dt, {b, 1, n, kLatentDim});
    return a;
  }
};

SfaWorkload make_workload(const SfaWorkloadShape& shape) {
  SfaWorkload w;
  w.shape = shape;
  const int64_t b = shape.batch;
  Rng rng(static_cast<uint64_t>(b) * 977 + static_cast<uint64_t>(shape.kv_len));
  if (w.is_paged()) {
    w.paged = make_paged_layout(std::vector<int64_t>(b, shape.kv_len), shape.block_size,
                                /*spare_blocks=*/0, rng);
    w.cache_rows = w.paged.num_blocks * shape.block_size;
  } else {
    w.cache_rows = b * shape.kv_len;
  }
  w.query.resize(b * w.q_row());
  w.query_rope.resize(b * w.qr_row());
  w.key.resize(w.cache_rows * kLatentDim);
  w.key_rope.resize(w.cache_rows * kRopeDim);
  for (auto* v : {&w.query, &w.query_rope, &w.key, &w.key_rope})
    for (auto& x : *v) x = to_16bit(rng.normal(), shape.dtype);
  // Top-k: distinct selection units (tokens, or blocks of sparse_block_size tokens) of each
  // sequence from a partial Fisher-Yates shuffle, in the unsorted order an indexer produces; a
  // list longer than the sequence ends with -1.
  const int64_t units = (shape.kv_len + shape.sparse_block_size - 1) / shape.sparse_block_size;
  w.indices.assign(b * shape.top_k, -1);
  std::vector<int32_t> pos(units);
  for (int64_t i = 0; i < b; ++i) {
    std::iota(pos.begin(), pos.end(), 0);
    const int64_t k = std::min(shape.top_k, units);
    for (int64_t j = 0; j < k; ++j) {
      std::swap(pos[j], pos[j + rng.next() % (units - j)]);
      w.indices[i * shape.top_k + j] = pos[j];
    }
  }
  return w;
}

// Tokens one sequence attends: the selected units clipped at the sequence's end.
int64_t selected_tokens(const SfaWorkload& w, int64_t row) {
  int64_t n = 0;
  const int64_t sbs = w.shape.sparse_block_size;
  for (int64_t j = 0; j < w.shape.top_k; ++j) {
    const int32_t u = w.indices[row * w.shape.top_k + j];
    if (u < 0) break;
    n += std::min(sbs, w.shape.kv_len - u * sbs);
  }
  return n;
}

}  // namespace


bool run_sfa_workload(const SfaWorkloadShape& shape, const DemoOptions& options,
                      double read_bandwidth_gbs, SfaWorkloadResult* result) {
  const SfaWorkload w = make_workload(shape);
  std::vector<int64_t> all(shape.batch);
  std::iota(all.begin(), all.end(), 0);
  SfaWorkload::Call call;
  SfaArgs args = w.args_for(all, /*whole_batch=*/true, call);
  args.num_threads = options.num_threads;
  std::unique_ptr<SfaPlan> plan;
  if (SfaPlan::create(args, &plan) != Status::kSuccess) {
    std::printf("%s: plan failed: %s\n", shape.name.c_str(), last_error_message());
    return false;
  }
  std::vector<std::byte> ws(plan->workspace_size());
  Status st = Status::kSuccess;
  const CallTimes times =
      time_calls(1, options.iterations, [&] { st = plan->run(args, ws.data(), ws.size()); },
                 flush_before(options));
  const double seconds = times.median_seconds();
  if (st != Status::kSuccess) {
    std::printf("%s: run failed: %s\n", shape.name.c_str(), last_error_message());
    return false;
  }

  int64_t selected = 0;
  for (int64_t i = 0; i < shape.batch; ++i) selected += selected_tokens(w, i);
  // The FLOPs and bytes of tools/roofline.hpp (sfa_work): the gathered rows once per sequence
  // (the heads share them; a kernel that re-reads one per head reads cache, not memory), the
  // queries in, the output out; QK over 576 dims and PV over 512 for every head.
  const Work work = sfa_work(selected, shape.batch, shape.num_heads, 2);
  SfaWorkloadResult& res = *result;
  res = {times, work.bytes, work.flops, work.bytes / seconds / 1e9, work.flops / seconds / 1e9,
         false};
  std::printf(
      "sfa  %s  %s %s  B=%lld N=%lld top-k=%lld sbs=%lld S=%lld  %s  %7.1f GFLOP/s  "
      "%6.2f GB/s gathered",
      shape.name.c_str(), dtype_name(shape.dtype),
      w.is_paged() ? ("paged bs=" + std::to_string(shape.block_size)).c_str() : "contiguous",
      static_cast<long long>(shape.batch), static_cast<long long>(shape.num_heads),
      static_cast<long long>(shape.top_k), static_cast<long long>(shape.sparse_block_size),
      static_cast<long long>(shape.kv_len), describe(times, options.warm(), "/call").c_str(),
      res.gflops,
      res.gbs);
  if (read_bandwidth_gbs > 0)
    std::printf(" (%.0f%% of read bw)", 100.0 * res.gbs / read_bandwidth_gbs);
  std::printf("\n");

  // Sample check: the first and the last sequence alone (same bits as in the batch) vs fp64.
  std::vector<int64_t> rows = {0};
  if (shape.batch > 1) rows.push_back(shape.batch - 1);
  SfaWorkload::Call sample_call;
  SfaArgs sample = w.args_for(rows, /*whole_batch=*/false, sample_call);
  sample.num_threads = options.num_threads;
  if (sparse_flash_attention(sample) != Status::kSuccess) {
    std::printf("%s: sample run failed: %s\n", shape.name.c_str(), last_error_message());
    return false;
  }
  const reference::SfaReference ref = reference::sfa_reference(sample);
  const double rtol = shape.dtype == DType::kFloat16 ? 0x1p-10 : 0x1p-7;  // docs/conventions.md
  SampleCheck check;
  const int64_t row_elems = w.q_row();
  for (size_t i = 0; i < rows.size(); ++i) {
    for (int64_t e = 0; e < row_elems; ++e) {
      const int64_t h = e / kLatentDim;
      const uint16_t got = sample_call.out[i * row_elems + e];
      // atol: max |V| of the query row (all heads share the selection).
      check.add(from_16bit(got, shape.dtype), got == call.out[rows[i] * row_elems + e],
                ref.attention[ref.index(static_cast<int64_t>(i), h, e % kLatentDim)],
                rtol * ref.v_absmax[i], rtol);
    }
  }
  check.print(rows.size() == 1 ? "1 sequence" : "2 sequences");
  res.passed = check.passed();
  return res.passed;
}

}  // namespace kvflash::tools
