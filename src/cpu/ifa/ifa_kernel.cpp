// IFA CPU backend: lays out and prepares the workspace (the run's device reads), then runs the
// chunk tasks and the merge tasks of one ISA's kernels on the parallel loop.
#include "cpu/ifa/ifa_kernel.hpp"

#include <algorithm>
#include <cassert>

#include "cpu/ifa/ifa_workspace.hpp"
#include "cpu/isa.hpp"
#include "cpu/thread_pool.hpp"

namespace kvflash::cpu {
namespace {

struct Run {
  const core::IfaProblem* p;
  const core::IfaData* d;
  const IfaLayout* layout;
  const IfaSchedule* schedule;
  std::byte* base;
  const IfaKernels* k;
};

// Waking a pool worker costs a futex round trip (~10 us here), about what two cores take to read
// a few hundred KB of K/V: a problem with less than kMinBytesPerWorker for each worker runs on
// fewer of them (a 16-token decode step on one). The thread count never changes the bits (tasks
// and their merge order are fixed), so this only changes the time.
constexpr double kMinBytesPerWorker = 256 * 1024;

int workers_for(const core::IfaProblem& p, int threads) {
  int64_t positions = 0;
  for (int64_t len : p.kv_len) positions += len;
  const double bytes = 2.0 * static_cast<double>(positions) * static_cast<double>(p.num_kv_heads) *
                       static_cast<double>(p.head_dim) * static_cast<double>(dtype_size(p.k.dtype));
  return static_cast<int>(std::clamp(bytes / kMinBytesPerWorker, 1.0, static_cast<double>(threads)));
}

}  // namespace

size_t ifa_workspace_size(const core::IfaProblem& p) { return ifa_layout(p).bytes; }

Status ifa_run(const core::IfaProblem& p, const core::IfaData& data, const core::RunContext& ctx,
               const IfaKernels& k) {
  assert(p.group <= kIfaMaxGroup && p.head_dim <= kIfaMaxHeadDim);  // validated
  const IfaLayout layout = ifa_layout(p);
  core::IfaData d;
  std::byte* base = ifa_prepare(p, data, layout, ctx.workspace, &d);
  const int n = ctx.num_threads;
  const int threads = workers_for(p, n > 0 ? n : default_num_threads());
  IfaSchedule schedule = ifa_schedule(p, layout, threads);
  schedule.bf16_dot = k.bf16_dot;
  // Intel cores read the two streams faster with misses in flight on both (docs/perf-log.md,
  // "IFA decode read rate on Intel (2026-12-05, round 2)"); other vendors keep the per-stream
  // prefetch their numbers were measured with.
  schedule.prefetch_across = cpu_features().intel;
  // The lambdas capture one pointer, so std::function keeps them inline (no allocation).
  const Run run{&p, &d, &layout, &schedule, base, &k};
  parallel_for(schedule.num_tasks, threads, [r = &run](int64_t task, int) {
    r->k->chunk(*r->p, *r->d, *r->layout, *r->schedule, r->base, task);
  });
  // Merge tasks of sequences of one chunk already ran inside their chunk task.
  bool any_merge = false;
  for (int64_t b = 0; b < p.batch && !any_merge; ++b) any_merge = !ifa_merged_by_chunk(p, b);
  if (any_merge) {
    parallel_for(p.batch * p.num_kv_heads, threads, [r = &run](int64_t task, int) {
      if (ifa_merged_by_chunk(*r->p, task / r->p->num_kv_heads)) return;
      r->k->merge(*r->p, *r->d, *r->layout, r->base, task);
    });
  }
  return ifa_report_faults(p, d);
}

}  // namespace kvflash::cpu
