// torch.ops.kvflash: the operator schemas and their kernels (CPU: the library; Meta: the shapes,
// which FakeTensor uses for torch.compile and torch.export), plus private helpers for the tests.
#include <torch/library.h>

#include "kvflash/status.hpp"
#include "ops.hpp"

namespace kvflash::torch_ext {
namespace {

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

int64_t num_threads() { return kvflash::get_num_threads(); }

}  // namespace
}  // namespace kvflash::torch_ext

TORCH_LIBRARY(kvflash, m) {
  using namespace kvflash::torch_ext;
  m.def(kIfaNpuSchema);
  m.def(kSfaNpuSchema);
  m.def(kIfaExtSchema);
  m.def("_plan_cache_info() -> int[]", &plan_cache_info);
  m.def("_clear_plan_cache() -> ()", &clear_plan_cache);
  m.def("_num_threads() -> int", &num_threads);
}

TORCH_LIBRARY_IMPL(kvflash, CPU, m) {
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
}
