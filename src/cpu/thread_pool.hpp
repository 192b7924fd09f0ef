// The library-owned worker pool (not OpenMP: it fights PyTorch's pool and ThreadSanitizer), or a
// host framework's threads when a kvflash::ParallelBackend is installed (kvflash/parallel.hpp).
#pragma once

#include <cstdint>
#include <functional>

namespace kvflash::cpu {

/// Worker count used when a call passes 0: set_num_threads() if set, else the installed
/// backend's max_threads, else the hardware count.
int default_num_threads();

/// Runs fn(task, worker) for every task in [0, num_tasks) on P = min(num_threads, num_tasks)
/// participants (num_threads 0 = default_num_threads()) and returns when all are done. Each
/// participant claims tasks one at a time (on the library pool the calling thread is one of
/// them). `worker` is the participant's index: in [0, P) and distinct among the participants
/// running at the same time (a per-worker scratch slot is safe). Which participant runs which
/// task is unspecified: results must not depend on it (kernels write per-task slots and merge in
/// a fixed order). Safe to call from several threads at once: their calls run concurrently on
/// shared workers. A call from inside a task runs inline on its thread (worker 0). The first
/// exception thrown by a task is rethrown here once every participant has stopped; tasks not yet
/// claimed by then are skipped. Usable at any point of process teardown (the pool is never
/// destroyed).
void parallel_for(int64_t num_tasks, int num_threads,
                  const std::function<void(int64_t task, int worker)>& fn);

}  // namespace kvflash::cpu
