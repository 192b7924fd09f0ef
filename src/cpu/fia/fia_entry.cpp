#include "cpu/fia/fia_entry.hpp"

#include <cstdint>
#include <cstring>
#include <limits>

#include "core/error.hpp"
#include "core/view_check.hpp"
#include "core/workspace_arena.hpp"
#include "cpu/fia/fia_kernel_isa.hpp"
#include "ops/fia/fia_bind.hpp"
#include "ops/fia/fia_validate.hpp"
#include "ops/ifa/ifa_fault.hpp"

namespace kvflash::cpu {
namespace {

// A TND call all of whose requests run on the decode kernels (src/ops/fia/fia_validate_decode.cpp)
// may have rows past the last cumulative length (vllm-ascend's graph padding): written after the
// decode run as the prefill kernel writes padding rows (D5).
int64_t decode_pad_rows(const core::FiaProblem& p) {
  return p.tnd && p.use_ifa && !p.mixed() ? p.rows - p.tnd_rows_used : 0;
}

// The one workspace layout of a call: the prefill part (its run's batches, padding rows, list
// pointers and fault flags, then the prefill kernel's own workspace) unless every request runs on
// the decode kernels; the decode kernels' workspace when any does; and a decode-only TND call's
// padding rows with their scratch row. Sub-layouts (fia_workspace_size, ifa_workspace_size) are
// regions of it, each aligning its own base.
struct EntryLayout {
  bool prefill = false;
  size_t batches = 0, pads = 0, lists = 0, faults = 0, prefill_ws = 0, prefill_bytes = 0;
  size_t decode_ws = 0, decode_bytes = 0;
  size_t decode_pads = 0, decode_scratch = 0;
  size_t bytes = 0;
};

EntryLayout entry_layout(const core::FiaProblem& p) {
  core::WorkspaceArena arena(kFiaWorkspaceAlign);
  EntryLayout l;
  l.prefill = !p.use_ifa || p.mixed();
  if (l.prefill) {
    const size_t B = static_cast<size_t>(p.params.batch);
    l.batches = arena.take_array<FiaBatch>(B);
    l.pads = arena.take_array<FiaPadRow>(static_cast<size_t>(p.rows));
    l.lists = arena.take_array<const void*>(2 * B);
    l.faults = arena.take_array<uint8_t>(B);
    FiaParams params = p.params;
    params.batches = p.batches.data();
    l.prefill_bytes = fia_workspace_size(params);
    l.prefill_ws = arena.take(l.prefill_bytes);
  }
  if (p.use_ifa) {
    l.decode_bytes = ifa_workspace_size(p.ifa);
    l.decode_ws = arena.take(l.decode_bytes);
    const auto n = static_cast<size_t>(decode_pad_rows(p));
    l.decode_pads = arena.take_array<FiaPadRow>(n);
    l.decode_scratch = arena.take_array<float>(n > 0 ? static_cast<size_t>(p.params.value_dim) : 0);
  }
  l.bytes = arena.bytes();
  return l;
}

// Rows of a faulted batch: output NaN (int8: 0), LSE, softmax max and sum NaN (docs/design.md,
// bad device data).
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
      const int64_t le = bt.lse_offset + i * p.lse_row + h * p.lse_head;
      if (p.has_lse) d.lse[le] = std::numeric_limits<float>::quiet_NaN();
      for (int64_t w = 0; p.has_max_sum && w < kFiaMaxSumWidth; ++w) {
        d.softmax_max[kFiaMaxSumWidth * le + w] = std::numeric_limits<float>::quiet_NaN();
        d.softmax_sum[kFiaMaxSumWidth * le + w] = std::numeric_limits<float>::quiet_NaN();
      }
    }
  }
}

void write_decode_pad_rows(const core::FiaProblem& p, const core::FiaData& d,
                           const EntryLayout& l, std::byte* ws) {
  const int64_t n = decode_pad_rows(p);
  if (n == 0) return;
  auto* pads = reinterpret_cast<FiaPadRow*>(ws + l.decode_pads);
  FiaParams params = p.params;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t t = p.tnd_rows_used + i;
    pads[i] = {t * params.o_row, t * params.lse_row};
  }
  params.pad_rows = pads;
  params.num_pad_rows = n;
  scalar::fia_pad_rows_entry(params, d.ptrs, reinterpret_cast<float*>(ws + l.decode_scratch));
}

// The prefill kernel's run of p (every request of a call not on the decode kernels; the others of
// a mixed call).
Status run_prefill(const core::FiaProblem& p, const core::FiaData& d, const EntryLayout& l,
                   std::byte* ws, int num_threads, const FiaKernels& k) {
  auto* batches = reinterpret_cast<FiaBatch*>(ws + l.batches);
  auto* pads = reinterpret_cast<FiaPadRow*>(ws + l.pads);
  auto* lists = reinterpret_cast<const void**>(ws + l.lists);
  auto* faulted = reinterpret_cast<uint8_t*>(ws + l.faults);
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
  fia_run(params, data, ws + l.prefill_ws, l.prefill_bytes, num_threads, k);
  if (r.num_faults > 0)
    return core::fail(Status::kInvalid, fia::kOpName, ifa::ifa_fault_message(r.first));
  return Status::kSuccess;
}

}  // namespace

size_t fia_entry_workspace_size(const core::FiaProblem& p) { return entry_layout(p).bytes; }

Status fia_entry_run(const core::FiaProblem& p, const core::FiaData& d, const core::RunContext& ctx,
                     const FiaKernels& k, const IfaKernels& ik) {
  const EntryLayout l = entry_layout(p);
  std::byte* const ws = core::align_base(ctx.workspace, kFiaWorkspaceAlign);
  // A mixed call: the decode requests on the decode kernels after the prefill kernel ran the
  // others; the first failure (bad device data) is the call's.
  const Status st = l.prefill ? run_prefill(p, d, l, ws, ctx.num_threads, k) : Status::kSuccess;
  if (!p.use_ifa) return st;
  core::RunContext decode_ctx = ctx;
  decode_ctx.workspace = ws + l.decode_ws;
  decode_ctx.workspace_size = l.decode_bytes;
  const Status dst = ifa_run(p.ifa, d.ifa, decode_ctx, ik);
  write_decode_pad_rows(p, d, l, ws);
  return st != Status::kSuccess ? st : dst;
}

}  // namespace kvflash::cpu
