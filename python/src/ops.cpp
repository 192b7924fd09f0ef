// torch.ops.kvflash: the operator schemas and their kernels (CPU and CUDA: the library; Meta: the
// shapes, which FakeTensor uses for torch.compile and torch.export), plus private helpers for the
// tests.
// Loading the library also hands kvflash's parallel loops to torch's intra-op threads.
#include <ATen/Parallel.h>
#include <torch/library.h>

#include "kvflash/parallel.hpp"
#include "kvflash/status.hpp"
#include "ops.hpp"

namespace kvflash::torch_ext {
namespace {

// kvflash's loops run on torch's intra-op pool (at::parallel_for), as many participants as
// at::get_num_threads(): torch.set_num_threads(1) means one core, and kvflash never starts
// threads of its own next to torch's.
int torch_max_threads(void*) { return static_cast<int>(at::get_num_threads()); }

void torch_parallel_for(void*, int64_t n, void* ctx,
                        void (*body)(void* ctx, int64_t begin, int64_t end)) {
  at::parallel_for(0, n, 1, [&](int64_t begin, int64_t end) { body(ctx, begin, end); });
}

const ParallelBackend kTorchBackend{nullptr, &torch_max_threads, &torch_parallel_for};

const bool kTorchBackendInstalled = [] {
  TORCH_CHECK(set_parallel_backend(&kTorchBackend) == Status::kSuccess, last_error_message());
  return true;
}();

// [IFA hits, misses, cached plans, SFA hits, misses, cached plans].
std::vector<int64_t> plan_cache_info() {
  const auto [ih, im, is] = ifa_plan_cache_stats();
  const auto [sh, sm, ss] = sfa_plan_cache_stats();
  return {ih, im, is, sh, sm, ss};
}

void clear_plan_cache() {
  clear_ifa_plan_cache();
  clear_sfa_plan_cache();
}

// kvflash's thread count for a call with num_threads 0 (the backend's: at::get_num_threads()).
int64_t num_threads() { return kvflash::get_num_threads(); }

}  // namespace
}  // namespace kvflash::torch_ext

TORCH_LIBRARY(kvflash, m) {
  using namespace kvflash::torch_ext;
  m.def(kIfaNpuSchema);
  m.def(kSfaNpuSchema);
  m.def(kIfaExtSchema);
  m.def(kMergeSchema);
  m.def("_plan_cache_info() -> int[]", &plan_cache_info);
  m.def("_clear_plan_cache() -> ()", &clear_plan_cache);
  m.def("_num_threads() -> int", &num_threads);
}

TORCH_LIBRARY_IMPL(kvflash, CPU, m) {
  using namespace kvflash::torch_ext;
  m.impl("npu_incre_flash_attention", &npu_ifa_cpu);
  m.impl("npu_sparse_flash_attention", &npu_sfa_cpu);
  m.impl("incre_flash_attention", &ifa_cpu);
  m.impl("merge_attention_states", &merge_cpu);
}

// CUDA tensors run the same functions (they are device-generic: outputs and workspace are made
// with the query's options, the run is queued on torch's current stream, no host synchronisation).
// Registered whatever torch or kvflash was built with: without a CUDA backend in libkvflash the
// plan is refused with 361001 ("no backend runs on ..."), a clear error instead of a missing kernel.
TORCH_LIBRARY_IMPL(kvflash, CUDA, m) {
  using namespace kvflash::torch_ext;
  m.impl("npu_incre_flash_attention", &npu_ifa_cpu);
  m.impl("npu_sparse_flash_attention", &npu_sfa_cpu);
  m.impl("incre_flash_attention", &ifa_cpu);
}

TORCH_LIBRARY_IMPL(kvflash, Meta, m) {
  using namespace kvflash::torch_ext;
  m.impl("npu_incre_flash_attention", &npu_ifa_meta);
  m.impl("npu_sparse_flash_attention", &npu_sfa_meta);
  m.impl("incre_flash_attention", &ifa_meta);
  m.impl("merge_attention_states", &merge_meta);
}
