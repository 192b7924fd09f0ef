// IFA kernel entry: lays out the workspace, then runs the chunk tasks and the merge tasks of the
// active ISA on the library pool.
#include "cpu/ifa_kernel.hpp"

#include <cassert>

#include "cpu/ifa_kernel_isa.hpp"
#include "cpu/ifa_workspace.hpp"
#include "cpu/isa.hpp"
#include "cpu/thread_pool.hpp"

namespace kvflash::cpu {
namespace {

using ChunkFn = void (*)(const core::IfaProblem&, const IfaLayout&, const IfaSchedule&, std::byte*,
                         int64_t);
using MergeFn = void (*)(const core::IfaProblem&, const IfaLayout&, std::byte*, int64_t);

struct Run {
  const core::IfaProblem* p;
  const IfaLayout* layout;
  const IfaSchedule* schedule;
  std::byte* base;
  ChunkFn chunk;
  MergeFn merge;
};

}  // namespace

size_t ifa_workspace_size(const core::IfaProblem& p) { return ifa_layout(p).bytes; }

void ifa_run(const core::IfaProblem& p, void* ws) {
  assert(p.group <= kIfaMaxGroup && p.head_dim <= kIfaMaxHeadDim);  // validated
  const IfaLayout layout = ifa_layout(p);
  std::byte* base = ifa_prepare(p, layout, ws);
  const int threads = p.num_threads > 0 ? p.num_threads : default_num_threads();
  IfaSchedule schedule = ifa_schedule(p, layout, threads);
  ChunkFn chunk = scalar::ifa_chunk;
  MergeFn merge = scalar::ifa_merge;
  const Isa isa = active_isa();
  schedule.bf16_dot = isa >= Isa::kAvx512Bf16;
  switch (isa) {
    case Isa::kAvx512Bf16:
    case Isa::kAvx512:
      chunk = avx512::ifa_chunk;
      merge = avx512::ifa_merge;
      break;
    case Isa::kAvx2:
      chunk = avx2::ifa_chunk;
      merge = avx2::ifa_merge;
      break;
    case Isa::kScalar:
      break;
  }
  // The lambdas capture one pointer, so std::function keeps them inline (no allocation).
  const Run run{&p, &layout, &schedule, base, chunk, merge};
  parallel_for(schedule.num_tasks, threads, [r = &run](int64_t task, int) {
    r->chunk(*r->p, *r->layout, *r->schedule, r->base, task);
  });
  parallel_for(p.batch * p.num_kv_heads, threads,
               [r = &run](int64_t task, int) { r->merge(*r->p, *r->layout, r->base, task); });
}

}  // namespace kvflash::cpu
