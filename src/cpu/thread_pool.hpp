// The library-owned worker pool (not OpenMP: it fights PyTorch's pool and ThreadSanitizer).
#pragma once

#include <cstdint>
#include <functional>

namespace kvflash::cpu {

/// Worker count used when a call passes 0: set_num_threads() if set, else the hardware count.
int default_num_threads();

/// Runs fn(task, worker) for every task in [0, num_tasks) on min(num_threads, num_tasks) workers
/// (num_threads 0 = default_num_threads()) and returns when all are done. The calling thread is
/// worker 0. Which worker runs which task is unspecified: results must not depend on it (kernels
/// write per-task slots and merge in a fixed order). Safe to call from several threads at once.
void parallel_for(int64_t num_tasks, int num_threads,
                  const std::function<void(int64_t task, int worker)>& fn);

}  // namespace kvflash::cpu
