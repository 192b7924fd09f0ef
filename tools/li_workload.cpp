#include "li_workload.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <vector>

#include "demo_util.hpp"
#include "li_reference.hpp"

namespace kvflash::tools {
namespace {

constexpr int64_t kD = 128;

uint16_t to_16bit(float x, DType dtype) {
  return dtype == DType::kFloat16 ? core::float_to_fp16(x) : core::float_to_bf16(x);
}

// The indexer arguments over the given buffers: rows (T) of n heads, b requests.
LightningIndexerArgs li_args(const LiWorkloadShape& s, int64_t b, int64_t num_blocks,
                             int64_t blocks_per_seq, uint16_t* q, uint16_t* w, uint16_t* key,
                             int32_t* table, int32_t* lq, int32_t* lk, int32_t* indices) {
  const int64_t t = b * s.next_n;
  LightningIndexerArgs a;
  a.query = TensorView::contiguous(q, s.dtype, {t, s.num_heads, kD});
  a.key = TensorView::contiguous(key, s.dtype, {num_blocks, s.block_size, 1, kD});
  a.weights = TensorView::contiguous(w, s.dtype, {t, s.num_heads});
  a.actual_seq_lengths_query = TensorView::contiguous(lq, DType::kInt32, {b});
  a.actual_seq_lengths_key = TensorView::contiguous(lk, DType::kInt32, {b});
  a.block_table = TensorView::contiguous(table, DType::kInt32, {b, blocks_per_seq});
  a.layout_query = "TND";
  a.layout_key = "PA_BSND";
  a.sparse_count = s.top_k;
  a.sparse_mode = 3;
  a.sparse_indices = TensorView::contiguous(indices, DType::kInt32, {t, 1, s.top_k});
  return a;
}

}  // namespace

void make_li_workload(const LiWorkloadShape& shape, LiWorkload* out) {
  LiWorkload& w = *out;
  w = LiWorkload{};
  w.shape = shape;
  const int64_t b = shape.batch, t = w.rows(), n = shape.num_heads;
  Rng rng(static_cast<uint64_t>(b) * 7919 + static_cast<uint64_t>(shape.kv_len) * 31 +
          static_cast<uint64_t>(n));
  const PagedLayout paged =
      make_paged_layout(std::vector<int64_t>(b, shape.kv_len), shape.block_size, 0, rng);
  w.num_blocks = paged.num_blocks;
  w.blocks_per_seq = paged.blocks_per_seq;
  w.block_table = paged.block_table;
  w.query.resize(t * n * kD);
  w.weights.resize(t * n);
  w.key.resize(w.num_blocks * shape.block_size * kD);
  for (auto* v : {&w.query, &w.weights, &w.key})
    for (auto& x : *v) x = to_16bit(rng.normal(), shape.dtype);
  for (int64_t r = 0; r < b; ++r) {
    w.lengths_query.push_back(static_cast<int32_t>((r + 1) * shape.next_n));
    w.lengths_key.push_back(static_cast<int32_t>(shape.kv_len));
  }
  w.indices.assign(t * shape.top_k, 0);
  w.args = li_args(shape, b, w.num_blocks, w.blocks_per_seq, w.query.data(), w.weights.data(),
                   w.key.data(), w.block_table.data(), w.lengths_query.data(), w.lengths_key.data(),
                   w.indices.data());
}

bool check_li_sample(const LiWorkload& w, const std::vector<int64_t>& requests, int64_t* same_sets,
                     int64_t* rows_checked) {
  const LiWorkloadShape& s = w.shape;
  const int64_t n = s.num_heads, nn = s.next_n, k = s.top_k;
  const int64_t b = static_cast<int64_t>(requests.size());
  // The requests alone: their rows, weights, table rows and lengths (the cache is shared).
  std::vector<uint16_t> q, wt;
  std::vector<int32_t> table, lq, lk, idx(b * nn * k, 0);
  for (int64_t r : requests) {
    q.insert(q.end(), w.query.begin() + r * nn * n * kD, w.query.begin() + (r + 1) * nn * n * kD);
    wt.insert(wt.end(), w.weights.begin() + r * nn * n, w.weights.begin() + (r + 1) * nn * n);
    table.insert(table.end(), w.block_table.begin() + r * w.blocks_per_seq,
                 w.block_table.begin() + (r + 1) * w.blocks_per_seq);
    lq.push_back(static_cast<int32_t>((lq.size() + 1) * nn));
    lk.push_back(w.lengths_key[r]);
  }
  const LightningIndexerArgs a =
      li_args(s, b, w.num_blocks, w.blocks_per_seq, q.data(), wt.data(),
              const_cast<uint16_t*>(w.key.data()), table.data(), lq.data(), lk.data(), idx.data());
  const reference::LiReference ref = reference::li_reference(a);
  bool ok = ref.fault.empty();
  *same_sets = 0;
  *rows_checked = 0;
  double worst = 0;  // the largest (unselected - selected) score gap over the tolerances
  for (int64_t i = 0; i < b; ++i) {
    for (int64_t j = 0; j < nn; ++j) {
      const int64_t r = i * nn + j;            // in the sample
      const int64_t g = requests[i] * nn + j;  // in the batch
      const int32_t* got = w.indices.data() + g * k;
      const int64_t valid = ref.valid[r];
      const int64_t c = std::min(valid, k);
      std::vector<char> chosen(static_cast<size_t>(std::max<int64_t>(valid, 0)), 0);
      double sel_lo = INFINITY;
      for (int64_t e = 0; e < k; ++e) {
        const int32_t x = got[e];
        if (e >= c) {
          ok = ok && x == -1;
          continue;
        }
        if (x < 0 || x >= valid || chosen[x]) {
          ok = false;
          continue;
        }
        chosen[x] = 1;
        const double tol = (kD + n + 2) * 0x1p-24 * 1.01 * ref.key_magnitude(r, x) + 0x1p-100;
        sel_lo = std::min(sel_lo, ref.key_score(r, x) + tol);
      }
      bool same = true;
      for (int64_t e = 0; e < c; ++e) same = same && chosen[ref.indices[ref.slot(r, e)]];
      for (int64_t x = 0; x < valid; ++x) {
        if (chosen[x]) continue;
        const double tol = (kD + n + 2) * 0x1p-24 * 1.01 * ref.key_magnitude(r, x) + 0x1p-100;
        const double gap = (ref.key_score(r, x) - tol) - sel_lo;
        worst = std::max(worst, gap);
        ok = ok && gap <= 0;
      }
      *same_sets += same ? 1 : 0;
      ++*rows_checked;
    }
  }
  std::printf(
      "     sample check (%lld rows x %lld keys vs double reference): index sets equal to fp64's "
      "in %lld rows, no unselected key above a selected one beyond the fp32 tolerance "
      "(worst gap %.3g) -> %s\n",
      static_cast<long long>(*rows_checked), static_cast<long long>(s.kv_len),
      static_cast<long long>(*same_sets), worst, ok ? "PASSED" : "FAILED");
  return ok;
}

bool run_li_workload(const LiWorkloadShape& shape, const DemoOptions& options,
                     double read_bandwidth_gbs, LiWorkloadResult* result) {
  auto w = std::make_unique<LiWorkload>();
  make_li_workload(shape, w.get());
  w->args.num_threads = options.num_threads;
  std::unique_ptr<LightningIndexerPlan> plan;
  if (LightningIndexerPlan::create(w->args, &plan) != Status::kSuccess) {
    std::printf("%s: plan failed: %s\n", shape.name.c_str(), last_error_message());
    return false;
  }
  std::vector<std::byte> ws(plan->workspace_size());
  Status st = Status::kSuccess;
  const CallTimes times = time_calls(
      1, options.iterations, [&] { st = plan->run(w->args, ws.data(), ws.size()); },
      flush_before(options));
  const double seconds = times.median_seconds();
  if (st != Status::kSuccess) {
    std::printf("%s: run failed: %s\n", shape.name.c_str(), last_error_message());
    return false;
  }
  // The FLOPs and bytes of tools/roofline.hpp (li_work): the keys once per request (its next_n
  // rows share them), queries and weights.
  const Work work = li_work(shape.batch, w->rows(), shape.kv_len, shape.num_heads, 2);
  LiWorkloadResult& res = *result;
  res = {times, work.bytes, work.flops, work.bytes / seconds / 1e9, work.flops / seconds / 1e9,
         false};
  std::printf(
      "li   %s  %s paged bs=%lld  B=%lld next_n=%lld N=%lld S=%lld top-k=%lld  %s  "
      "%7.1f GFLOP/s  %6.2f GB/s keys",
      shape.name.c_str(), dtype_name(shape.dtype), static_cast<long long>(shape.block_size),
      static_cast<long long>(shape.batch), static_cast<long long>(shape.next_n),
      static_cast<long long>(shape.num_heads), static_cast<long long>(shape.kv_len),
      static_cast<long long>(shape.top_k), describe(times, options.warm(), "/call").c_str(),
      res.gflops,
      res.gbs);
  if (read_bandwidth_gbs > 0)
    std::printf(" (%.0f%% of read bw)", 100.0 * res.gbs / read_bandwidth_gbs);
  std::printf("\n");
  std::vector<int64_t> sample = {0};
  if (shape.batch > 1) sample.push_back(shape.batch - 1);
  int64_t same = 0, checked = 0;
  res.passed = check_li_sample(*w, sample, &same, &checked);
  return res.passed;
}

}  // namespace kvflash::tools
