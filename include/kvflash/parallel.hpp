// Who runs kvflash's parallel loops: the library's own worker pool (the default), or a host
// framework's threads through a ParallelBackend, so that kvflash inside PyTorch (or any runtime
// with its own intra-op pool) never runs a second set of busy threads next to the framework's.
#pragma once

#include <cstdint>

#include "kvflash/export.h"
#include "kvflash/status.hpp"

namespace kvflash {

/// A host framework's parallel loop, as a table of C-style callbacks (no C++ type crosses it, so
/// a framework built with another standard library can fill it).
///
/// Each kvflash kernel splits its work into tasks and runs them on P participants, where
/// P = min(threads, number of tasks) and threads is the call's num_threads, or when that is 0,
/// set_num_threads() if set, else max_threads(). With a backend installed, kvflash calls
/// parallel_for(user, P, ctx, body) once per loop. Each call body(ctx, begin, end) is one
/// participant, numbered `begin`, which claims tasks one at a time until none is left; a range
/// wider than one index is simply one participant (the others of the range have nothing to do).
/// So any partition of [0, P) is correct, any number of ranges may run at once, and a backend
/// that runs all of [0, P) serially on the calling thread is correct too (just not parallel).
///
/// body never throws: an exception from a task is caught inside it, the remaining tasks are
/// skipped, and kvflash rethrows it to its caller after parallel_for has returned. A nested loop
/// (a kvflash loop started from inside a task) runs inline on its thread and never reaches the
/// backend.
///
/// Filled from a PyTorch extension, for example:
/// \code
///   kvflash::ParallelBackend torch_backend{
///       nullptr,
///       [](void*) { return static_cast<int>(at::get_num_threads()); },
///       [](void*, int64_t n, void* ctx, void (*body)(void*, int64_t, int64_t)) {
///         at::parallel_for(0, n, 1, [&](int64_t b, int64_t e) { body(ctx, b, e); });
///       }};
///   kvflash::set_parallel_backend(&torch_backend);
/// \endcode
struct ParallelBackend {
  /// Passed back unchanged to both callbacks. Must stay valid while any loop may use it: from
  /// set_parallel_backend() until the loops started before the next set_parallel_backend() call
  /// have returned.
  void* user = nullptr;
  /// Threads one loop may use (values below 1 count as 1). Called from the thread starting a
  /// loop, on every loop whose num_threads is 0 while set_num_threads() is unset.
  int (*max_threads)(void* user) = nullptr;
  /// Runs body(ctx, begin, end) over a partition of [0, n) into non-empty ranges, which may run
  /// concurrently on the framework's threads, and returns only when all of [0, n) has run (every
  /// body call has returned, with its memory effects visible to the caller, as a thread join or a
  /// mutex gives). Called from any thread that runs a kvflash kernel, the aclnn stream threads
  /// included, possibly from several at once. Tasks of [0, n) it leaves unrun are run by the
  /// calling thread after it returns.
  void (*parallel_for)(void* user, int64_t n, void* ctx,
                       void (*body)(void* ctx, int64_t begin, int64_t end)) = nullptr;
};

/// Installs backend for every later kvflash loop (its fields are copied; loops already running
/// finish where they started). nullptr restores the library's own pool. Thread-safe.
/// Returns Status::kNullPtr (and installs nothing) if a callback is null.
KVFLASH_API Status set_parallel_backend(const ParallelBackend* backend);

}  // namespace kvflash
