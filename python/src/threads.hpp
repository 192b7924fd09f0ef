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

}  // namespace kvflash::torch_ext
