// The FIA prefill driver: workspace layout, the task list (longest first), the ISA entry and the
// padding rows. See fia_kernel.hpp.
#include "cpu/fia/fia_kernel.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

#include "cpu/fia/fia_kernel_isa.hpp"
#include "cpu/isa.hpp"
#include "cpu/thread_pool.hpp"

namespace kvflash::cpu {
namespace {

constexpr size_t kAlign = 64;

struct FiaTask {
  int64_t cost;  ///< key tiles visited
  int64_t b, n2, qt;
};

size_t round_up(size_t x) { return (x + kAlign - 1) / kAlign * kAlign; }

int64_t num_tasks(const FiaParams& p) {
  const int64_t tq = fia_query_tile(p.num_heads / p.num_kv_heads);
  int64_t n = 0;
  for (int64_t b = 0; b < p.batch; ++b) n += (p.batches[b].q_rows + tq - 1) / tq * p.num_kv_heads;
  return n;
}

size_t scratch_bytes(const FiaParams& p) {
  return round_up(static_cast<size_t>(scalar::fia_scratch_floats_entry(p)) * sizeof(float));
}

// Key tiles task (b, ., qt) visits: the same range rule as fia_task.
int64_t task_cost(const FiaParams& p, const FiaBatch& bt, int64_t qt) {
  const int64_t tq = fia_query_tile(p.num_heads / p.num_kv_heads);
  const int64_t i0 = qt * tq, i1 = std::min(bt.q_rows, i0 + tq);
  const int64_t jlo = std::max<int64_t>(0, i0 + bt.band_lo);
  const int64_t jhi = std::min<int64_t>(bt.kv_len - 1, (i1 - 1) + bt.band_hi);
  return jlo > jhi ? 0 : jhi / kFiaKeyTile - jlo / kFiaKeyTile + 1;
}

using TaskFn = void (*)(const FiaParams&, const FiaData&, float*, int64_t, int64_t, int64_t);

struct Run {
  const FiaParams* p;
  const FiaData* d;
  const FiaTask* tasks;
  std::byte* scratch;
  size_t stride;
  TaskFn fn;
};

}  // namespace

size_t fia_workspace_size(const FiaParams& p) {
  return kAlign + round_up(static_cast<size_t>(num_tasks(p)) * sizeof(FiaTask)) +
         static_cast<size_t>(kFiaMaxParticipants) * scratch_bytes(p);
}

void fia_run(const FiaParams& p, const FiaData& d, void* workspace, size_t workspace_size,
             int num_threads) {
  (void)workspace_size;  // the caller sized it with fia_workspace_size(p)
  auto* base = reinterpret_cast<std::byte*>(
      (reinterpret_cast<uintptr_t>(workspace) + kAlign - 1) / kAlign * kAlign);
  const int64_t nt = num_tasks(p);
  auto* tasks = reinterpret_cast<FiaTask*>(base);
  int64_t k = 0;
  const int64_t tq = fia_query_tile(p.num_heads / p.num_kv_heads);
  for (int64_t b = 0; b < p.batch; ++b) {
    const int64_t qts = (p.batches[b].q_rows + tq - 1) / tq;
    for (int64_t qt = 0; qt < qts; ++qt) {
      const int64_t cost = task_cost(p, p.batches[b], qt);
      for (int64_t n2 = 0; n2 < p.num_kv_heads; ++n2) tasks[k++] = {cost, b, n2, qt};
    }
  }
  // Longest first: with one-at-a-time claiming this balances causal work (late query tiles see
  // many key tiles). The order never changes a result: each row is computed inside one task.
  std::sort(tasks, tasks + nt, [](const FiaTask& x, const FiaTask& y) {
    if (x.cost != y.cost) return x.cost > y.cost;
    if (x.b != y.b) return x.b < y.b;
    if (x.qt != y.qt) return x.qt < y.qt;
    return x.n2 < y.n2;
  });

  TaskFn fn = scalar::fia_task_entry;
  switch (active_isa()) {
    case Isa::kAmx:  // no AMX tiles in this kernel yet: the AVX-512 body
    case Isa::kAvx512Bf16:
    case Isa::kAvx512:
      fn = avx512::fia_task_entry;
      break;
    case Isa::kAvx2:
      fn = avx2::fia_task_entry;
      break;
    case Isa::kScalar:
      break;
  }
  const int threads =
      std::min(num_threads > 0 ? num_threads : default_num_threads(), kFiaMaxParticipants);
  const Run run{&p, &d, tasks, base + round_up(static_cast<size_t>(nt) * sizeof(FiaTask)),
                scratch_bytes(p), fn};
  // The lambda captures one pointer, so std::function keeps it inline (no allocation).
  parallel_for(nt, threads, [r = &run](int64_t task, int worker) {
    const FiaTask& t = r->tasks[task];
    r->fn(*r->p, *r->d, reinterpret_cast<float*>(r->scratch + worker * r->stride), t.b, t.n2, t.qt);
  });

  // Padding rows (D5): 0 in every head, LSE +inf.
  const size_t row_bytes = static_cast<size_t>(p.value_dim) * dtype_size(p.out_dtype);
  for (int64_t r = 0; r < p.num_pad_rows; ++r) {
    for (int64_t h = 0; h < p.num_heads; ++h) {
      const int64_t ox = p.pad_rows[r].out_offset + h * p.o_head;
      std::memset(static_cast<std::byte*>(d.out) + ox * static_cast<int64_t>(dtype_size(p.out_dtype)),
                  0, row_bytes);
      if (p.has_lse)
        d.lse[p.pad_rows[r].lse_offset + h * p.lse_head] = std::numeric_limits<float>::infinity();
    }
  }
}

}  // namespace kvflash::cpu
