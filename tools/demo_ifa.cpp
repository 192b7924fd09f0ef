// Demo workload 1: a Llama-3-8B attention decode step (32 query heads, 8 KV heads, head dim 128)
// over a paged KV cache (block size 128, shuffled block table) for a batch of mixed lengths.
#include <cmath>
#include <cstdio>
#include <memory>
#include <numeric>
#include <vector>

#include "demo.hpp"
#include "demo_util.hpp"
#include "ifa_reference.hpp"
#include "kvflash/ifa.hpp"

namespace kvflash::tools {
namespace {

constexpr int64_t kNumHeads = 32, kNumKvHeads = 8, kHeadDim = 128, kBlockSize = 128;

struct IfaWorkload {
  std::vector<int64_t> lengths;
  int64_t num_blocks = 0, blocks_per_seq = 0;
  bool int8_kv = false;
  std::vector<uint16_t> query, out;                       // bf16
  std::vector<uint16_t> k16, v16;                         // bf16 cache
  std::vector<int8_t> k8, v8;                             // int8 cache
  std::vector<uint16_t> antiquant_scale, antiquant_offset;  // bf16 (2, KV_N * D)
  std::vector<int32_t> block_table;

  int64_t batch() const { return static_cast<int64_t>(lengths.size()); }
  DType kv_dtype() const { return int8_kv ? DType::kInt8 : DType::kBFloat16; }

  // Arguments for the sequences `rows` (indices into lengths), reading the shared cache, with the
  // query rows and the block-table rows copied (so a sample can run on its own).
  IfaArgs args_for(const std::vector<int64_t>& rows, std::vector<uint16_t>& q, std::vector<int32_t>& bt,
                   std::vector<uint16_t>& o) const {
    const int64_t b = static_cast<int64_t>(rows.size());
    q.assign(b * kNumHeads * kHeadDim, 0);
    bt.assign(b * blocks_per_seq, -1);
    o.assign(b * kNumHeads * kHeadDim, 0);
    std::vector<int64_t> lens;
    for (int64_t i = 0; i < b; ++i) {
      std::copy_n(query.begin() + rows[i] * kNumHeads * kHeadDim, kNumHeads * kHeadDim,
                  q.begin() + i * kNumHeads * kHeadDim);
      std::copy_n(block_table.begin() + rows[i] * blocks_per_seq, blocks_per_seq,
                  bt.begin() + i * blocks_per_seq);
      lens.push_back(lengths[rows[i]]);
    }
    IfaArgs a;
    a.query = TensorView::contiguous(q.data(), DType::kBFloat16, {b, 1, kNumHeads, kHeadDim});
    void* kc = int8_kv ? static_cast<void*>(const_cast<int8_t*>(k8.data()))
                       : static_cast<void*>(const_cast<uint16_t*>(k16.data()));
    void* vc = int8_kv ? static_cast<void*>(const_cast<int8_t*>(v8.data()))
                       : static_cast<void*>(const_cast<uint16_t*>(v16.data()));
    a.key = {TensorView::contiguous(kc, kv_dtype(), {num_blocks, kBlockSize, kNumKvHeads * kHeadDim})};
    a.value = {TensorView::contiguous(vc, kv_dtype(), {num_blocks, kBlockSize, kNumKvHeads * kHeadDim})};
    a.actual_seq_lengths = lens;
    a.block_table = TensorView::contiguous(bt.data(), DType::kInt32, {b, blocks_per_seq});
    if (int8_kv) {
      a.antiquant_scale = TensorView::contiguous(const_cast<uint16_t*>(antiquant_scale.data()),
                                                 DType::kBFloat16, {2, kNumKvHeads * kHeadDim});
      a.antiquant_offset = TensorView::contiguous(const_cast<uint16_t*>(antiquant_offset.data()),
                                                  DType::kBFloat16, {2, kNumKvHeads * kHeadDim});
    }
    a.num_heads = kNumHeads;
    a.num_key_value_heads = kNumKvHeads;
    a.scale_value = 1.0 / std::sqrt(static_cast<double>(kHeadDim));
    a.input_layout = "BSND";
    a.block_size = kBlockSize;
    a.attention_out = TensorView::contiguous(o.data(), DType::kBFloat16, {b, 1, kNumHeads, kHeadDim});
    return a;
  }
};

IfaWorkload make_workload(bool int8_kv, bool quick) {
  IfaWorkload w;
  w.int8_kv = int8_kv;
  // Mixed decode lengths, as in a serving batch: a few long contexts, many medium, some short.
  w.lengths = {4096, 1021, 3000, 7, 2048, 5120, 333, 8192, 1500, 2900, 640, 6000, 128, 4500, 777, 3333};
  if (quick) w.lengths.resize(4);
  const int64_t b = w.batch();
  Rng rng(int8_kv ? 8 : 16);
  PagedLayout paged = make_paged_layout(w.lengths, kBlockSize, /*spare_blocks=*/4, rng);
  w.num_blocks = paged.num_blocks;
  w.blocks_per_seq = paged.blocks_per_seq;
  w.block_table = std::move(paged.block_table);

  const int64_t cache_elems = w.num_blocks * kBlockSize * kNumKvHeads * kHeadDim;
  w.query.resize(b * kNumHeads * kHeadDim);
  fill_bf16(w.query, rng, 1.0f);
  if (int8_kv) {
    w.k8.resize(cache_elems);
    w.v8.resize(cache_elems);
    fill_int8(w.k8, rng);
    fill_int8(w.v8, rng);
    w.antiquant_scale.resize(2 * kNumKvHeads * kHeadDim);
    w.antiquant_offset.resize(2 * kNumKvHeads * kHeadDim);
    for (auto& s : w.antiquant_scale) s = core::float_to_bf16(0.01f + 0.01f * std::fabs(rng.uniform()));
    for (auto& o : w.antiquant_offset) o = core::float_to_bf16(std::round(rng.uniform() * 4.0f));
  } else {
    w.k16.resize(cache_elems);
    w.v16.resize(cache_elems);
    fill_bf16(w.k16, rng, 1.0f);
    fill_bf16(w.v16, rng, 1.0f);
  }
  return w;
}

}  // namespace

bool run_ifa_demo(const DemoOptions& options, bool int8_kv, double read_bandwidth_gbs) {
  const IfaWorkload w = make_workload(int8_kv, options.quick);
  std::vector<int64_t> all(w.batch());
  std::iota(all.begin(), all.end(), 0);
  std::vector<uint16_t> q, o;
  std::vector<int32_t> bt;
  IfaArgs args = w.args_for(all, q, bt, o);
  args.num_threads = options.num_threads;

  std::unique_ptr<IfaPlan> plan;
  if (IfaPlan::create(args, &plan) != Status::kSuccess) {
    std::printf("ifa: plan failed: %s\n", last_error_message());
    return false;
  }
  std::vector<std::byte> ws(plan->workspace_size());
  Status st = Status::kSuccess;
  const double seconds = median_seconds(2, options.iterations, [&] { st = plan->run(ws.data(), ws.size()); });
  if (st != Status::kSuccess) {
    std::printf("ifa: run failed: %s\n", last_error_message());
    return false;
  }

  // Sample check: the first, the longest and the shortest sequence, run on their own (which must
  // give the same bits as inside the batch) and compared with the double-precision reference.
  const auto longest = std::max_element(w.lengths.begin(), w.lengths.end()) - w.lengths.begin();
  const auto shortest = std::min_element(w.lengths.begin(), w.lengths.end()) - w.lengths.begin();
  std::vector<int64_t> rows = {0, longest, shortest};
  std::vector<uint16_t> sq, so;
  std::vector<int32_t> sbt;
  IfaArgs sample = w.args_for(rows, sq, sbt, so);
  sample.num_threads = options.num_threads;
  SampleCheck check;
  if (incre_flash_attention(sample) != Status::kSuccess) {
    std::printf("ifa: sample run failed: %s\n", last_error_message());
    return false;
  }
  const reference::IfaReference ref = reference::ifa_reference(sample);
  const double rtol = 0x1p-7;  // bf16 output
  const int64_t row_elems = kNumHeads * kHeadDim;
  for (size_t i = 0; i < rows.size(); ++i) {
    for (int64_t e = 0; e < row_elems; ++e) {
      const int64_t h = e / kHeadDim;
      const uint16_t got_bits = so[i * row_elems + e];
      check.add(core::bf16_to_float(got_bits), got_bits == o[rows[i] * row_elems + e],
                ref.expected[ref.index(i, h, e % kHeadDim)], rtol * ref.v_absmax[ref.row(i, h)], rtol);
    }
  }

  const int64_t tokens = std::accumulate(w.lengths.begin(), w.lengths.end(), int64_t{0});
  const double kv_bytes = 2.0 * tokens * kNumKvHeads * kHeadDim * (int8_kv ? 1 : 2);
  const double flops = 4.0 * tokens * kNumHeads * kHeadDim;  // QK and PV, 2 FLOP per MAC
  const double gbs = kv_bytes / seconds / 1e9;
  std::printf("ifa  llama3-8b decode  kv=%-4s paged bs=%lld  B=%lld tokens=%lld  %8.3f ms/call  "
              "KV %7.1f MB  %6.1f GB/s",
              int8_kv ? "int8" : "bf16", static_cast<long long>(kBlockSize),
              static_cast<long long>(w.batch()), static_cast<long long>(tokens), seconds * 1e3,
              kv_bytes / 1e6, gbs);
  if (read_bandwidth_gbs > 0) std::printf(" (%.0f%% of read bw)", 100.0 * gbs / read_bandwidth_gbs);
  std::printf("  %6.1f GFLOP/s\n", flops / seconds / 1e9);
  check.print("3 sequences");
  return check.passed();
}

}  // namespace kvflash::tools
