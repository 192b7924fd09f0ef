#include "ifa_workload.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <numeric>
#include <string>
#include <tuple>

#include "capi_ifa.hpp"
#include "demo_util.hpp"
#include "ifa_reference.hpp"
#include "kvflash/ifa.hpp"

namespace kvflash::tools {
namespace {

// The data of one workload. Caches are byte buffers of kv_dtype elements; query/output are 16-bit.
struct IfaWorkload {
  IfaWorkloadShape shape;
  DType q_dtype = DType::kBFloat16;
  int64_t s_max = 0;  // contiguous cache S
  PagedLayout paged;
  std::vector<uint16_t> query;
  std::vector<std::byte> key, value;
  std::vector<uint16_t> antiquant_scale, antiquant_offset;  // q_dtype (2, KV_N * D)

  int64_t batch() const { return static_cast<int64_t>(shape.lengths.size()); }
  int64_t q_row() const { return shape.num_heads * shape.head_dim; }
  int64_t kv_row() const { return shape.num_kv_heads * shape.head_dim; }
  bool is_paged() const { return shape.block_size > 0; }

  // Buffers a call owns: its query rows, block-table rows and output.
  struct Call {
    std::vector<uint16_t> q, out;
    std::vector<int32_t> bt;
  };

  // Arguments for the sequences `rows` (indices into lengths), reading the shared cache. The whole
  // batch uses one cache tensor; a subset of a contiguous cache is passed as a tensor list.
  IfaArgs args_for(const std::vector<int64_t>& rows, Call& c) const {
    const int64_t b = static_cast<int64_t>(rows.size());
    const int64_t n = shape.num_heads, kvn = shape.num_kv_heads, d = shape.head_dim;
    c.q.clear();
    c.bt.clear();
    c.out.assign(b * q_row(), 0);
    std::vector<int64_t> lens;
    for (int64_t r : rows) {
      c.q.insert(c.q.end(), query.begin() + r * q_row(), query.begin() + (r + 1) * q_row());
      if (is_paged())
        c.bt.insert(c.bt.end(), paged.block_table.begin() + r * paged.blocks_per_seq,
                    paged.block_table.begin() + (r + 1) * paged.blocks_per_seq);
      lens.push_back(shape.lengths[r]);
    }
    IfaArgs a;
    a.num_heads = n;
    a.num_key_value_heads = kvn;
    a.scale_value = 1.0 / std::sqrt(static_cast<double>(d));
    a.actual_seq_lengths = lens;
    void* k = const_cast<std::byte*>(key.data());
    void* v = const_cast<std::byte*>(value.data());
    const DType kvd = shape.kv_dtype;
    if (is_paged() && shape.paged_atb) {
      const int64_t bs = shape.block_size, nb = paged.num_blocks;
      a.input_layout = "BNSD";
      a.query = TensorView::contiguous(c.q.data(), q_dtype, {b, n, 1, d});
      TensorView cache = TensorView::contiguous(k, kvd, {nb, kvn, bs, d});
      cache.strides[1] = d;        // KV_N steps one head row
      cache.strides[2] = kvn * d;  // block_size steps one token row of KV_N heads
      a.key = {cache};
      cache.data = v;
      a.value = {cache};
      a.block_table = TensorView::contiguous(c.bt.data(), DType::kInt32, {b, paged.blocks_per_seq});
      a.block_size = bs;
      a.blocks_may_repeat = true;
      a.attention_out = TensorView::contiguous(c.out.data(), q_dtype, {b, n, 1, d});
    } else if (is_paged() && shape.paged_bnsd) {
      // The same bytes read as (blocks, KV_N, block_size, D): the data is random either way.
      a.input_layout = "BNSD";
      a.query = TensorView::contiguous(c.q.data(), q_dtype, {b, n, 1, d});
      a.key = {TensorView::contiguous(k, kvd, {paged.num_blocks, kvn, shape.block_size, d})};
      a.value = {TensorView::contiguous(v, kvd, {paged.num_blocks, kvn, shape.block_size, d})};
      a.block_table = TensorView::contiguous(c.bt.data(), DType::kInt32, {b, paged.blocks_per_seq});
      a.block_size = shape.block_size;
      a.attention_out = TensorView::contiguous(c.out.data(), q_dtype, {b, n, 1, d});
    } else if (is_paged()) {
      a.input_layout = "BSND";
      a.query = TensorView::contiguous(c.q.data(), q_dtype, {b, 1, n, d});
      a.key = {TensorView::contiguous(k, kvd, {paged.num_blocks, shape.block_size, kvn * d})};
      a.value = {TensorView::contiguous(v, kvd, {paged.num_blocks, shape.block_size, kvn * d})};
      a.block_table = TensorView::contiguous(c.bt.data(), DType::kInt32, {b, paged.blocks_per_seq});
      a.block_size = shape.block_size;
      a.attention_out = TensorView::contiguous(c.out.data(), q_dtype, {b, 1, n, d});
    } else {
      a.input_layout = "BNSD";
      a.query = TensorView::contiguous(c.q.data(), q_dtype, {b, n, 1, d});
      a.attention_out = TensorView::contiguous(c.out.data(), q_dtype, {b, n, 1, d});
      std::vector<int64_t> identity(batch());
      std::iota(identity.begin(), identity.end(), 0);
      if (rows == identity) {
        a.key = {TensorView::contiguous(k, kvd, {b, kvn, s_max, d})};
        a.value = {TensorView::contiguous(v, kvd, {b, kvn, s_max, d})};
      } else {
        const int64_t seq_bytes = kvn * s_max * d * static_cast<int64_t>(dtype_size(kvd));
        for (int64_t r : rows) {
          a.key.push_back(TensorView::contiguous(static_cast<std::byte*>(k) + r * seq_bytes, kvd,
                                                 {1, kvn, s_max, d}));
          a.value.push_back(TensorView::contiguous(static_cast<std::byte*>(v) + r * seq_bytes, kvd,
                                                   {1, kvn, s_max, d}));
        }
      }
    }
    if (kvd == DType::kInt8) {
      a.antiquant_scale = TensorView::contiguous(const_cast<uint16_t*>(antiquant_scale.data()),
                                                 q_dtype, {2, kvn * d});
      a.antiquant_offset = TensorView::contiguous(const_cast<uint16_t*>(antiquant_offset.data()),
                                                  q_dtype, {2, kvn * d});
    }
    return a;
  }
};

uint16_t to_16bit(float x, DType dtype) {
  return dtype == DType::kFloat16 ? core::float_to_fp16(x) : core::float_to_bf16(x);
}
float from_16bit(uint16_t x, DType dtype) {
  return dtype == DType::kFloat16 ? core::fp16_to_float(x) : core::bf16_to_float(x);
}

IfaWorkload make_workload(const IfaWorkloadShape& shape) {
  IfaWorkload w;
  w.shape = shape;
  w.q_dtype = shape.kv_dtype == DType::kFloat16 ? DType::kFloat16 : DType::kBFloat16;
  Rng rng(static_cast<uint64_t>(shape.lengths.size()) * 131 +
          static_cast<uint64_t>(shape.kv_dtype));
  int64_t cache_rows = 0;  // rows of KV_N * D elements
  if (w.is_paged()) {
    w.paged = make_paged_layout(shape.lengths, shape.block_size, /*spare_blocks=*/4, rng);
    cache_rows = w.paged.num_blocks * shape.block_size;
  } else {
    w.s_max = *std::max_element(shape.lengths.begin(), shape.lengths.end());
    cache_rows = w.batch() * w.s_max;
  }
  w.query.resize(w.batch() * w.q_row());
  for (auto& x : w.query) x = to_16bit(rng.normal(), w.q_dtype);
  const size_t cache_elems = static_cast<size_t>(cache_rows * w.kv_row());
  const size_t elem = dtype_size(shape.kv_dtype);
  w.key.resize(cache_elems * elem);
  w.value.resize(cache_elems * elem);
  for (auto* cache : {&w.key, &w.value}) {
    if (shape.kv_dtype == DType::kInt8) {
      for (auto& x : *cache)
        x = static_cast<std::byte>(static_cast<int8_t>(static_cast<int>(rng.next() % 255) - 127));
    } else {
      auto* p = reinterpret_cast<uint16_t*>(cache->data());
      for (size_t i = 0; i < cache_elems; ++i) p[i] = to_16bit(rng.normal(), shape.kv_dtype);
    }
  }
  if (shape.kv_dtype == DType::kInt8) {
    w.antiquant_scale.resize(2 * w.kv_row());
    w.antiquant_offset.resize(2 * w.kv_row());
    for (auto& s : w.antiquant_scale)
      s = to_16bit(0.01f + 0.01f * std::fabs(rng.uniform()), w.q_dtype);
    for (auto& o : w.antiquant_offset) o = to_16bit(std::round(rng.uniform() * 4.0f), w.q_dtype);
  }
  return w;
}

}  // namespace

bool run_ifa_workload(const IfaWorkloadShape& shape, const DemoOptions& options,
                      double read_bandwidth_gbs, bool check_sample, IfaWorkloadResult* result) {
  const IfaWorkload w = make_workload(shape);
  std::vector<int64_t> all(w.batch());
  std::iota(all.begin(), all.end(), 0);
  IfaWorkload::Call call;
  IfaArgs args = w.args_for(all, call);
  args.num_threads = options.num_threads;
  std::unique_ptr<IfaPlan> plan;
  if (IfaPlan::create(args, &plan) != Status::kSuccess) {
    std::printf("%s: plan failed: %s\n", shape.name.c_str(), last_error_message());
    return false;
  }
  std::vector<std::byte> ws(plan->workspace_size());
  Status st = Status::kSuccess;
  const auto cpp_call = [&] { st = plan->run(args, ws.data(), ws.size()); };
  // --capi: the C API path on the same tensors, alternated with the C++ call run by run.
  std::string capi_note = options.capi ? "" : "not timed (bench --capi)";
  std::unique_ptr<CapiIfaCall> capi = options.capi ? CapiIfaCall::create(args, &capi_note) : nullptr;
  CallTimes times, capi_times;
  if (capi) {
    bool capi_ok = true;
    std::string capi_error;
    std::tie(capi_times, times) = time_alternated(
        2, options.iterations, [&] { capi_ok = capi->run(&capi_error) && capi_ok; }, cpp_call,
        flush_before(options));
    if (!capi_ok) {
      std::printf("%s: the C API call failed: %s\n", shape.name.c_str(), capi_error.c_str());
      return false;
    }
  } else {
    times = time_calls(2, options.iterations, cpp_call, flush_before(options));
  }
  const double seconds = times.median_seconds();
  if (st != Status::kSuccess) {
    std::printf("%s: run failed: %s\n", shape.name.c_str(), last_error_message());
    return false;
  }

  const int64_t tokens = std::accumulate(shape.lengths.begin(), shape.lengths.end(), int64_t{0});
  // The bytes and FLOPs of tools/roofline.hpp: K and V, the query and the output (bf16 or fp16).
  const Work work =
      ifa_decode_work(tokens, w.batch(), shape.num_heads, shape.num_kv_heads, shape.head_dim,
                      static_cast<int>(dtype_size(shape.kv_dtype)), 2);
  const double bytes = work.bytes, flops = work.flops;
  const double gbs = bytes / seconds / 1e9;
  std::printf(
      "ifa  %s  kv=%s %s  B=%lld N=%lld KV_N=%lld D=%lld tokens=%lld  %s  bytes %7.1f MB  "
      "%6.1f GB/s",
      shape.name.c_str(), dtype_name(shape.kv_dtype),
      w.is_paged() ? ("paged bs=" + std::to_string(shape.block_size) +
                      (shape.paged_bnsd ? " bnsd" : shape.paged_atb ? " atb" : ""))
                         .c_str()
                   : "contiguous",
      static_cast<long long>(w.batch()), static_cast<long long>(shape.num_heads),
      static_cast<long long>(shape.num_kv_heads), static_cast<long long>(shape.head_dim),
      static_cast<long long>(tokens), describe(times, options.warm(), "/call").c_str(),
      bytes / 1e6, gbs);
  if (read_bandwidth_gbs > 0) std::printf(" (%.0f%% of read bw)", 100.0 * gbs / read_bandwidth_gbs);
  std::printf("  %6.1f GFLOP/s\n", flops / seconds / 1e9);
  if (capi) {
    std::printf("     C API + stream (GetWorkspaceSize, aclrtMalloc, launch, synchronize): %s; "
                "C API / C++ %.3f\n",
                describe(capi_times, options.warm(), "/call").c_str(),
                capi_times.median_ms / times.median_ms);
  } else if (options.capi) {
    std::printf("     C API path: not timed: %s\n", capi_note.c_str());
  }
  IfaWorkloadResult unused;
  IfaWorkloadResult& res = result ? *result : unused;
  res = {times, bytes, flops, gbs, flops / seconds / 1e9, check_sample, false, capi_times,
         capi_note};
  if (!check_sample) return true;

  // Sample check: the first, the longest and the shortest sequence, run on their own (which must
  // give the same bits as inside the batch) and compared with the double-precision reference.
  // Each sequence is sampled once: with batch < 3 two of the picks coincide, and replaying one
  // sequence twice would hand a paged call more block-table rows than the cache has blocks.
  const auto& len = shape.lengths;
  std::vector<int64_t> rows;
  for (int64_t r : {int64_t{0}, std::max_element(len.begin(), len.end()) - len.begin(),
                    std::min_element(len.begin(), len.end()) - len.begin()})
    if (std::find(rows.begin(), rows.end(), r) == rows.end()) rows.push_back(r);
  IfaWorkload::Call sample_call;
  IfaArgs sample = w.args_for(rows, sample_call);
  sample.num_threads = options.num_threads;
  if (incre_flash_attention(sample) != Status::kSuccess) {
    std::printf("%s: sample run failed: %s\n", shape.name.c_str(), last_error_message());
    return false;
  }
  const reference::IfaReference ref = reference::ifa_reference(sample);
  const double rtol = w.q_dtype == DType::kFloat16 ? 0x1p-10 : 0x1p-7;
  const int64_t d = shape.head_dim;
  SampleCheck check;
  for (size_t i = 0; i < rows.size(); ++i) {
    for (int64_t e = 0; e < w.q_row(); ++e) {
      const int64_t h = e / d;
      const uint16_t got = sample_call.out[i * w.q_row() + e];
      check.add(from_16bit(got, w.q_dtype), got == call.out[rows[i] * w.q_row() + e],
                ref.expected[ref.index(i, h, e % d)], rtol * ref.v_absmax[ref.row(i, h)], rtol);
    }
  }
  const std::string what =
      std::to_string(rows.size()) + (rows.size() == 1 ? " sequence" : " sequences");
  check.print(what.c_str());
  res.passed = check.passed();
  return check.passed();
}

}  // namespace kvflash::tools
