// IFA kernel entry: lays out the workspace, then runs the chunk tasks and the merge tasks of the
// active ISA on the library pool.
#include "cpu/ifa_kernel.hpp"

#include "cpu/ifa_kernel_isa.hpp"
#include "cpu/ifa_workspace.hpp"
#include "cpu/isa.hpp"
#include "cpu/thread_pool.hpp"

namespace kvflash::cpu {
namespace {

using TaskFn = void (*)(const core::IfaProblem&, const IfaLayout&, std::byte*, int64_t);

struct Run {
  const core::IfaProblem* p;
  const IfaLayout* layout;
  std::byte* base;
  TaskFn fn;
  void operator()(int64_t task) const { fn(*p, *layout, base, task); }
};

}  // namespace

size_t ifa_workspace_size(const core::IfaProblem& p) { return ifa_layout(p).bytes; }

void ifa_run(const core::IfaProblem& p, void* ws) {
  const IfaLayout layout = ifa_layout(p);
  std::byte* base = ifa_prepare(p, layout, ws);
  TaskFn chunk = scalar::ifa_chunk;
  TaskFn merge = scalar::ifa_merge;
  switch (active_isa()) {
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
  const Run chunks{&p, &layout, base, chunk};
  parallel_for(layout.num_chunk_tasks, p.num_threads,
               [run = &chunks](int64_t task, int) { (*run)(task); });
  const Run merges{&p, &layout, base, merge};
  parallel_for(p.batch * p.num_kv_heads, p.num_threads,
               [run = &merges](int64_t task, int) { (*run)(task); });
}

}  // namespace kvflash::cpu
