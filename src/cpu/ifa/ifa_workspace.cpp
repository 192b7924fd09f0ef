#include "cpu/ifa/ifa_workspace.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/error.hpp"
#include "core/half.hpp"
#include "core/workspace_arena.hpp"
#include "ops/ifa/ifa_bind.hpp"
#include "ops/ifa/ifa_error.hpp"
#include "ops/ifa/ifa_fault.hpp"

namespace kvflash::cpu {
namespace {

float widen(const void* data, DType dtype, int64_t index) {
  switch (dtype) {
    case DType::kFloat16: {
      uint16_t h;
      std::memcpy(&h, static_cast<const uint16_t*>(data) + index, sizeof(h));
      return core::fp16_to_float(h);
    }
    case DType::kBFloat16: {
      uint16_t h;
      std::memcpy(&h, static_cast<const uint16_t*>(data) + index, sizeof(h));
      return core::bf16_to_float(h);
    }
    default: {
      float f;
      std::memcpy(&f, static_cast<const float*>(data) + index, sizeof(f));
      return f;
    }
  }
}

// dst[i][j][k] = view(i, j, k) for a (ni, nj, nk) box of the view bound at data; 0 where the
// view is absent.
void expand(const core::View3& view, const void* data, int64_t ni, int64_t nj, int64_t nk,
            float* dst) {
  for (int64_t i = 0; i < ni; ++i) {
    for (int64_t j = 0; j < nj; ++j) {
      for (int64_t k = 0; k < nk; ++k) {
        *dst++ = view.present ? widen(data, view.dtype, view.index(i, j, k)) : 0.0f;
      }
    }
  }
}

// The first slot of batch b's attended range [begin, begin + kv_len[b]) (not empty) whose block
// id is outside [0, num_blocks), or -1. Slots beyond the range are never read.
int64_t bad_slot(const core::IfaProblem& p, const int32_t* table, int64_t b, int64_t begin) {
  const core::BlockTableView& bt = p.block_table;
  const int64_t last = (begin + p.kv_len[b] - 1) / bt.block_size;
  for (int64_t slot = begin / bt.block_size; slot <= last; ++slot) {
    if (core::ifa_bad_block_id(p, table[b * bt.s0 + slot * bt.s1])) return slot;
  }
  return -1;
}

// What batch b does in this run, from the device data (kv_padding_size, block table).
uint8_t batch_state(const core::IfaProblem& p, const core::IfaData& d, int64_t b, int64_t begin,
                    bool empty) {
  const int64_t len = p.kv_len[b];
  const core::IfaBatchState s = core::ifa_range_state(p, empty, begin, len);
  if (s != core::kIfaBatchRun || len == 0) return s;
  if (p.k.paged && bad_slot(p, d.block_table, b, begin) >= 0) return core::kIfaBatchFaultBlockId;
  return core::kIfaBatchRun;
}

}  // namespace

int64_t ifa_num_chunks(int64_t kv_len) {
  return kv_len <= 0 ? 0 : (kv_len + kIfaChunkLen - 1) / kIfaChunkLen;
}

bool ifa_merged_by_chunk(const core::IfaProblem& p, int64_t b) {
  return ifa_num_chunks(p.kv_len[b]) == 1;
}

IfaLayout ifa_layout(const core::IfaProblem& p) {
  IfaLayout l;
  l.dp = (p.head_dim + kIfaDimAlign - 1) / kIfaDimAlign * kIfaDimAlign;
  l.head_floats = 2 * l.dp + IfaHeadSlot::kHeader;
  l.slot_floats = p.group * l.head_floats;
  for (int64_t b = 0; b < p.batch; ++b) l.num_slots += ifa_num_chunks(p.kv_len[b]);
  l.num_slots *= p.num_kv_heads;

  core::WorkspaceArena arena(kIfaWorkspaceAlign);
  const size_t batch = static_cast<size_t>(p.batch);
  const bool antiquant = p.antiquant != core::AntiquantMode::kNone;
  l.chunk_first = arena.take_array<int64_t>(batch + 1);
  l.kv_begin = arena.take_array<int64_t>(batch);
  l.seq_base = arena.take_array<const void*>(p.k.paged ? 0 : 2 * batch);
  l.batch_state = arena.take_array<uint8_t>(batch);
  l.antiquant =
      arena.take_array<float>(antiquant ? 4 * static_cast<size_t>(p.num_kv_heads * p.head_dim) : 0);
  l.quant2 = arena.take_array<float>(
      p.quant_scale2.present ? 2 * static_cast<size_t>(p.num_heads * p.head_dim) : 0);
  l.slots = arena.take_array<float>(static_cast<size_t>(l.num_slots * l.slot_floats));
  l.bytes = arena.bytes();
  return l;
}

std::byte* ifa_align(void* ws) { return core::align_base(ws, kIfaWorkspaceAlign); }

void ifa_fill_chunk_index(const core::IfaProblem& p, const IfaLayout& l, std::byte* base) {
  auto* first = reinterpret_cast<int64_t*>(base + l.chunk_first);
  first[0] = 0;
  for (int64_t b = 0; b < p.batch; ++b) {
    first[b + 1] = first[b] + ifa_num_chunks(p.kv_len[b]) * p.num_kv_heads;
  }
}

std::byte* ifa_prepare(const core::IfaProblem& p, const core::IfaData& data, const IfaLayout& l,
                       void* ws, core::IfaData* d) {
  std::byte* base = ifa_align(ws);

  *d = data;
  if (!p.k.paged) {
    auto* seq = reinterpret_cast<const void**>(base + l.seq_base);
    ifa::bind_batch_bases(p, seq, seq + p.batch, d);
  }

  // Device data, read here: in stream order, after everything queued before this run.
  auto* begin = reinterpret_cast<int64_t*>(base + l.kv_begin);
  auto* state = reinterpret_cast<uint8_t*>(base + l.batch_state);
  const int64_t pad = p.left_padding ? d->kv_padding_size[0] : 0;
  for (int64_t b = 0; b < p.batch; ++b) {
    const core::IfaKvRange r = core::ifa_kv_range(p, b, pad);
    begin[b] = r.begin + (p.kv_start.empty() ? 0 : p.kv_start[b]);
    state[b] = batch_state(p, *d, b, begin[b], r.empty);
  }
  d->kv_begin = begin;
  d->batch_state = state;

  ifa_fill_chunk_index(p, l, base);
  if (p.antiquant != core::AntiquantMode::kNone) {
    auto* aq = reinterpret_cast<float*>(base + l.antiquant);
    const int64_t n = 2 * p.num_kv_heads * p.head_dim;
    if (p.split_antiquant) {  // [scale, offset][key, value]: the value's from its own tensors
      const int64_t kd = p.num_kv_heads * p.head_dim;
      // Per-token parameters are applied per position by the kernel: the tables are 1 and 0.
      auto table = [&](const core::View3& v, const void* data, bool token, bool scale, float* dst) {
        if (token) {
          std::fill(dst, dst + kd, scale ? 1.0f : 0.0f);
        } else {
          expand(v, data, 1, p.num_kv_heads, p.head_dim, dst);
        }
      };
      table(p.antiquant_scale, d->antiquant_scale, p.token_k, true, aq);
      table(p.antiquant_scale_v, d->antiquant_scale_v, p.token_v, true, aq + kd);
      table(p.antiquant_offset, d->antiquant_offset, p.token_k, false, aq + n);
      table(p.antiquant_offset_v, d->antiquant_offset_v, p.token_v, false, aq + n + kd);
    } else {
      expand(p.antiquant_scale, d->antiquant_scale, 2, p.num_kv_heads, p.head_dim, aq);
      expand(p.antiquant_offset, d->antiquant_offset, 2, p.num_kv_heads, p.head_dim, aq + n);
    }
  }
  if (p.quant_scale2.present) {
    auto* q2 = reinterpret_cast<float*>(base + l.quant2);
    const int64_t n = p.num_heads * p.head_dim;
    expand(p.quant_scale2, d->quant_scale2, 1, p.num_heads, p.head_dim, q2);
    expand(p.quant_offset2, d->quant_offset2, 1, p.num_heads, p.head_dim, q2 + n);
  }
  return base;
}

Status ifa_report_faults(const core::IfaProblem& p, const core::IfaData& d) {
  for (int64_t b = 0; b < p.batch; ++b) {
    const uint8_t state = d.batch_state[b];
    if (state != core::kIfaBatchFaultBlockId && state != core::kIfaBatchFaultMaskRange) continue;
    const bool block_id = state == core::kIfaBatchFaultBlockId;
    core::FaultRecord f = core::fault_of(
        core::kFaultOpIfa, block_id ? core::kFaultBlockId : core::kFaultPaddingPastMask, b);
    f.len = p.kv_len[b];
    f.begin = d.kv_begin[b];
    if (block_id) {
      const core::BlockTableView& bt = p.block_table;
      f.slot = bad_slot(p, d.block_table, b, f.begin);
      f.value = d.block_table[b * bt.s0 + f.slot * bt.s1];
      f.limit = bt.num_blocks;
    } else {
      f.value = d.kv_padding_size[0];
      f.limit = p.mask_cols;
    }
    return ifa::ifa_fault_status(f);
  }
  return Status::kSuccess;
}

IfaSchedule ifa_schedule(const core::IfaProblem& p, const IfaLayout& l, int num_threads) {
  const int64_t kvn = p.num_kv_heads;
  const int64_t chunks = kvn > 0 ? l.num_slots / kvn : 0;
  const int64_t workers = std::max(1, num_threads);
  int64_t per_task =
      std::min(kvn, std::max<int64_t>(1, kIfaMaxGroup / std::max<int64_t>(1, p.group)));
  // Halve the heads per task until every worker has a few tasks (or a task is one head).
  while (per_task > 1 &&
         chunks * ((kvn + per_task - 1) / per_task) < kIfaMinTasksPerWorker * workers) {
    per_task = (per_task + 1) / 2;
  }
  IfaSchedule s;
  s.kv_heads_per_task = std::max<int64_t>(1, per_task);
  s.kv_blocks = kvn > 0 ? (kvn + s.kv_heads_per_task - 1) / s.kv_heads_per_task : 0;
  s.num_tasks = chunks * s.kv_blocks;
  return s;
}

IfaChunkTask ifa_chunk_task(const core::IfaProblem& p, const core::IfaData& d, const IfaLayout& l,
                            const IfaSchedule& s, const std::byte* base, int64_t task) {
  const auto* first = reinterpret_cast<const int64_t*>(base + l.chunk_first);
  const int64_t kvn = p.num_kv_heads;
  // first[b] counts (chunk, kv head) pairs; first[b] / kvn * kv_blocks counts tasks. The sequence
  // whose task range holds `task` (empty sequences have empty ranges).
  const auto tasks_before = [&](int64_t f) { return f / kvn * s.kv_blocks; };
  const int64_t b = std::upper_bound(first, first + p.batch + 1, task,
                                     [&](int64_t t, int64_t f) { return t < tasks_before(f); }) -
                    first - 1;
  IfaChunkTask t;
  t.b = b;
  t.num_chunks = ifa_num_chunks(p.kv_len[b]);
  const int64_t rem = task - tasks_before(first[b]);
  const int64_t block = rem / t.num_chunks;
  t.chunk = rem % t.num_chunks;
  t.n2_begin = block * s.kv_heads_per_task;
  t.n2_end = std::min(kvn, t.n2_begin + s.kv_heads_per_task);
  t.begin = d.kv_begin[b] + t.chunk * kIfaChunkLen;
  t.end = std::min(t.begin + kIfaChunkLen, d.kv_begin[b] + p.kv_len[b]);
  t.bf16_dot = s.bf16_dot;
  t.prefetch_across = s.prefetch_across;
  return t;
}

}  // namespace kvflash::cpu
