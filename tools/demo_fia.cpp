// Demo workload 3: a Llama-3-8B attention layer (32 query heads, 8 KV heads, head dim 128, bf16)
// through FusedInferAttentionScore as vllm-ascend calls it: the prompt's prefill (TND query, a
// paged BnBsH cache of block size 128 with a shuffled block table, sparse_mode 3 with the 2048x2048
// mask), then decode steps on the same cache, each step's new K/V row written into it first.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <vector>

#include "demo.hpp"
#include "demo_util.hpp"
#include "fia_reference.hpp"
#include "kvflash/fia.hpp"

namespace kvflash::tools {
namespace {

constexpr int64_t kN = 32, kKvN = 8, kD = 128, kBlock = 128, kMask = 2048, kDecodeSteps = 4;
constexpr int64_t kCheckRows = 16;  // prefill rows checked against fp64 (the last ones)

struct Layer {
  int64_t capacity = 0;
  PagedLayout paged;
  std::vector<uint16_t> key, value;  // (blocks, 128, KV_N * D) bf16
  std::vector<uint8_t> mask;         // the compressed mask (never read, D3)

  // The call over `rows` query rows (TND) of a sequence whose first `kv` positions are cached.
  FiaArgs args(int64_t rows, int64_t kv, uint16_t* q, uint16_t* out) {
    FiaArgs a;
    a.query = TensorView::contiguous(q, DType::kBFloat16, {rows, kN, kD});
    a.key = {TensorView::contiguous(key.data(), DType::kBFloat16,
                                    {paged.num_blocks, kBlock, kKvN * kD})};
    a.value = {TensorView::contiguous(value.data(), DType::kBFloat16,
                                      {paged.num_blocks, kBlock, kKvN * kD})};
    a.block_table =
        TensorView::contiguous(paged.block_table.data(), DType::kInt32, {1, paged.blocks_per_seq});
    a.block_size = kBlock;
    a.atten_mask = TensorView::contiguous(mask.data(), DType::kInt8, {kMask, kMask});
    a.actual_seq_lengths = std::vector<int64_t>{rows};   // cumulative (TND)
    a.actual_seq_lengths_kv = std::vector<int64_t>{kv};  // per batch (paged)
    a.num_heads = kN;
    a.num_key_value_heads = kKvN;
    a.scale = 1.0 / std::sqrt(static_cast<double>(kD));
    a.input_layout = "TND";
    a.sparse_mode = 3;
    a.attention_out = TensorView::contiguous(out, DType::kBFloat16, {rows, kN, kD});
    return a;
  }
};

// Rows r0.. of out (rows x N x D) against the oracle of `a` (its rows are out's last ones).
void check_rows(const FiaArgs& a, const uint16_t* out, SampleCheck* check) {
  const reference::FiaReference ref = reference::fia_reference(a);  // FiaCall is FiaArgs
  for (int64_t r = 0; r < ref.rows; ++r)
    for (int64_t h = 0; h < kN; ++h)
      for (int64_t d = 0; d < kD; ++d)
        check->add(core::bf16_to_float(out[(r * kN + h) * kD + d]), true,
                   ref.attention[ref.index(r, h, d)], 0x1p-7 * ref.v_absmax[ref.row(r, h)], 0x1p-7);
}

}  // namespace

bool run_fia_demo(const DemoOptions& options, double read_bandwidth_gbs,
                  const Ceiling& ceiling) {
  const int64_t prompt = options.quick ? 256 : 2048;
  Layer L;
  Rng rng(2048);
  L.capacity = prompt + kDecodeSteps;
  L.paged = make_paged_layout(std::vector<int64_t>{L.capacity}, kBlock, 0, rng);
  L.key.resize(L.paged.num_blocks * kBlock * kKvN * kD);
  L.value.resize(L.key.size());
  fill_bf16(L.key, rng, 1.0f);
  fill_bf16(L.value, rng, 1.0f);
  L.mask.assign(kMask * kMask, 1);
  std::vector<uint16_t> q(prompt * kN * kD), out(q.size(), 0);
  fill_bf16(q, rng, 1.0f);

  // Prefill: the prompt over its own cached K/V, causal.
  FiaArgs pre = L.args(prompt, prompt, q.data(), out.data());
  pre.num_threads = options.num_threads;
  std::unique_ptr<FiaPlan> plan;
  if (FiaPlan::create(pre, &plan) != Status::kSuccess) {
    std::printf("fia demo: prefill plan failed: %s\n", last_error_message());
    return false;
  }
  std::vector<std::byte> ws(plan->workspace_size());
  Status st = Status::kSuccess;
  // The prefill takes seconds on a small machine: at most 3 timed runs (its row says how many).
  const int iters = std::max(1, std::min(options.iterations, 3));
  const CallTimes pre_t = time_calls(
      1, iters, [&] { st = plan->run(pre, ws.data(), ws.size()); }, flush_before(options));
  const double sec = pre_t.median_seconds();
  if (st != Status::kSuccess) {
    std::printf("fia demo: prefill failed: %s\n", last_error_message());
    return false;
  }
  // The FLOPs and bytes of tools/roofline.hpp (prefill_work), as `kvflash bench fia:...` counts.
  const double pairs = static_cast<double>(prompt) * static_cast<double>(prompt + 1) / 2;
  const Work work = prefill_work(pairs, prompt, prompt, kN, kKvN, kD, 2, 2);
  const double gflops = work.flops / sec / 1e9;
  std::printf(
      "fia  Llama-3-8B prefill  bf16 TND paged bs=%lld  %lld tokens causal  %s of %d run%s  "
      "%7.1f GFLOP/s",
      static_cast<long long>(kBlock), static_cast<long long>(prompt),
      describe(pre_t, options.warm()).c_str(), pre_t.runs, pre_t.runs == 1 ? "" : "s", gflops);
  std::printf("\n");
  const Roofline roof = roofline(work, sec * 1e3, read_bandwidth_gbs, ceiling);
  if (roof.valid) std::printf("     %s\n", describe_roofline(roof, read_bandwidth_gbs, ceiling).c_str());
  // Check: the last kCheckRows prompt rows alone (mode 3 gives them the same band).
  SampleCheck check;
  const int64_t rows = std::min(kCheckRows, prompt);
  std::vector<uint16_t> sq(q.end() - rows * kN * kD, q.end()), so(sq.size(), 0);
  FiaArgs sample = L.args(rows, prompt, sq.data(), so.data());
  if (fused_infer_attention_score(sample) != Status::kSuccess) {
    std::printf("fia demo: sample failed: %s\n", last_error_message());
    return false;
  }
  for (size_t e = 0; e < so.size(); ++e)
    check.bits_match_batch &= so[e] == out[out.size() - so.size() + e];
  check_rows(sample, so.data(), &check);
  check.print("the last prompt rows");
  bool ok = check.passed();

  // Decode: each step appends one K/V row at position kv - 1, then attends all kv positions.
  SampleCheck dcheck;
  std::vector<CallTimes> step_times;
  for (int64_t t = 0; t < kDecodeSteps; ++t) {
    const int64_t kv = prompt + t + 1;
    const int64_t pos = kv - 1, blk = L.paged.block_table[pos / kBlock];
    for (int64_t x = 0; x < kKvN * kD; ++x) {
      const int64_t e = (blk * kBlock + pos % kBlock) * kKvN * kD + x;
      L.key[e] = core::float_to_bf16(rng.normal());
      L.value[e] = core::float_to_bf16(rng.normal());
    }
    std::vector<uint16_t> dq(kN * kD), dout(dq.size(), 0);
    fill_bf16(dq, rng, 1.0f);
    FiaArgs step = L.args(1, kv, dq.data(), dout.data());
    step.num_threads = options.num_threads;
    std::unique_ptr<FiaPlan> sp;
    if (FiaPlan::create(step, &sp) != Status::kSuccess) {
      std::printf("fia demo: decode plan failed: %s\n", last_error_message());
      return false;
    }
    std::vector<std::byte> sws(sp->workspace_size());
    step_times.push_back(time_calls(
        1, options.iterations, [&] { st = sp->run(step, sws.data(), sws.size()); },
        flush_before(options)));
    if (st != Status::kSuccess) {
      std::printf("fia demo: decode failed: %s\n", last_error_message());
      return false;
    }
    check_rows(step, dout.data(), &dcheck);
  }
  const CallTimes dt = mean_times(step_times);
  const double dms = dt.median_ms;
  const double kv_bytes = 2.0 * 2.0 * (prompt + kDecodeSteps / 2.0) * kKvN * kD;
  const double gbs = kv_bytes / (dms / 1e3) / 1e9;
  std::printf(
      "fia  Llama-3-8B decode   bf16 TND paged bs=%lld  %lld steps after the prompt  %s "
      "(the steps' mean)  %6.2f GB/s KV",
      static_cast<long long>(kBlock), static_cast<long long>(kDecodeSteps),
      describe(dt, options.warm(), "/step").c_str(), gbs);
  if (read_bandwidth_gbs > 0) std::printf(" (%.0f%% of read bw)", 100.0 * gbs / read_bandwidth_gbs);
  std::printf("\n");
  dcheck.print("every decode step");
  ok = dcheck.passed() && ok;
  return ok;
}

}  // namespace kvflash::tools
