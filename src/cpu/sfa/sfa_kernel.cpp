// SFA CPU backend: workspace layout, schedule, the run's device reads (lengths), dispatch to the
// per-ISA task function, and the report of bad device data. ISA-independent.
#include "cpu/sfa/sfa_kernel.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/workspace_arena.hpp"
#include "cpu/thread_pool.hpp"
#include "ops/sfa/sfa_bind.hpp"
#include "ops/sfa/sfa_fault.hpp"
#include "ops/sfa/sfa_validate.hpp"

namespace kvflash::cpu {
namespace {

using core::SfaProblem;

// Below this many heads per task, re-gathering each KV row for every head block costs more than
// the extra parallelism gains (each gathered row feeds head_block x 1088 FLOP).
constexpr int64_t kMinHeadBlock = 8;
constexpr int64_t kQk = SfaProblem::kNopeDim + SfaProblem::kRopeDim;
constexpr size_t kAlign = 64;  // one cache line, one zmm

// Heads per task for P participants: split heads only while there are too few rows to give every
// participant two tasks. N1 is a power of two, so halving keeps the blocks equal.
int64_t head_block(const SfaProblem& p, int participants) {
  int64_t hb = std::max<int64_t>(p.num_heads, 1);
  while (hb > kMinHeadBlock && p.num_rows * ((p.num_heads + hb - 1) / hb) < 2 * participants) {
    hb /= 2;
  }
  return hb;
}

// Byte offsets from the aligned workspace base. Lane w's tiles are at tiles + w * tile_bytes; its
// heads are rows [w * head_block, (w + 1) * head_block) of the per-head arrays.
struct SfaLayout {
  int lanes = 1;
  int64_t head_rows = 0;  // enough for every participant count the schedule can choose
  size_t batches = 0, rows = 0, row_fault = 0, tiles = 0, tile_bytes = 0;
  size_t kt = 0, vt = 0, pos = 0;  // offsets inside one lane's tiles
  size_t q = 0, s = 0, acc = 0, st = 0, bytes = 0;
};

SfaLayout sfa_layout(const SfaProblem& p) {
  SfaLayout l;
  const int64_t min_hb = std::min<int64_t>(std::max<int64_t>(p.num_heads, 1), kMinHeadBlock);
  const int64_t max_tasks = p.num_rows * ((p.num_heads + min_hb - 1) / min_hb);
  l.lanes = static_cast<int>(std::clamp<int64_t>(max_tasks, 1, kSfaMaxLanes));
  for (int w = 1; w <= l.lanes; ++w) l.head_rows = std::max(l.head_rows, w * head_block(p, w));
  const size_t hr = static_cast<size_t>(l.head_rows);
  core::WorkspaceArena arena(kAlign);
  l.batches = arena.take_array<core::SfaBatch>(static_cast<size_t>(p.batch));
  l.rows = arena.take_array<core::SfaRow>(static_cast<size_t>(p.num_rows));
  l.row_fault = arena.take_array<uint8_t>(static_cast<size_t>(p.num_rows));
  // One lane's tiles, laid out by the same arena type (lane_scratch carves them).
  core::WorkspaceArena tile(kAlign);
  l.kt = tile.take_array<float>(kSfaTile * kQk);
  l.vt = tile.take_array<float>(kSfaTile * SfaProblem::kNopeDim);
  l.pos = tile.take_array<int64_t>(2 * kSfaTile);
  l.tile_bytes = tile.extent();  // lanes follow each other
  l.tiles = arena.take(l.tile_bytes * static_cast<size_t>(l.lanes));
  l.q = arena.take_array<float>(hr * kQk);
  l.s = arena.take_array<float>(hr * kSfaTile);
  l.acc = arena.take_array<float>(hr * SfaProblem::kNopeDim);
  l.st = arena.take_array<float>(hr * 2);
  l.bytes = arena.bytes();
  return l;
}

SfaScratch lane_scratch(const SfaLayout& l, std::byte* base, int lane, int64_t hb) {
  std::byte* t = base + l.tiles + l.tile_bytes * static_cast<size_t>(lane);
  const int64_t h0 = lane * hb;
  SfaScratch w;
  w.kt = reinterpret_cast<float*>(t + l.kt);
  w.vt = reinterpret_cast<float*>(t + l.vt);
  w.pos = reinterpret_cast<int64_t*>(t + l.pos);
  w.q = reinterpret_cast<float*>(base + l.q) + h0 * kQk;
  w.s = reinterpret_cast<float*>(base + l.s) + h0 * kSfaTile;
  w.acc = reinterpret_cast<float*>(base + l.acc) + h0 * SfaProblem::kNopeDim;
  w.st = reinterpret_cast<float*>(base + l.st) + h0 * 2;
  return w;
}

// The documented result of a call whose lengths were bad: every output NaN.
void write_all_nan(const SfaProblem& p, const core::SfaData& d) {
  const uint16_t nan16 = p.out_dtype == DType::kFloat16 ? 0x7E00 : 0x7FC0;
  auto* out = static_cast<uint16_t*>(d.out);
  auto* out32 = static_cast<float*>(d.out);
  const float nan = __builtin_nanf("");
  for (int64_t r = 0; r < p.num_rows; ++r) {
    for (int64_t h = 0; h < p.num_heads; ++h) {
      for (int64_t i = 0; i < SfaProblem::kNopeDim; ++i) {
        if (p.out_dtype == DType::kFloat32) {
          out32[p.out.index(r, h, i)] = nan;
        } else {
          out[p.out.index(r, h, i)] = nan16;
        }
      }
      if (d.softmax_max != nullptr) {
        d.softmax_max[p.softmax_max.index(r, h, 0)] = nan;
        d.softmax_sum[p.softmax_sum.index(r, h, 0)] = nan;
      }
    }
  }
}

// The split for `threads` workers on a workspace with `lanes` scratch lanes.
SfaSchedule schedule_for(const SfaProblem& p, int lanes, int threads) {
  SfaSchedule s;
  const int want = std::clamp(threads, 1, lanes);
  s.head_block = head_block(p, want);
  s.num_tasks = p.num_rows * ((p.num_heads + s.head_block - 1) / s.head_block);
  s.participants = static_cast<int>(std::clamp<int64_t>(s.num_tasks, 1, want));
  return s;
}

}  // namespace

SfaSchedule sfa_schedule(const SfaProblem& p, int threads) {
  return schedule_for(p, sfa_layout(p).lanes, threads);
}

size_t sfa_workspace_size(const SfaProblem& p) { return sfa_layout(p).bytes; }

Status sfa_report_faults(const SfaProblem& p, const core::SfaData& d, const uint8_t* row_fault) {
  core::FaultRecord fault;
  if (!core::sfa_row_fault_record(p, d, row_fault, &fault)) return Status::kSuccess;
  return sfa::sfa_fault_status(p, fault);
}

Status sfa_run(const SfaProblem& p, const core::SfaData& data, const core::RunContext& ctx,
               const SfaKernels& k) {
  const SfaLayout l = sfa_layout(p);
  std::byte* base = core::align_base(ctx.workspace, kAlign);

  core::SfaData d = data;
  // Device data, read here: in stream order, after everything queued before this run.
  auto* batches = reinterpret_cast<core::SfaBatch*>(base + l.batches);
  auto* rows = reinterpret_cast<core::SfaRow*>(base + l.rows);
  if (Status s = sfa::resolve_lengths(p, d, batches, rows); s != Status::kSuccess) {
    write_all_nan(p, d);
    return s;
  }
  d.batches = batches;
  d.rows = rows;
  auto* row_fault = reinterpret_cast<uint8_t*>(base + l.row_fault);
  std::memset(row_fault, 0, static_cast<size_t>(p.num_rows));

  const int n = ctx.num_threads;
  const SfaSchedule s = schedule_for(p, l.lanes, n > 0 ? n : default_num_threads());
  struct Run {
    const SfaProblem* p;
    const core::SfaData* d;
    const SfaSchedule* s;
    const SfaLayout* l;
    std::byte* base;
    uint8_t* row_fault;
    const SfaKernels* k;
  } run{&p, &d, &s, &l, base, row_fault, &k};
  // The lambda captures one pointer, so std::function keeps it inline (no allocation).
  parallel_for(s.num_tasks, s.participants, [r = &run](int64_t task, int worker) {
    r->k->task(*r->p, *r->d, *r->s, lane_scratch(*r->l, r->base, worker, r->s->head_block),
               r->row_fault, task);
  });
  return sfa_report_faults(p, d, row_fault);
}

}  // namespace kvflash::cpu
