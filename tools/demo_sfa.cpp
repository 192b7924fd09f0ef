// Demo workload 2: a DeepSeek-V3.2 sparse MLA decode step: 128 query heads sharing one latent KV
// head (512 + 64 rope dims), each query attending its top-2048 tokens through a paged bf16 cache
// (block size 64, shuffled block table).
#include <cmath>
#include <cstdio>
#include <memory>
#include <numeric>
#include <vector>

#include "demo.hpp"
#include "demo_util.hpp"
#include "kvflash/sfa.hpp"
#include "sfa_reference.hpp"

namespace kvflash::tools {
namespace {

constexpr int64_t kNumHeads = 128, kLatentDim = 512, kRopeDim = 64, kBlockSize = 64, kTopK = 2048;

struct SfaWorkload {
  std::vector<int32_t> kv_lengths;
  int64_t num_blocks = 0, blocks_per_seq = 0;
  std::vector<uint16_t> query, query_rope;  // (B, 1, N, 512) / (B, 1, N, 64) bf16
  std::vector<uint16_t> key, key_rope;      // (blocks, 64, 1, 512) / (blocks, 64, 1, 64)
  std::vector<int32_t> indices;             // (B, 1, 1, K)
  std::vector<int32_t> block_table;         // (B, blocks_per_seq)

  int64_t batch() const { return static_cast<int64_t>(kv_lengths.size()); }

  // Arguments for the sequences `rows`, with per-sequence inputs copied so a sample runs alone.
  struct Owned {
    std::vector<uint16_t> q, qr, out;
    std::vector<int32_t> idx, bt, lens;
  };
  SfaArgs args_for(const std::vector<int64_t>& rows, Owned& o) const {
    const int64_t b = static_cast<int64_t>(rows.size());
    o = Owned{};
    for (int64_t r : rows) {
      auto take = [&](auto& dst, const auto& src, int64_t n) {
        dst.insert(dst.end(), src.begin() + r * n, src.begin() + (r + 1) * n);
      };
      take(o.q, query, kNumHeads * kLatentDim);
      take(o.qr, query_rope, kNumHeads * kRopeDim);
      take(o.idx, indices, kTopK);
      take(o.bt, block_table, blocks_per_seq);
      o.lens.push_back(kv_lengths[r]);
    }
    o.out.assign(b * kNumHeads * kLatentDim, 0);
    SfaArgs a;
    a.query = TensorView::contiguous(o.q.data(), DType::kBFloat16, {b, 1, kNumHeads, kLatentDim});
    a.query_rope =
        TensorView::contiguous(o.qr.data(), DType::kBFloat16, {b, 1, kNumHeads, kRopeDim});
    a.key = TensorView::contiguous(const_cast<uint16_t*>(key.data()), DType::kBFloat16,
                                   {num_blocks, kBlockSize, 1, kLatentDim});
    a.key_rope = TensorView::contiguous(const_cast<uint16_t*>(key_rope.data()), DType::kBFloat16,
                                        {num_blocks, kBlockSize, 1, kRopeDim});
    a.sparse_indices = TensorView::contiguous(o.idx.data(), DType::kInt32, {b, 1, 1, kTopK});
    a.block_table = TensorView::contiguous(o.bt.data(), DType::kInt32, {b, blocks_per_seq});
    a.actual_seq_lengths_kv = TensorView::contiguous(o.lens.data(), DType::kInt32, {b});
    a.scale_value = 1.0 / std::sqrt(static_cast<double>(kLatentDim + kRopeDim));
    a.sparse_block_size = 1;
    a.layout_query = "BSND";
    a.layout_kv = "PA_BSND";
    a.sparse_mode = 3;
    a.attention_out =
        TensorView::contiguous(o.out.data(), DType::kBFloat16, {b, 1, kNumHeads, kLatentDim});
    return a;
  }
};

SfaWorkload make_workload(bool quick) {
  SfaWorkload w;
  w.kv_lengths = {8192, 4096, 16384, 3000};
  if (quick) w.kv_lengths = {4096, 2500};
  const int64_t b = w.batch();
  Rng rng(3);
  PagedLayout paged = make_paged_layout(w.kv_lengths, kBlockSize, /*spare_blocks=*/0, rng);
  w.num_blocks = paged.num_blocks;
  w.blocks_per_seq = paged.blocks_per_seq;
  w.block_table = std::move(paged.block_table);

  w.query.resize(b * kNumHeads * kLatentDim);
  w.query_rope.resize(b * kNumHeads * kRopeDim);
  w.key.resize(w.num_blocks * kBlockSize * kLatentDim);
  w.key_rope.resize(w.num_blocks * kBlockSize * kRopeDim);
  fill_bf16(w.query, rng, 1.0f);
  fill_bf16(w.query_rope, rng, 1.0f);
  fill_bf16(w.key, rng, 1.0f);
  fill_bf16(w.key_rope, rng, 1.0f);
  // Top-k: distinct token positions of each sequence (a partial Fisher-Yates shuffle), in the
  // unsorted order an indexer's top-k produces; sequences shorter than K end their list with -1.
  w.indices.assign(b * kTopK, -1);
  for (int64_t i = 0; i < b; ++i) {
    std::vector<int32_t> pos(w.kv_lengths[i]);
    std::iota(pos.begin(), pos.end(), 0);
    const int64_t k = std::min<int64_t>(kTopK, pos.size());
    for (int64_t j = 0; j < k; ++j) {
      std::swap(pos[j], pos[j + rng.next() % (pos.size() - j)]);
      w.indices[i * kTopK + j] = pos[j];
    }
  }
  return w;
}

}  // namespace

bool run_sfa_demo(const DemoOptions& options, double read_bandwidth_gbs,
                  const Ceiling& ceiling) {
  const SfaWorkload w = make_workload(options.quick);
  std::vector<int64_t> all(w.batch());
  std::iota(all.begin(), all.end(), 0);
  SfaWorkload::Owned owned;
  SfaArgs args = w.args_for(all, owned);
  args.num_threads = options.num_threads;
  std::unique_ptr<SfaPlan> plan;
  if (SfaPlan::create(args, &plan) != Status::kSuccess) {
    std::printf("sfa: plan failed: %s\n", last_error_message());
    return false;
  }
  std::vector<std::byte> ws(plan->workspace_size());
  Status st = Status::kSuccess;
  const CallTimes times =
      time_calls(1, options.iterations, [&] { st = plan->run(args, ws.data(), ws.size()); },
                 flush_before(options));
  const double seconds = times.median_seconds();
  if (st != Status::kSuccess) {
    std::printf("sfa: run failed: %s\n", last_error_message());
    return false;
  }

  // Sample check: the first and the last sequence alone (same bits as in the batch) vs the
  // reference.
  const std::vector<int64_t> rows = {0, w.batch() - 1};
  SfaWorkload::Owned sample_owned;
  SfaArgs sample = w.args_for(rows, sample_owned);
  sample.num_threads = options.num_threads;
  if (sparse_flash_attention(sample) != Status::kSuccess) {
    std::printf("sfa: sample run failed: %s\n", last_error_message());
    return false;
  }
  const reference::SfaReference ref = reference::sfa_reference(sample);
  SampleCheck check;
  const double rtol = 0x1p-7;  // bf16 output
  const int64_t row_elems = kNumHeads * kLatentDim;
  for (size_t i = 0; i < rows.size(); ++i) {
    for (int64_t e = 0; e < row_elems; ++e) {
      const int64_t h = e / kLatentDim;
      const uint16_t got_bits = sample_owned.out[i * row_elems + e];
      // atol: max |V| of the query row (all heads share the selection).
      check.add(core::bf16_to_float(got_bits), got_bits == owned.out[rows[i] * row_elems + e],
                ref.attention[ref.index(i, h, e % kLatentDim)], rtol * ref.v_absmax[i], rtol);
    }
  }

  int64_t selected = 0;
  for (int64_t i = 0; i < w.batch(); ++i) selected += std::min<int64_t>(kTopK, w.kv_lengths[i]);
  // The FLOPs and bytes of tools/roofline.hpp (sfa_work), as `kvflash bench sfa:...` counts them.
  const Work work = sfa_work(selected, w.batch(), kNumHeads, 2);
  std::printf(
      "sfa  deepseek-v3.2 decode  bf16 paged bs=%lld  B=%lld N=%lld top-k=%lld  %s  "
      "%6.1f GFLOP/s  %6.2f GB/s\n",
      static_cast<long long>(kBlockSize), static_cast<long long>(w.batch()),
      static_cast<long long>(kNumHeads), static_cast<long long>(kTopK),
      describe(times, options.warm(), "/call").c_str(),
      work.flops / seconds / 1e9, work.bytes / seconds / 1e9);
  const Roofline roof = roofline(work, times.median_ms, read_bandwidth_gbs, ceiling);
  if (roof.valid) std::printf("     %s\n", describe_roofline(roof, read_bandwidth_gbs, ceiling).c_str());
  check.print("2 sequences");
  return check.passed();
}

}  // namespace kvflash::tools
