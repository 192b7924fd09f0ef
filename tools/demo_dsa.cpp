// Demo workload 3: the whole DeepSeek-V3.2 sparse-attention step as vllm-ascend runs it: the
// lightning indexer (64 heads of 128 dims, weights per head) scores every cached token of each
// request and keeps the top 2048; SparseFlashAttention (128 query heads over the 512 + 64 latent
// cache) attends exactly those. TND query rows (one decode row per request), PA_BSND caches of
// 128-token blocks sharing one shuffled block table and the length tensors; the indexer's
// sparse_indices [T, 1, 2048] are SFA's input as they are. Each half is timed; the indexer is
// checked against fp64 (its selections against the exact scores), SFA against the fp64
// reference over the indexer's selection, so the step is checked end to end.
#include <cmath>
#include <cstdio>
#include <memory>
#include <vector>

#include "demo.hpp"
#include "demo_util.hpp"
#include "kvflash/sfa.hpp"
#include "li_workload.hpp"
#include "sfa_reference.hpp"

namespace kvflash::tools {
namespace {

constexpr int64_t kHeads = 128, kLatent = 512, kRope = 64;

// SFA's inputs of the step: its queries and latent cache, and views of the indexer's outputs
// and of its block table and lengths.
struct SfaHalf {
  std::vector<uint16_t> q, qr, kv, kr, out;
  SfaArgs args;
};

void make_sfa_half(const LiWorkload& li, uint64_t seed, SfaHalf* h) {
  const int64_t t = li.rows(), bs = li.shape.block_size, blocks = li.num_blocks;
  Rng rng(seed);
  h->q.resize(t * kHeads * kLatent);
  h->qr.resize(t * kHeads * kRope);
  h->kv.resize(blocks * bs * kLatent);
  h->kr.resize(blocks * bs * kRope);
  for (auto* v : {&h->q, &h->qr, &h->kv, &h->kr}) fill_bf16(*v, rng, 1.0f);
  h->out.assign(t * kHeads * kLatent, 0);
  const LightningIndexerArgs& la = li.args;
  SfaArgs& a = h->args;
  a.query = TensorView::contiguous(h->q.data(), DType::kBFloat16, {t, kHeads, kLatent});
  a.query_rope = TensorView::contiguous(h->qr.data(), DType::kBFloat16, {t, kHeads, kRope});
  a.key = TensorView::contiguous(h->kv.data(), DType::kBFloat16, {blocks, bs, 1, kLatent});
  a.value = a.key;
  a.key_rope = TensorView::contiguous(h->kr.data(), DType::kBFloat16, {blocks, bs, 1, kRope});
  a.sparse_indices = la.sparse_indices;
  a.block_table = la.block_table;
  a.actual_seq_lengths_query = la.actual_seq_lengths_query;
  a.actual_seq_lengths_kv = la.actual_seq_lengths_key;
  a.scale_value = 1.0 / std::sqrt(static_cast<double>(kLatent + kRope));
  a.sparse_block_size = 1;
  a.layout_query = "TND";
  a.layout_kv = "PA_BSND";
  a.sparse_mode = 3;
  a.attention_mode = 2;
  a.attention_out = TensorView::contiguous(h->out.data(), DType::kBFloat16, {t, kHeads, kLatent});
}

// SFA of request r alone (its query row, indices, table row and length) vs the fp64 reference.
void check_sfa_row(const LiWorkload& li, const SfaHalf& h, int64_t r, int num_threads,
                   SampleCheck* check) {
  const int64_t k = li.shape.top_k;
  std::vector<uint16_t> q(h.q.begin() + r * kHeads * kLatent,
                          h.q.begin() + (r + 1) * kHeads * kLatent);
  std::vector<uint16_t> qr(h.qr.begin() + r * kHeads * kRope,
                           h.qr.begin() + (r + 1) * kHeads * kRope);
  std::vector<uint16_t> out(kHeads * kLatent, 0);
  std::vector<int32_t> idx(li.indices.begin() + r * k, li.indices.begin() + (r + 1) * k);
  std::vector<int32_t> bt(li.block_table.begin() + r * li.blocks_per_seq,
                          li.block_table.begin() + (r + 1) * li.blocks_per_seq);
  std::vector<int32_t> lq = {1}, lk = {li.lengths_key[r]};
  SfaArgs a = h.args;
  a.query = TensorView::contiguous(q.data(), DType::kBFloat16, {1, kHeads, kLatent});
  a.query_rope = TensorView::contiguous(qr.data(), DType::kBFloat16, {1, kHeads, kRope});
  a.sparse_indices = TensorView::contiguous(idx.data(), DType::kInt32, {1, 1, k});
  a.block_table = TensorView::contiguous(bt.data(), DType::kInt32, {1, li.blocks_per_seq});
  a.actual_seq_lengths_query = TensorView::contiguous(lq.data(), DType::kInt32, {1});
  a.actual_seq_lengths_kv = TensorView::contiguous(lk.data(), DType::kInt32, {1});
  a.attention_out = TensorView::contiguous(out.data(), DType::kBFloat16, {1, kHeads, kLatent});
  a.num_threads = num_threads;
  if (sparse_flash_attention(a) != Status::kSuccess) {
    std::printf("dsa: sample SFA run failed: %s\n", last_error_message());
    check->bits_match_batch = false;
    return;
  }
  const reference::SfaReference ref = reference::sfa_reference(a);
  const double rtol = 0x1p-7;  // bf16 output
  for (int64_t e = 0; e < kHeads * kLatent; ++e) {
    const uint16_t got = out[e];
    check->add(core::bf16_to_float(got), got == h.out[r * kHeads * kLatent + e],
               ref.attention[ref.index(0, e / kLatent, e % kLatent)], rtol * ref.v_absmax[0], rtol);
  }
}

}  // namespace

bool run_dsa_demo(const DemoOptions& options, double read_bandwidth_gbs,
                  const Ceiling& ceiling) {
  LiWorkloadShape shape;
  shape.name = "deepseek-v3.2";
  shape.batch = options.quick ? 2 : 4;
  shape.kv_len = options.quick ? 8192 : 32768;
  auto li = std::make_unique<LiWorkload>();
  make_li_workload(shape, li.get());
  li->args.num_threads = options.num_threads;
  auto sfa = std::make_unique<SfaHalf>();
  make_sfa_half(*li, 11, sfa.get());
  sfa->args.num_threads = options.num_threads;

  std::unique_ptr<LightningIndexerPlan> li_plan;
  std::unique_ptr<SfaPlan> sfa_plan;
  if (LightningIndexerPlan::create(li->args, &li_plan) != Status::kSuccess ||
      SfaPlan::create(sfa->args, &sfa_plan) != Status::kSuccess) {
    std::printf("dsa: plan failed: %s\n", last_error_message());
    return false;
  }
  std::vector<std::byte> li_ws(li_plan->workspace_size()), sfa_ws(sfa_plan->workspace_size());
  Status li_st = Status::kSuccess, sfa_st = Status::kSuccess;
  // The indexer first (SFA reads its output), then each half timed on its own.
  li_st = li_plan->run(li->args, li_ws.data(), li_ws.size());
  const CallTimes li_t = time_calls(
      0, options.iterations, [&] { li_st = li_plan->run(li->args, li_ws.data(), li_ws.size()); },
      flush_before(options));
  const CallTimes sfa_t = time_calls(
      1, options.iterations,
      [&] { sfa_st = sfa_plan->run(sfa->args, sfa_ws.data(), sfa_ws.size()); },
      flush_before(options));
  const double li_s = li_t.median_seconds(), sfa_s = sfa_t.median_seconds();
  if (li_st != Status::kSuccess || sfa_st != Status::kSuccess) {
    std::printf("dsa: run failed: %s\n", last_error_message());
    return false;
  }
  const double rows = static_cast<double>(li->rows());
  // The indexer's FLOPs and bytes (tools/roofline.hpp, li_work), as `kvflash bench li:...`.
  const Work li_w = li_work(shape.batch, li->rows(), shape.kv_len, shape.num_heads, 2);
  const double li_flops = li_w.flops;
  const double sfa_flops = 2.0 * rows * shape.top_k * kHeads * (kLatent + kRope + kLatent);
  const double total = li_s + sfa_s;
  std::printf(
      "dsa  deepseek-v3.2 decode step  bf16 paged bs=%lld  B=%lld S=%lld  indexer N=64 top-%lld "
      "%s (%.0f%%, %.0f GFLOP/s)  + SFA N=%lld %s (%.0f%%, %.0f GFLOP/s)  = %.3f ms per layer "
      "(the medians' sum)",
      static_cast<long long>(shape.block_size), static_cast<long long>(shape.batch),
      static_cast<long long>(shape.kv_len), static_cast<long long>(shape.top_k),
      describe(li_t, options.warm()).c_str(), 100.0 * li_s / total, li_flops / li_s / 1e9,
      static_cast<long long>(kHeads), describe(sfa_t, options.warm()).c_str(),
      100.0 * sfa_s / total, sfa_flops / sfa_s / 1e9, total * 1e3);
  std::printf("\n");
  const Roofline roof = roofline(li_w, li_t.median_ms, read_bandwidth_gbs, ceiling);
  if (roof.valid)
    std::printf("     indexer: %s\n", describe_roofline(roof, read_bandwidth_gbs, ceiling).c_str());

  std::vector<int64_t> sample = {0};
  if (shape.batch > 1) sample.push_back(shape.batch - 1);
  int64_t same = 0, checked = 0;
  const bool li_ok = check_li_sample(*li, sample, &same, &checked);
  SampleCheck check;
  for (int64_t r : sample) check_sfa_row(*li, *sfa, r, options.num_threads, &check);
  check.print(sample.size() == 1 ? "SFA over the indexer's selection, 1 request"
                                 : "SFA over the indexer's selection, 2 requests");
  // A selection may differ from fp64's only by keys within the fp32 tolerance of the boundary
  // (the indexer check); where it equals fp64's, SFA's check is the fp64 step's.
  std::printf(
      "     end to end: the indexer's selection equals fp64's in %lld of %lld sampled rows "
      "(the others differ only within the fp32 tolerance at the top-k boundary)\n",
      static_cast<long long>(same), static_cast<long long>(checked));
  return li_ok && check.passed();
}

}  // namespace kvflash::tools
