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

/// Lends the calling thread to the pool until done() holds: it joins the parallel_for calls of
/// other threads as a pool worker does (never beyond a call's P participants) and otherwise
/// sleeps until a call is posted or wake_helpers() runs. For a thread that would only block while
/// others compute (a CANN program in aclrtSynchronizeStream while the stream's worker runs its
/// kernel): the thread already holds a core, whereas a sleeping worker woken by the computing
/// thread can be queued behind it on that thread's core (Linux's wake-affine placement), leaving
/// the blocked thread's core idle for milliseconds. done() is called with the pool's lock held: it
/// must only read state (e.g. an atomic). Returns false without waiting when called from inside a
/// task (t_in_run) or while a ParallelBackend is installed: the caller then waits its own way.
bool help_until(const std::function<bool()>& done);

/// Wakes the threads inside help_until so that they check their done() again.
void wake_helpers();

}  // namespace kvflash::cpu
