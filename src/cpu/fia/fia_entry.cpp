#include "cpu/fia/fia_entry.hpp"

#include <cstdint>
#include <cstring>
#include <limits>

#include "core/error.hpp"
#include "core/view_check.hpp"
#include "cpu/fia/fia_kernel_isa.hpp"
#include "ops/fia/fia_bind.hpp"
#include "ops/fia/fia_validate.hpp"
#include "ops/ifa/ifa_fault.hpp"

namespace kvflash::cpu {
namespace {

constexpr size_t kAlign = 64;

size_t round_up(size_t x) { return (x + kAlign - 1) / kAlign * kAlign; }

struct Head {
  size_t batches, pads, lists, faults, end;
};

Head head_layout(const core::FiaProblem& p) {
  const size_t B = static_cast<size_t>(p.params.batch);
  Head h{};
  h.batches = 0;
  h.pads = h.batches + round_up(B * sizeof(FiaBatch));
  h.lists = h.pads + round_up(static_cast<size_t>(p.rows) * sizeof(FiaPadRow));
  h.faults = h.lists + round_up(2 * B * sizeof(const void*));
  h.end = h.faults + round_up(B);
  return h;
}

// Rows of a faulted batch: output NaN (int8: 0), LSE NaN (docs/design.md, bad device data).
void write_fault_rows(const FiaParams& p, const FiaPointers& d, const FiaBatch& bt) {
  const size_t es = dtype_size(p.out_dtype);
  uint8_t nan[4] = {};
  if (p.out_dtype == DType::kFloat16) {
    const uint16_t x = 0x7E00;
    std::memcpy(nan, &x, 2);
  } else if (p.out_dtype == DType::kBFloat16) {
    const uint16_t x = 0x7FC0;
    std::memcpy(nan, &x, 2);
  } else if (p.out_dtype == DType::kFloat32) {
    const float x = std::numeric_limits<float>::quiet_NaN();
    std::memcpy(nan, &x, 4);
  }
  auto* out = static_cast<uint8_t*>(d.out);
  for (int64_t i = 0; i < bt.q_rows; ++i) {
    for (int64_t h = 0; h < p.num_heads; ++h) {
      const int64_t e = bt.out_offset + i * p.o_row + h * p.o_head;
      for (int64_t x = 0; x < p.value_dim; ++x) std::memcpy(out + (e + x) * es, nan, es);
      if (p.has_lse)
        d.lse[bt.lse_offset + i * p.lse_row + h * p.lse_head] =
            std::numeric_limits<float>::quiet_NaN();
    }
  }
}

// A TND call on IFA's kernels (src/ops/fia/fia_validate_decode.cpp) may have rows past the last
// cumulative length (vllm-ascend's graph padding): written after IFA's run as the FIA kernel
// writes padding rows (D5), from this many bytes after IFA's workspace.
int64_t ifa_route_pad_rows(const core::FiaProblem& p) {
  return p.tnd && !p.mixed() ? p.rows - p.tnd_rows_used : 0;
}
size_t ifa_route_pad_bytes(const core::FiaProblem& p) {
  const auto n = static_cast<size_t>(ifa_route_pad_rows(p));
  if (n == 0) return 0;
  return kAlign + round_up(n * sizeof(FiaPadRow)) +
         round_up(static_cast<size_t>(p.params.value_dim) * sizeof(float));
}

void write_ifa_route_pad_rows(const core::FiaProblem& p, const core::FiaData& d, void* ws) {
  const int64_t n = ifa_route_pad_rows(p);
  if (n == 0) return;
  auto* at = static_cast<std::byte*>(ws) + ifa_workspace_size(p.ifa);
  auto* base = reinterpret_cast<std::byte*>((reinterpret_cast<uintptr_t>(at) + kAlign - 1) /
                                            kAlign * kAlign);
  auto* pads = reinterpret_cast<FiaPadRow*>(base);
  auto* scratch =
      reinterpret_cast<float*>(base + round_up(static_cast<size_t>(n) * sizeof(FiaPadRow)));
  FiaParams params = p.params;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t t = p.tnd_rows_used + i;
    pads[i] = {t * params.o_row, t * params.lse_row};
  }
  params.pad_rows = pads;
  params.num_pad_rows = n;
  scalar::fia_pad_rows_entry(params, d.ptrs, scratch);
}

Status run_fia_part(const core::FiaProblem& p, const core::FiaData& d, const core::RunContext& ctx,
                    const FiaKernels& k);

// The FIA kernel's part: its header and its workspace.
size_t fia_part_size(const core::FiaProblem& p) {
  FiaParams params = p.params;
  params.batches = p.batches.data();
  return kAlign + head_layout(p).end + fia_workspace_size(params);
}

}  // namespace

size_t fia_entry_workspace_size(const core::FiaProblem& p) {
  // A mixed TND call: the FIA kernel's part, then IFA's (the decode requests).
  if (p.mixed()) return fia_part_size(p) + ifa_workspace_size(p.ifa);
  if (p.use_ifa) return ifa_workspace_size(p.ifa) + ifa_route_pad_bytes(p);
  return fia_part_size(p);
}

Status fia_entry_run(const core::FiaProblem& p, const core::FiaData& d, const core::RunContext& ctx,
                     const FiaKernels& k, const IfaKernels& ik) {
  if (p.mixed()) {
    // The decode requests on IFA's kernels after the FIA kernel's part ran the others; the first
    // failure (bad device data) is the call's.
    core::RunContext fia_ctx = ctx;
    fia_ctx.workspace_size = fia_part_size(p);
    const Status st = run_fia_part(p, d, fia_ctx, k);
    core::RunContext ifa_ctx = ctx;
    ifa_ctx.workspace = static_cast<std::byte*>(ctx.workspace) + fia_ctx.workspace_size;
    ifa_ctx.workspace_size = ctx.workspace_size - fia_ctx.workspace_size;
    const Status ist = ifa_run(p.ifa, d.ifa, ifa_ctx, ik);
    return st != Status::kSuccess ? st : ist;
  }
  if (p.use_ifa) {
    const Status st = ifa_run(p.ifa, d.ifa, ctx, ik);
    write_ifa_route_pad_rows(p, d, ctx.workspace);
    return st;
  }
  return run_fia_part(p, d, ctx, k);
}

namespace {

// The FIA kernel's run of p (every request of a call not on IFA's kernels; the others of a mixed
// call).
Status run_fia_part(const core::FiaProblem& p, const core::FiaData& d, const core::RunContext& ctx,
                    const FiaKernels& k) {
  auto* base = reinterpret_cast<std::byte*>(
      (reinterpret_cast<uintptr_t>(ctx.workspace) + kAlign - 1) / kAlign * kAlign);
  const Head h = head_layout(p);
  auto* batches = reinterpret_cast<FiaBatch*>(base + h.batches);
  auto* pads = reinterpret_cast<FiaPadRow*>(base + h.pads);
  auto* lists = reinterpret_cast<const void**>(base + h.lists);
  auto* faulted = reinterpret_cast<uint8_t*>(base + h.faults);
  const fia::FiaResolved r = fia::resolve_batches(p, d, batches, pads, faulted);

  FiaParams params = p.params;
  FiaPointers data = d.ptrs;
  params.batches = batches;
  params.pad_rows = pads;
  params.num_pad_rows = r.num_pad_rows;
  if (p.list) {
    const int64_t B = params.batch;
    for (int64_t b = 0; b < B; ++b) {
      lists[b] = core::element0(d.key_list[b]);
      lists[B + b] = core::element0(d.value_list[b]);
    }
    data.k_list = lists, data.v_list = lists + B;
  }
  for (int64_t b = 0; r.num_faults > 0 && b < params.batch; ++b) {
    if (!faulted[b]) continue;
    write_fault_rows(params, data, batches[b]);
    batches[b].q_rows = 0;  // not run
  }
  const size_t used = static_cast<size_t>(base - static_cast<std::byte*>(ctx.workspace)) + h.end;
  fia_run(params, data, base + h.end, ctx.workspace_size - used, ctx.num_threads, k);
  if (r.num_faults > 0)
    return core::fail(Status::kInvalid, fia::kOpName, ifa::ifa_fault_message(r.first));
  return Status::kSuccess;
}

}  // namespace

}  // namespace kvflash::cpu
