// Which threads run the operators' parallel loops: kvflash's own pool (the default) or torch's
// intra-op pool, chosen at run time (kvflash.set_thread_pool, docs/python.md "Threads").
#pragma once

#include <string>

namespace kvflash::torch_ext {

/// Runs the operators' later loops on the named pool: "kvflash" (the library's worker pool,
/// whose idle workers sleep) or "torch" (at::parallel_for, through a kvflash::ParallelBackend).
/// Any other name is a c10::ValueError naming the choices. Process-wide, like
/// torch.set_num_threads; calls already running finish on the pool they started on.
void set_thread_pool(const std::string& name);

/// The pool set_thread_pool chose: "kvflash" or "torch".
std::string thread_pool();

/// The num_threads of an operator call (its Args field): torch.get_num_threads() at the time of
/// the call, whichever pool runs it, or 1 inside one of torch's parallel regions (a loop nested in
/// at::parallel_for runs on its thread, as torch's own operators do there).
int call_num_threads();

}  // namespace kvflash::torch_ext
