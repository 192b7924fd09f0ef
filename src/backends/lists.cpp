#include "backends/lists.hpp"

#include "core/error.hpp"
#include "cpu/fia/fia_entry.hpp"
#include "cpu/fia/fia_kernel_isa.hpp"
#include "cpu/ifa/ifa_kernel_isa.hpp"
#include "cpu/isa.hpp"
#include "cpu/kv_cache/kv_cache_kernel.hpp"
#include "cpu/li/li_kernel_isa.hpp"
#include "cpu/merge/merge_kernel.hpp"
#include "cpu/sfa/sfa_kernel_isa.hpp"
#include "ops/kv_cache/kv_cache_validate.hpp"
#if defined(KVFLASH_HAVE_CUDA)
#include "cuda/device.hpp"
#include "cuda/ifa/ifa_cuda.hpp"
#include "cuda/ifa/ifa_cuda_plan.hpp"
#include "cuda/sfa/sfa_cuda.hpp"
#include "ops/sfa/sfa_fault.hpp"
// An entry of a list in builds with the CUDA backend only.
#define KVFLASH_CUDA_ENTRY(...) __VA_ARGS__,
#else
#define KVFLASH_CUDA_ENTRY(...)
#endif

namespace kvflash {
namespace {

using cpu::Isa;

template <Isa kIsa>
bool cpu_available(const char** why) {
  return cpu::isa_available(kIsa, why);
}

// A CPU entry: available when the CPU supports kIsa, running kKernels (so nothing inside the run
// chooses an instruction set again). Host tensors run synchronously: the stream is null
// (core::plan_run checks it), and the run returns every fault itself (no fault hook).
template <Isa kIsa, const cpu::IfaKernels* kKernels>
constexpr IfaBackend cpu_ifa(const char* name) {
  return {name,
          DeviceType::kHost,
          cpu_available<kIsa>,
          nullptr,
          cpu::ifa_workspace_size,
          [](const core::IfaProblem& p, const core::IfaData& d, const core::RunContext& ctx) {
            return cpu::ifa_run(p, d, ctx, *kKernels);
          },
          nullptr};
}
template <Isa kIsa, const cpu::SfaKernels* kKernels>
constexpr SfaBackend cpu_sfa(const char* name) {
  return {name,
          DeviceType::kHost,
          cpu_available<kIsa>,
          nullptr,
          cpu::sfa_workspace_size,
          [](const core::SfaProblem& p, const core::SfaData& d, const core::RunContext& ctx) {
            return cpu::sfa_run(p, d, ctx, *kKernels);
          },
          nullptr};
}

template <Isa kIsa, const cpu::LiKernels* kKernels>
constexpr LiBackend cpu_li(const char* name) {
  return {name,
          DeviceType::kHost,
          cpu_available<kIsa>,
          nullptr,
          [](const core::LiProblem& p) { return cpu::li_workspace_size(p); },
          [](const core::LiProblem& p, const core::LiData& d, const core::RunContext& ctx) {
            return cpu::li_run(p, d, ctx, *kKernels);
          },
          nullptr};
}

bool always(const char**) { return true; }
size_t no_workspace(const core::MergeProblem&) { return 0; }

// CUDA entries queue their kernels on the run's stream without a host synchronisation: bad device
// data is written as the workspace's fault record (core/device_fault.hpp), which the entry's fault
// hook decodes into the CPU's status and message (IfaPlan::status / SfaPlan::status for C++
// callers, aclrtSynchronizeStream on the aclnn CUDA runtime). The SFA entry chooses
// its kernel per run (mma.sync or the SIMT fallback: cuda/sfa/sfa_mma_geometry.hpp); both share
// one workspace layout.
// (clang-format would indent the entry after a KVFLASH_CUDA_ENTRY.)
// clang-format off
constexpr IfaBackend kIfaList[] = {
    KVFLASH_CUDA_ENTRY(IfaBackend{"cuda", DeviceType::kCuda, cuda::device_available,
                                  cuda::ifa_cuda_supports, cuda::ifa_workspace_size,
                                  cuda::ifa_run, cuda::ifa_cuda_decode_fault})
    cpu_ifa<Isa::kAmx, &cpu::amx::kIfaKernels>("cpu-amx"),
    cpu_ifa<Isa::kAvx512Bf16, &cpu::avx512::kIfaKernelsBf16>("cpu-avx512bf16"),
    cpu_ifa<Isa::kAvx512, &cpu::avx512::kIfaKernels>("cpu-avx512"),
    cpu_ifa<Isa::kAvx2, &cpu::avx2::kIfaKernels>("cpu-avx2"),
    cpu_ifa<Isa::kScalar, &cpu::scalar::kIfaKernels>("cpu-scalar"),
};
// clang-format on

// avx512bf16 runs the avx512 task: SFA has no BF16 dot-product path, the entry keeps the levels of
// the two operators alike.
// clang-format off
constexpr SfaBackend kSfaList[] = {
    KVFLASH_CUDA_ENTRY(SfaBackend{"cuda", DeviceType::kCuda, cuda::device_available, nullptr,
                                  cuda::sfa_workspace_size, cuda::sfa_run, sfa::sfa_fault_status})
    cpu_sfa<Isa::kAmx, &cpu::amx::kSfaKernels>("cpu-amx"),
    cpu_sfa<Isa::kAvx512Bf16, &cpu::avx512::kSfaKernels>("cpu-avx512bf16"),
    cpu_sfa<Isa::kAvx512, &cpu::avx512::kSfaKernels>("cpu-avx512"),
    cpu_sfa<Isa::kAvx2, &cpu::avx2::kSfaKernels>("cpu-avx2"),
    cpu_sfa<Isa::kScalar, &cpu::scalar::kSfaKernels>("cpu-scalar"),
};
// clang-format on

// One entry: the merge is memory-bound (a few flops per element read); inside it the active
// level's vector row kernel, without FMA, gives the portable code's bits on every CPU, so every
// rank of a context-parallel group merges identically whatever its instruction set
// (cpu/merge/merge_kernel.hpp).
constexpr MergeBackend kMergeList[] = {
    {"cpu", DeviceType::kHost, always, nullptr, no_workspace, cpu::merge_run, nullptr},
};

// The LightningIndexer: amx scores bf16 inputs on tiles (cpu/li/li_tiles-inl.h), avx512bf16 with
// vdpbf16ps (cpu/li/li_kernel-inl.h); no CUDA entry yet.
constexpr LiBackend kLiList[] = {
    cpu_li<Isa::kAmx, &cpu::amx::kLiKernels>("cpu-amx"),
    cpu_li<Isa::kAvx512Bf16, &cpu::avx512::kLiKernelsBf16>("cpu-avx512bf16"),
    cpu_li<Isa::kAvx512, &cpu::avx512::kLiKernels>("cpu-avx512"),
    cpu_li<Isa::kAvx2, &cpu::avx2::kLiKernels>("cpu-avx2"),
    cpu_li<Isa::kScalar, &cpu::scalar::kLiKernels>("cpu-scalar"),
};

// FIA / PFA: one CPU entry per level, each bound to its kernel table (cpu/fia/fia_kernel_isa.hpp).
// The Q_S = 1 decode branch (D4) runs the same level's IFA kernels where IFA expresses the call
// (ops/fia/fia_validate_decode.cpp), else the FIA kernel's split-KV path.
template <Isa kIsa, const cpu::FiaKernels* kKernels, const cpu::IfaKernels* kIfa>
constexpr FiaBackend cpu_fia(const char* name) {
  return {name,
          DeviceType::kHost,
          cpu_available<kIsa>,
          nullptr,
          cpu::fia_entry_workspace_size,
          [](const core::FiaProblem& p, const core::FiaData& d, const core::RunContext& ctx) {
            return cpu::fia_entry_run(p, d, ctx, *kKernels, *kIfa);
          },
          nullptr};
}

// cpu-amx: the prefill task's bf16 products and the decode branch (IFA's cpu-amx kernels) on the
// matrix engine.
constexpr FiaBackend kFiaList[] = {
    cpu_fia<Isa::kAmx, &cpu::amx::kFiaKernels, &cpu::amx::kIfaKernels>("cpu-amx"),
    cpu_fia<Isa::kAvx512Bf16, &cpu::avx512::kFiaKernelsBf16, &cpu::avx512::kIfaKernelsBf16>(
        "cpu-avx512bf16"),
    cpu_fia<Isa::kAvx512, &cpu::avx512::kFiaKernels, &cpu::avx512::kIfaKernels>("cpu-avx512"),
    cpu_fia<Isa::kAvx2, &cpu::avx2::kFiaKernels, &cpu::avx2::kIfaKernels>("cpu-avx2"),
    cpu_fia<Isa::kScalar, &cpu::scalar::kFiaKernels, &cpu::scalar::kIfaKernels>("cpu-scalar"),
};

// One portable entry: the cache write is a copy (memcpy of each token's rows), bound by memory
// bandwidth; no instruction set would change it (cpu/kv_cache/kv_cache_kernel.hpp).
constexpr KvCacheBackend kKvCacheList[] = {
    {"cpu", DeviceType::kHost, always, nullptr, kv_cache::workspace_size, cpu::kv_cache_run,
     nullptr},
};

}  // namespace

#define KVFLASH_OPERATOR(op, Op, Plan, Args) \
  std::span<const Op##Backend> op##_backends() { return k##Op##List; }
#include "ops/operators.def"

Status read_fault_record(const char* op, Device device, const void* workspace, void* stream,
                         core::FaultRecord* record) {
#if defined(KVFLASH_HAVE_CUDA)
  if (device.type == DeviceType::kCuda) {
    return cuda::copy_to_host(op, record, core::fault_record_at(workspace), sizeof *record, stream);
  }
#else
  (void)workspace;
  (void)stream;
  (void)record;
#endif
  return core::fail(Status::kRuntime, op,
                    "this build of kvflash cannot read the memory of " + device_name(device));
}

}  // namespace kvflash
