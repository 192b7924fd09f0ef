// The operators' thread pools. kvflash's own pool is the default: its idle workers sleep on a
// condition variable, so on a machine whose cores are shared (other workers, tokenizer threads,
// other processes) a call costs its own work. torch's intra-op pool (OpenMP in torch's builds)
// spins its idle workers and, when a core is taken, stalls whole parallel loops on the descheduled
// one; it stays available as "torch" (bench/torch_pool_load.py measures both, quiet and under
// load). Either way a call uses torch.get_num_threads() threads, so torch.set_num_threads is the
// one knob (python/src/views.cpp, call_num_threads), and the results are the same bits for any
// thread count and either pool.
#include "threads.hpp"

#include <ATen/Parallel.h>
#include <c10/util/Exception.h>

#include <atomic>
#include <cstdint>
#include <mutex>

#include "kvflash/parallel.hpp"
#include "kvflash/status.hpp"

namespace kvflash::torch_ext {
namespace {

// torch's pool as a kvflash::ParallelBackend: kvflash's participants as at::parallel_for's
// chunks (this file is compiled with -fopenmp, without which at::parallel_for runs serially).
int torch_max_threads(void*) { return static_cast<int>(at::get_num_threads()); }

void torch_parallel_for(void*, int64_t n, void* ctx,
                        void (*body)(void* ctx, int64_t begin, int64_t end)) {
  at::parallel_for(0, n, 1, [&](int64_t begin, int64_t end) { body(ctx, begin, end); });
}

const ParallelBackend kTorchBackend{nullptr, &torch_max_threads, &torch_parallel_for};

std::mutex g_switch;  // one switch at a time: the backend and the name stay in step
std::atomic<bool> g_torch_pool{false};

}  // namespace

void set_thread_pool(const std::string& name) {
  if (name != "kvflash" && name != "torch") {
    C10_THROW_ERROR(ValueError, "kvflash.set_thread_pool: the pool must be \"kvflash\" (kvflash's "
                                "own worker pool) or \"torch\" (torch's intra-op pool), got \"" +
                                    name + "\"");
  }
  const bool torch_pool = name == "torch";
  std::lock_guard<std::mutex> lock(g_switch);
  // nullptr: the library's own pool (kvflash/parallel.hpp).
  const Status status = set_parallel_backend(torch_pool ? &kTorchBackend : nullptr);
  TORCH_CHECK(status == Status::kSuccess, last_error_message());
  g_torch_pool.store(torch_pool, std::memory_order_relaxed);
}

std::string thread_pool() {
  return g_torch_pool.load(std::memory_order_relaxed) ? "torch" : "kvflash";
}

}  // namespace kvflash::torch_ext
