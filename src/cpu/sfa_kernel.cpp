// SFA kernel dispatch and scheduling (ISA-independent).
#include "cpu/sfa_kernel.hpp"

#include <algorithm>
#include <cstdint>

#include "cpu/isa.hpp"
#include "cpu/sfa_kernel_isa.hpp"
#include "cpu/thread_pool.hpp"

namespace kvflash::cpu {
namespace {
// Below this many heads per task, re-gathering each KV row for every head block costs more than
// the extra parallelism gains (each gathered row feeds head_block x 1088 FLOP).
constexpr int64_t kMinHeadBlock = 8;
// The thread pool never runs more workers than this (thread_pool.cpp), so more scratch slots
// would never be used; the cap keeps a huge num_threads from sizing a huge workspace.
constexpr int kMaxWorkers = 512;
}  // namespace

SfaSchedule sfa_schedule(const core::SfaProblem& p, int threads) {
  SfaSchedule s;
  const int workers = std::min(threads > 0 ? threads : default_num_threads(), kMaxWorkers);
  // Split heads only while there are too few rows to keep every worker busy. N1 is a power of
  // two, so halving keeps the blocks equal. The split never changes results (see the body).
  int64_t hb = std::max<int64_t>(p.num_heads, 1);
  while (hb > kMinHeadBlock && p.num_rows * ((p.num_heads + hb - 1) / hb) < 2 * workers) hb /= 2;
  s.head_block = hb;
  s.num_tasks = p.num_rows * ((p.num_heads + hb - 1) / hb);
  s.workers = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(workers, s.num_tasks)));
  return s;
}

size_t sfa_workspace_size(const core::SfaProblem& p, const SfaSchedule& s) {
  const SfaScratchLayout lay(s.head_block);
  return static_cast<size_t>(s.workers) * static_cast<size_t>(lay.total) * sizeof(float) + 64;
}

void sfa_run(const core::SfaProblem& p, const SfaSchedule& s, void* ws) {
  SfaTaskFn fn = sfa_task_scalar;
  switch (active_isa()) {
    case Isa::kAvx512Bf16:
    case Isa::kAvx512:
      fn = sfa_task_avx512;
      break;
    case Isa::kAvx2:
      fn = sfa_task_avx2;
      break;
    case Isa::kScalar:
      break;
  }
  const SfaScratchLayout lay(s.head_block);
  // sfa_workspace_size reserved 64 bytes of slack for this alignment.
  const uintptr_t raw = reinterpret_cast<uintptr_t>(ws);
  float* base = reinterpret_cast<float*>((raw + 63) & ~uintptr_t{63});
  parallel_for(s.num_tasks, s.workers, [&](int64_t task, int worker) {
    fn(p, s, lay, base + static_cast<int64_t>(worker) * lay.total, task);
  });
}

}  // namespace kvflash::cpu
