#include "backends/lists.hpp"

#include <array>

#include "cpu/ifa/ifa_kernel.hpp"
#include "cpu/isa.hpp"
#include "cpu/merge/merge_kernel.hpp"
#include "cpu/sfa/sfa_kernel.hpp"
#if defined(KVFLASH_HAVE_CUDA)
#include "cuda/device.hpp"
#include "cuda/ifa/ifa_cuda.hpp"
#include "cuda/sfa/sfa_cuda.hpp"
#endif

namespace kvflash {
namespace {

using cpu::Isa;

template <Isa kIsa>
bool available() {
  return cpu::active_isa() >= kIsa;
}

// Host tensors run synchronously: the stream is null (IfaPlan/SfaPlan::run checks it).
template <Isa kIsa>
Status ifa(const core::IfaProblem& p, const IfaArgs& args, int threads, void* ws, void*) {
  return cpu::ifa_run(p, args, kIsa, threads, ws);
}
template <Isa kIsa>
Status sfa(const core::SfaProblem& p, const SfaArgs& args, int threads, void* ws, void*) {
  return cpu::sfa_run(p, args, kIsa, threads, ws);
}

template <Isa kIsa>
constexpr IfaBackend ifa_entry(const char* name) {
  return {name, DeviceType::kHost, available<kIsa>, cpu::ifa_workspace_size, ifa<kIsa>};
}
template <Isa kIsa>
constexpr SfaBackend sfa_entry(const char* name) {
  return {name, DeviceType::kHost, available<kIsa>, cpu::sfa_workspace_size, sfa<kIsa>};
}

#if defined(KVFLASH_HAVE_CUDA)
// Queued on stream, no host synchronisation: bad device data is recorded in the workspace; the
// fault word is posted for the aclnn runtime (507015 at synchronisation), and C++ callers read it
// with cuda::sfa_fault_status (sfa_cuda.hpp).
Status sfa_cuda(const core::SfaProblem& p, const SfaArgs& args, int, void* ws, void* stream) {
  return cuda::sfa_run(p, args, ws, stream);
}
// IFA on CUDA: queued on the run's stream like SFA; the fault record is posted for the aclnn
// runtime, and C++ callers read it with cuda::ifa_fault_status (cuda/ifa/ifa_cuda.hpp).
Status ifa_cuda(const core::IfaProblem& p, const IfaArgs& args, int, void* ws, void* stream) {
  return cuda::ifa_run(p, args, ws, stream);
}
#endif

bool always() { return true; }
size_t no_workspace(const core::MergeProblem&) { return 0; }
Status merge(const core::MergeProblem& p, const MergeArgs& args, int threads, void*, void*) {
  return cpu::merge_run(p, args, threads);
}

}  // namespace

std::span<const IfaBackend> ifa_backends() {
#if defined(KVFLASH_HAVE_CUDA)
  static constexpr std::array<IfaBackend, 5> kList = {
      IfaBackend{"cuda", DeviceType::kCuda, cuda::device_present, cuda::ifa_workspace_size,
                 ifa_cuda},
#else
  static constexpr std::array<IfaBackend, 4> kList = {
#endif
      ifa_entry<Isa::kAvx512Bf16>("cpu-avx512bf16"), ifa_entry<Isa::kAvx512>("cpu-avx512"),
      ifa_entry<Isa::kAvx2>("cpu-avx2"), ifa_entry<Isa::kScalar>("cpu-scalar")};
  return kList;
}

std::span<const SfaBackend> sfa_backends() {
#if defined(KVFLASH_HAVE_CUDA)
  // The CUDA entry chooses its kernel per run (mma.sync or the SIMT fallback:
  // cuda/sfa/sfa_mma_geometry.hpp); both share one workspace layout.
  static constexpr std::array<SfaBackend, 5> kList = {
      SfaBackend{"cuda", DeviceType::kCuda, cuda::device_present, cuda::sfa_workspace_size,
                 sfa_cuda},
      sfa_entry<Isa::kAvx512Bf16>("cpu-avx512bf16"), sfa_entry<Isa::kAvx512>("cpu-avx512"),
      sfa_entry<Isa::kAvx2>("cpu-avx2"), sfa_entry<Isa::kScalar>("cpu-scalar")};
#else
  static constexpr std::array<SfaBackend, 4> kList = {
      sfa_entry<Isa::kAvx512Bf16>("cpu-avx512bf16"), sfa_entry<Isa::kAvx512>("cpu-avx512"),
      sfa_entry<Isa::kAvx2>("cpu-avx2"), sfa_entry<Isa::kScalar>("cpu-scalar")};
#endif
  return kList;
}

// One portable entry: the merge is memory-bound (a few flops per element read), and baseline
// x86-64 code without FMA gives the same bits on every CPU, so every rank of a context-parallel
// group merges identically whatever its instruction set (cpu/merge/merge_kernel.hpp).
std::span<const MergeBackend> merge_backends() {
  static constexpr std::array<MergeBackend, 1> kList = {
      MergeBackend{"cpu", DeviceType::kHost, always, no_workspace, merge}};
  return kList;
}

}  // namespace kvflash
