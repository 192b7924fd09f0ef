// The FIA prefill driver: workspace layout, the task list (longest first), split-KV chunks and
// their merge, the ISA entry and the padding rows. See fia_kernel.hpp.
#include "cpu/fia/fia_kernel.hpp"

#include <algorithm>
#include <cstring>

#include "core/workspace_arena.hpp"
#include "cpu/fia/fia_kernel_isa.hpp"
#include "cpu/isa.hpp"
#include "cpu/thread_pool.hpp"

namespace kvflash::cpu {
namespace {

constexpr size_t kAlign = kFiaWorkspaceAlign;

// The validator bounds the workspace before anything is sized (fia_validate_problem.cpp's check_size),
// counting key tiles of this many positions.
static_assert(kFiaKeyTile == 64);

struct FiaTask {
  int64_t cost;  ///< key tiles visited
  int64_t b, n2, qt;
  int64_t t_first, t_last;  ///< key tiles (split chunk), or 0 / INT64_MAX
  int64_t slot;             ///< first float of its merge slot rows, or -1: rows finished
  int64_t wave;             ///< the packing wave whose packed tiles it reads (0 when none)
};

struct FiaMergeUnit {
  int64_t b, n2, qt, chunks, slot;
};

int64_t group(const FiaParams& p) { return p.num_heads / p.num_kv_heads; }

// Key tiles [first, last] query tile qt of batch bt visits (first > last: none).
void tile_range(const FiaParams& p, const FiaBatch& bt, int64_t qt, int64_t* first, int64_t* last) {
  const int64_t tq = fia_query_tile(group(p));
  const int64_t i0 = qt * tq, i1 = std::min(bt.q_rows, i0 + tq);
  const int64_t jlo = std::max<int64_t>(0, i0 + bt.band_lo);
  const int64_t jhi = std::min<int64_t>(bt.kv_len - 1, (i1 - 1) + bt.band_hi);
  *first = jlo > jhi ? 1 : jlo / kFiaKeyTile;
  *last = jlo > jhi ? 0 : jhi / kFiaKeyTile;
}

// Whether batch bt runs split (a function of the batch alone).
bool split_batch(const FiaParams& p, const FiaBatch& bt) {
  if (bt.q_rows * group(p) > kFiaSplitRows || bt.q_rows == 0) return false;
  int64_t f = 0, l = 0;
  tile_range(p, bt, 0, &f, &l);
  return l - f + 1 > kFiaSplitTiles;
}

// Split chunks of a split batch's (only) query tile.
int64_t split_chunks(const FiaParams& p, const FiaBatch& bt) {
  int64_t f = 0, l = 0;
  tile_range(p, bt, 0, &f, &l);
  return l / kFiaSplitTiles - f / kFiaSplitTiles + 1;
}

// The key tiles the (batch, KV head)s of bt pack (FiaPackedKv): every tile some query tile of the
// batch visits, [*first, *first + *count) (bands move right with the row, so their union is one
// range). None (count 0) unless its query tiles visit a tile more than twice on average: a batch
// of one query tile visits each once, and where packing ahead saves less (a causal prompt of two
// or three query tiles: 3 visits of 2 tiles, 6 of 3) the packing pass and its wait cost as much
// as they save or more (docs/perf-log.md, "FIA prefill on AMX tiles (2026-12-05)", packed K/V).
void packed_range(const FiaParams& p, const FiaBatch& bt, int64_t* first, int64_t* count) {
  const int64_t tq = fia_query_tile(group(p));
  *first = 0, *count = 0;
  if (bt.q_rows <= tq || bt.kv_len <= 0) return;
  const int64_t jlo = std::max<int64_t>(0, bt.band_lo);
  const int64_t jhi = std::min<int64_t>(bt.kv_len - 1, (bt.q_rows - 1) + bt.band_hi);
  if (jlo > jhi) return;
  const int64_t f = jlo / kFiaKeyTile, n = jhi / kFiaKeyTile - f + 1;
  int64_t visits = 0;
  for (int64_t qt = 0; qt * tq < bt.q_rows && visits <= 2 * n; ++qt) {
    int64_t a = 0, z = 0;
    tile_range(p, bt, qt, &a, &z);
    visits += std::max<int64_t>(0, z - a + 1);
  }
  if (visits <= 2 * n) return;
  *first = f, *count = n;
}

// Bytes of one packed key tile of p.
size_t packed_tile_bytes(const FiaParams& p) {
  return static_cast<size_t>(fia_packed_tile_elems(p)) * sizeof(uint16_t);
}

// The packed-tile bytes the plan reserves: the packed ranges (packed_range) of the plan's batches
// for every KV head, but for a (batch, KV head) whose range alone takes more than
// kFiaPackedKvMaxBytes, together at most kFiaPackedKvMaxBytes; none off the bf16 path. Each
// product is bounded by the maximum before it is taken, so none overflows. (A run whose batches
// differ, by left padding read at run time, packs what fits in the workspace it is given.)
size_t packed_bound(const FiaParams& p) {
  if (!scalar::fia_bf16_dot_shape_entry(p)) return 0;
  const size_t tile = packed_tile_bytes(p);
  size_t total = 0;
  for (int64_t b = 0; b < p.batch && total < kFiaPackedKvMaxBytes; ++b) {
    int64_t first = 0, count = 0;
    packed_range(p, p.batches[b], &first, &count);
    const auto tiles = static_cast<size_t>(count);
    if (tiles == 0 || tiles > kFiaPackedKvMaxBytes / tile) continue;
    total += std::min(tiles * tile * static_cast<size_t>(p.num_kv_heads), kFiaPackedKvMaxBytes);
  }
  return std::min(total, kFiaPackedKvMaxBytes);
}

struct Counts {
  int64_t tasks = 0, merges = 0, slot_floats = 0;
};

// bound: the most any run of p's plan needs. Left padding read at run time (the operator's
// fia::resolve_batches) can shorten a batch's key range or move its band left, which can move a
// decode-like batch's range across one more tile or chunk boundary (even into a split); the
// workspace, a function of the plan, reserves that for every batch that could split.
Counts count(const FiaParams& p, bool bound = false) {
  const int64_t tq = fia_query_tile(group(p));
  const int64_t rowf = static_cast<int64_t>(scalar::fia_slot_floats_entry(p));
  Counts c;
  for (int64_t b = 0; b < p.batch; ++b) {
    const FiaBatch& bt = p.batches[b];
    const int64_t plain = (bt.q_rows + tq - 1) / tq * p.num_kv_heads;
    const bool may_split = bt.q_rows > 0 && bt.q_rows * group(p) <= kFiaSplitRows;
    if (bound && may_split) {
      int64_t f = 0, l = 0;
      tile_range(p, bt, 0, &f, &l);
      const int64_t ch = (f > l ? 0 : l - f + 1) / kFiaSplitTiles + 2;
      c.tasks += std::max(ch * p.num_kv_heads, plain);
      c.merges += p.num_kv_heads;
      c.slot_floats += ch * bt.q_rows * group(p) * rowf * p.num_kv_heads;
    } else if (split_batch(p, bt)) {
      const int64_t ch = split_chunks(p, bt);
      c.tasks += ch * p.num_kv_heads;
      c.merges += p.num_kv_heads;
      c.slot_floats += ch * bt.q_rows * group(p) * rowf * p.num_kv_heads;
    } else {
      c.tasks += plain;
    }
  }
  return c;
}

// The packing of one (batch, KV head): its tiles (kv; not packed: count 0), at element `at` of
// the packed region, its wave and its first item in the wave's packing pass. Along the table,
// waves never decrease, nor first items within a wave (an unpacked unit gets the first item of
// the next packed one and packs none).
struct PackUnit {
  FiaPackedKv kv;
  int64_t at, wave, item0;
};

// The workspace of a run with c's tasks, merges and slots: one arena layout (its size with the
// plan's bound counts, its regions with the run's, which never exceed them), then one scratch
// row of `stride` bytes per participant, then, on the bf16 path, one PackUnit per (batch, KV
// head) and the packed tiles (packed_bytes; the last region, so a run's regions before it never
// pass the plan's).
struct Layout {
  size_t tasks, merges, slots, scratch, stride, units, packed, bytes;
};

Layout layout(const FiaParams& p, const Counts& c, size_t packed_bytes) {
  core::WorkspaceArena arena(kAlign);
  Layout l{};
  l.tasks = arena.take_array<FiaTask>(static_cast<size_t>(c.tasks));
  l.merges = arena.take_array<FiaMergeUnit>(static_cast<size_t>(c.merges));
  l.slots = arena.take_array<float>(static_cast<size_t>(c.slot_floats));
  l.stride = core::round_up(
      static_cast<size_t>(scalar::fia_scratch_floats_entry(p)) * sizeof(float), kAlign);
  l.scratch = arena.take(static_cast<size_t>(kFiaMaxParticipants) * l.stride);
  const bool packs = scalar::fia_bf16_dot_shape_entry(p);
  l.units = arena.take_array<PackUnit>(packs ? static_cast<size_t>(p.batch * p.num_kv_heads) : 0);
  l.packed = arena.take(packed_bytes);
  l.bytes = arena.bytes();
  return l;
}

struct Run {
  const FiaParams* p;
  const FiaPointers* d;
  const FiaTask* tasks;
  const FiaMergeUnit* merges;
  float* slots;
  std::byte* scratch;
  size_t stride;
  FiaTaskFn fn;
  FiaMergeFn merge;
  const PackUnit* units;  ///< per (batch, KV head), or null: nothing packed
  FiaPackFn pack;
};

// One wave: its packing items (the tiles of the packed units among units[u0, u1), `items` in all)
// and its tasks, tasks[task0, task0 + tasks).
struct Wave {
  const Run* run;
  uint16_t* packed;
  int64_t u0, u1, items;
  int64_t task0, tasks;
};

}  // namespace

size_t fia_workspace_size(const FiaParams& p) {
  return layout(p, count(p, true), packed_bound(p)).bytes;
}

const FiaKernels& fia_kernels_for(Isa isa) {
  switch (isa) {
    case Isa::kAmx:
      return amx::kFiaKernels;
    case Isa::kAvx512Bf16:
      return avx512::kFiaKernelsBf16;
    case Isa::kAvx512:
      return avx512::kFiaKernels;
    case Isa::kAvx2:
      return avx2::kFiaKernels;
    case Isa::kScalar:
      break;
  }
  return scalar::kFiaKernels;
}

void fia_run(const FiaParams& p, const FiaPointers& d, void* workspace, size_t workspace_size,
             int num_threads) {
  fia_run(p, d, workspace, workspace_size, num_threads, fia_kernels_for(active_isa()));
}

void fia_run(const FiaParams& p, const FiaPointers& d, void* workspace, size_t workspace_size,
             int num_threads, const FiaKernels& k) {
  std::byte* const ws = core::align_base(workspace, kAlign);
  const Counts c = count(p);
  const Layout lay = layout(p, c, 0);
  const FiaTaskFn fn =
      k.task_bf16 != nullptr && scalar::fia_bf16_dot_shape_entry(p) ? k.task_bf16 : k.task;
  // The packed tiles take what the workspace holds past the other regions (fia_workspace_size
  // reserved the plan's packed_bound there), at most kFiaPackedKvMaxBytes.
  const size_t used = static_cast<size_t>(ws - static_cast<std::byte*>(workspace)) + lay.packed;
  const bool packs = k.task_bf16 != nullptr && fn == k.task_bf16 && k.pack_bf16 != nullptr;
  const size_t capacity =
      packs && workspace_size > used ? std::min(workspace_size - used, kFiaPackedKvMaxBytes) : 0;
  auto* tasks = reinterpret_cast<FiaTask*>(ws + lay.tasks);
  auto* merges = reinterpret_cast<FiaMergeUnit*>(ws + lay.merges);
  auto* slots = reinterpret_cast<float*>(ws + lay.slots);
  std::byte* const scratch = ws + lay.scratch;

  const int64_t G = group(p), tq = fia_query_tile(G);
  const int64_t rowf = static_cast<int64_t>(scalar::fia_slot_floats_entry(p));
  int64_t nt = 0, mu = 0, slot = 0;
  for (int64_t b = 0; b < p.batch; ++b) {
    const FiaBatch& bt = p.batches[b];
    if (split_batch(p, bt)) {
      int64_t f = 0, l = 0;
      tile_range(p, bt, 0, &f, &l);
      const int64_t ch = split_chunks(p, bt), rows = bt.q_rows * G;
      for (int64_t n2 = 0; n2 < p.num_kv_heads; ++n2) {
        merges[mu++] = {b, n2, 0, ch, slot};
        for (int64_t x = 0; x < ch; ++x) {
          const int64_t c0 = (f / kFiaSplitTiles + x) * kFiaSplitTiles;
          const int64_t t0 = std::max(f, c0), t1 = std::min(l, c0 + kFiaSplitTiles - 1);
          tasks[nt++] = {t1 - t0 + 1, b, n2, 0, t0, t1, slot, 0};
          slot += rows * rowf;
        }
      }
      continue;
    }
    const int64_t qts = (bt.q_rows + tq - 1) / tq;
    for (int64_t qt = 0; qt < qts; ++qt) {
      int64_t f = 0, l = 0;
      tile_range(p, bt, qt, &f, &l);
      for (int64_t n2 = 0; n2 < p.num_kv_heads; ++n2)
        tasks[nt++] = {l - f + 1, b, n2, qt, 0, INT64_MAX, -1, 0};
    }
  }
  // The packing waves: the (batch, KV head)s in table order, each wave's tiles at most `capacity`
  // bytes (reused by the next wave); a unit whose tiles alone take more is not packed.
  auto* units = reinterpret_cast<PackUnit*>(ws + lay.units);
  auto* const packed = reinterpret_cast<uint16_t*>(ws + lay.packed);
  const size_t tile_bytes = packed_tile_bytes(p);
  int64_t waves = 1;
  if (capacity > 0) {
    size_t at = 0;
    int64_t item = 0;
    for (int64_t b = 0; b < p.batch; ++b) {
      int64_t first = 0, count = 0;
      packed_range(p, p.batches[b], &first, &count);
      const bool fits = count > 0 && static_cast<size_t>(count) <= capacity / tile_bytes;
      for (int64_t n2 = 0; n2 < p.num_kv_heads; ++n2) {
        PackUnit& u = units[b * p.num_kv_heads + n2];
        if (!fits) {
          u = {{nullptr, 0, 0}, 0, waves - 1, item};
          continue;
        }
        const size_t bytes = static_cast<size_t>(count) * tile_bytes;
        if (at + bytes > capacity) ++waves, at = 0, item = 0;
        const auto e = static_cast<int64_t>(at / sizeof(uint16_t));
        u = {{packed + e, first, count}, e, waves - 1, item};
        at += bytes, item += count;
      }
    }
    for (int64_t x = 0; x < c.tasks; ++x)
      tasks[x].wave = units[tasks[x].b * p.num_kv_heads + tasks[x].n2].wave;
  }
  // Longest first: with one-at-a-time claiming this balances causal work (late query tiles see
  // many key tiles). The order never changes a result: each row (or split chunk) is computed
  // inside one task.
  std::sort(tasks, tasks + c.tasks, [](const FiaTask& x, const FiaTask& y) {
    if (x.wave != y.wave) return x.wave < y.wave;
    if (x.cost != y.cost) return x.cost > y.cost;
    if (x.b != y.b) return x.b < y.b;
    if (x.qt != y.qt) return x.qt < y.qt;
    if (x.n2 != y.n2) return x.n2 < y.n2;
    return x.t_first < y.t_first;
  });

  const FiaMergeFn merge = k.merge;
  const int threads =
      std::min(num_threads > 0 ? num_threads : default_num_threads(), kFiaMaxParticipants);
  const Run run{&p,         &d,         tasks, merges, slots,
                scratch,    lay.stride, fn,    merge,  capacity > 0 ? units : nullptr,
                k.pack_bf16};
  // Wave by wave: a parallel pass packs the wave's tiles, then its tasks read them. The lambdas
  // capture one pointer, so std::function keeps them inline (no allocation).
  int64_t task0 = 0;
  for (int64_t w = 0; w < waves; ++w) {
    Wave wv{&run, packed, 0, 0, 0, task0, 0};
    while (task0 + wv.tasks < c.tasks && tasks[task0 + wv.tasks].wave == w) ++wv.tasks;
    task0 += wv.tasks;
    if (run.units != nullptr) {
      // The wave's units: consecutive in the table (waves never decrease along it).
      const int64_t U = p.batch * p.num_kv_heads;
      while (wv.u0 < U && units[wv.u0].wave < w) ++wv.u0;
      for (wv.u1 = wv.u0; wv.u1 < U && units[wv.u1].wave == w; ++wv.u1)
        wv.items = std::max(wv.items, units[wv.u1].item0 + units[wv.u1].kv.count);
      parallel_for(wv.items, threads, [v = &wv](int64_t item, int) {
        // The unit of `item`: the last of the wave whose first item is at most item (a packed
        // one: an unpacked unit's first item is the next packed unit's, or past the wave's).
        const PackUnit* us = v->run->units;
        const PackUnit* u =
            std::upper_bound(us + v->u0, us + v->u1, item,
                             [](int64_t x, const PackUnit& y) { return x < y.item0; }) -
            1;
        const int64_t unit = u - us, kvn = v->run->p->num_kv_heads, tile = item - u->item0;
        v->run->pack(*v->run->p, *v->run->d, unit / kvn, unit % kvn, u->kv.first + tile,
                     v->packed + u->at + tile * fia_packed_tile_elems(*v->run->p));
      });
    }
    parallel_for(wv.tasks, threads, [v = &wv](int64_t task, int worker) {
      const Run* r = v->run;
      const FiaTask& t = r->tasks[v->task0 + task];
      const FiaPackedKv* kv = nullptr;
      if (r->units != nullptr) {
        const PackUnit& u = r->units[t.b * r->p->num_kv_heads + t.n2];
        if (u.kv.count > 0) kv = &u.kv;
      }
      r->fn(*r->p, *r->d, reinterpret_cast<float*>(r->scratch + worker * r->stride), t.b, t.n2,
            t.qt, t.t_first, t.t_last, t.slot < 0 ? nullptr : r->slots + t.slot, kv);
    });
  }
  if (c.merges > 0) {
    parallel_for(c.merges, threads, [r = &run](int64_t unit, int worker) {
      const FiaMergeUnit& m = r->merges[unit];
      r->merge(*r->p, *r->d, reinterpret_cast<float*>(r->scratch + worker * r->stride), m.b, m.n2,
               m.qt, m.chunks, r->slots + m.slot);
    });
  }
  scalar::fia_pad_rows_entry(p, d, reinterpret_cast<float*>(scratch));
}

}  // namespace kvflash::cpu
