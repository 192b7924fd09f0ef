// LightningIndexer CPU driver: workspace layout, the run's device reads (lengths, block ids) and
// their faults, one task per query row on the parallel loop, the per-ISA scorer, the top-k and
// the output writes. ISA-independent.
#include "cpu/li/li_kernel.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "core/error.hpp"
#include "core/half.hpp"
#include "core/length_tensor.hpp"
#include "core/strings.hpp"
#include "core/workspace_arena.hpp"
#include "cpu/thread_pool.hpp"

namespace kvflash::cpu {
namespace {

constexpr size_t kAlign = 64;  // one cache line, one zmm

// What the prologue derives per batch from the device data.
struct LiBatch {
  int64_t q_first = 0, lq = 0;    // first query row, query count
  int64_t kv_first = 0, lkv = 0;  // first key (TND), key count
  int64_t fault = 0;              // 1: the batch's rows are faulted
};

// Byte offsets from the aligned workspace base.
struct LiLayout {
  int lanes = 1;
  size_t batches = 0, row_batch = 0, lanes_at = 0, lane_bytes = 0, bytes = 0;
  // Split mode (fewer rows than lanes, li_run): the rows' references, and one slot per (row,
  // share) task of the scratch a share needs of its own (the key staging, a partial histogram).
  size_t row_refs = 0, shares_at = 0, share_bytes = 0;
  size_t groups = 0;                                  // row-group mode: the groups' first rows
  size_t share_kt = 0, share_kb = 0, share_hist = 0;  // within a share slot
  size_t q = 0, w = 0, kt = 0, kb = 0, keys = 0, hist = 0, sel = 0, tmp = 0,
         cand = 0;  // within a lane
};

// One arena for the workspace, and the sub-layouts of a lane and of a share slot, each repeated
// back to back at its extent.
LiLayout li_layout(const LiParams& p) {
  LiLayout l;
  l.lanes = static_cast<int>(std::clamp<int64_t>(p.num_rows, 1, kLiMaxLanes));
  core::WorkspaceArena ws(kAlign);
  l.batches = ws.take_array<LiBatch>(static_cast<size_t>(p.batch));
  l.row_batch = ws.take_array<int32_t>(static_cast<size_t>(p.q_tnd ? p.num_rows : 0));
  l.groups = ws.take_array<int32_t>(static_cast<size_t>(p.num_rows + 1));
  core::WorkspaceArena lane(kAlign);
  l.q = lane.take_array<float>(kLiHeadDim * kLiMaxHeads);
  l.w = lane.take_array<float>(kLiMaxHeads);
  l.kt = lane.take_array<float>(kLiKeyChunk * kLiHeadDim);
  l.kb = lane.take_array<uint16_t>(kLiKeyChunk * kLiHeadDim);
  l.keys = lane.take_array<uint32_t>(static_cast<size_t>(std::max<int64_t>(p.kv_cap, 1)));
  l.hist = lane.take_array<uint32_t>(kLiRadixBins);
  l.sel = lane.take_array<uint64_t>(static_cast<size_t>(p.sparse_count + 1));
  l.tmp = lane.take_array<uint64_t>(static_cast<size_t>(p.sparse_count));
  l.cand = lane.take_array<int32_t>(
      static_cast<size_t>(li_topk_candidates(p.sparse_count, p.kv_cap) + 1));
  l.lane_bytes = lane.extent();
  l.lanes_at = ws.take(l.lane_bytes * static_cast<size_t>(l.lanes));
  if (p.num_rows < kLiMaxLanes) {
    core::WorkspaceArena share(kAlign);
    // Shares score one row at a time: one register block of keys, or one tile block of 16 keys
    // and their scores for 64 heads (li_tiles-inl.h); kLiKeyChunk rows hold either.
    l.share_kt = share.take_array<float>(kLiKeyChunk * kLiHeadDim);
    l.share_kb = share.take_array<uint16_t>(kLiKeyChunk * kLiHeadDim);
    l.share_hist = share.take_array<uint32_t>(kLiRadixBins);
    l.share_bytes = share.extent();
    l.row_refs = ws.take_array<LiRowRef>(static_cast<size_t>(l.lanes));
    l.shares_at = ws.take(l.share_bytes * static_cast<size_t>(kLiMaxLanes));
  }
  l.bytes = ws.bytes();  // with the slack to align the caller's pointer
  return l;
}

LiScratch lane_scratch(const LiLayout& l, std::byte* base, int lane) {
  std::byte* t = base + l.lanes_at + l.lane_bytes * static_cast<size_t>(lane);
  LiScratch s;
  s.q = reinterpret_cast<float*>(t + l.q);
  s.w = reinterpret_cast<float*>(t + l.w);
  s.kt = reinterpret_cast<float*>(t + l.kt);
  s.kb = reinterpret_cast<uint16_t*>(t + l.kb);
  s.keys = reinterpret_cast<uint32_t*>(t + l.keys);
  s.hist = reinterpret_cast<uint32_t*>(t + l.hist);
  s.sel = reinterpret_cast<uint64_t*>(t + l.sel);
  s.tmp = reinterpret_cast<uint64_t*>(t + l.tmp);
  s.cand = reinterpret_cast<int32_t*>(t + l.cand);
  return s;
}

using core::str;

// Reads the lengths and block ids (in stream order: this runs as part of the call) into per-batch
// state. Every check that fails marks what it concerns; the first one's message is the result.
// The checks and their order are those of reference/li_reference.cpp (D10).
struct Prologue {
  bool call_fault = false;  // TND query prefix sums unusable: every row faulted
  std::string first;        // built only when something is bad
};

Prologue resolve(const LiParams& p, const LiData& d, LiBatch* batches, int32_t* row_batch) {
  Prologue pr;
  const auto note = [&pr](const std::string& what) {
    if (pr.first.empty()) pr.first = what;
  };
  const bool k_tnd = p.key_layout == LiKeyLayout::kTnd;
  const auto asq = [&](int64_t b) { return core::length_at(d.asq, p.asq_64, p.asq_s, b); };
  const auto ask = [&](int64_t b) { return core::length_at(d.ask, p.ask_64, p.ask_s, b); };
  if (p.q_tnd) {
    int64_t prev = 0;
    for (int64_t b = 0; b < p.batch; ++b) {
      const int64_t cur = asq(b);
      if (cur < prev || cur > p.num_rows) {
        note("actual_seq_lengths_query[" + str(b) + "] (" + str(cur) +
             ") must be a prefix sum in [" + str(prev) + ", " + str(p.num_rows) + "]");
        pr.call_fault = true;
        return pr;
      }
      prev = cur;
    }
    std::fill(row_batch, row_batch + p.num_rows, -1);
  }
  for (int64_t b = 0; b < p.batch; ++b) {
    LiBatch& bs = batches[b];
    if (p.q_tnd) {
      bs.q_first = b == 0 ? 0 : asq(b - 1);
      bs.lq = asq(b) - bs.q_first;
      for (int64_t i = 0; i < bs.lq; ++i) row_batch[bs.q_first + i] = static_cast<int32_t>(b);
    } else {
      bs.q_first = b * p.s1;
      bs.lq = p.has_asq ? asq(b) : p.s1;
    }
    int64_t kv_end = 0;  // TND: the prefix sum that ends batch b
    if (k_tnd) {
      bs.kv_first = b == 0 ? 0 : ask(b - 1);
      kv_end = ask(b);
      // int64 entries: only an ordered, non-negative pair is subtracted (no overflow); any other
      // is reported below.
      bs.lkv = bs.kv_first >= 0 && kv_end >= bs.kv_first ? kv_end - bs.kv_first : -1;
    } else {
      bs.kv_first = 0;
      bs.lkv = p.has_ask ? ask(b) : p.kv_cap;
    }
    bs.fault = 0;
    if (!p.q_tnd && (bs.lq < 0 || bs.lq > p.s1)) {
      note("actual_seq_lengths_query[" + str(b) + "] (" + str(bs.lq) + ") must be in [0, " +
           str(p.s1) + "]");
      bs.fault = 1;
    }
    const bool bad_kv = k_tnd ? (bs.kv_first < 0 || bs.lkv < 0 || kv_end > p.kv_cap)
                              : (bs.lkv < 0 || bs.lkv > p.kv_cap);
    if (bad_kv) {
      note(k_tnd ? "actual_seq_lengths_key[" + str(b) + "] (" + str(kv_end) +
                       ") must be a prefix sum in [" + str(std::max<int64_t>(bs.kv_first, 0)) +
                       ", " + str(p.kv_cap) + "]"
                 : "actual_seq_lengths_key[" + str(b) + "] (" + str(bs.lkv) + ") must be in [0, " +
                       str(p.kv_cap) + "]");
      bs.fault = 1;
    }
    // The blocks the batch's rows read: [0, lkv) when it has a query row (its last row's range).
    if (bs.fault == 0 && p.key_layout == LiKeyLayout::kPaged && bs.lq > 0) {
      for (int64_t slot = 0; slot * p.block_size < bs.lkv; ++slot) {
        const int64_t id = d.block_table[b * p.bt_s0 + slot * p.bt_s1];
        if (id < 0 || id >= p.num_blocks) {
          note("block_table[" + str(b) + "][" + str(slot) + "] (" + str(id) +
               ") must be a block id in [0, " + str(p.num_blocks) + ")");
          bs.fault = 1;
          break;
        }
      }
    }
  }
  return pr;
}

// Row outputs for rows without a selection: indices -1, values -inf (or NaN for faulted rows).
void write_empty(const LiParams& p, const LiData& d, int64_t row, int64_t from, bool fault) {
  int32_t* idx = d.indices + row * p.sparse_count;
  std::fill(idx + from, idx + p.sparse_count, -1);
  if (d.scores != nullptr) {
    float* sc = d.scores + row * p.sparse_count;
    std::fill(
        sc + from, sc + p.sparse_count,
        fault ? std::numeric_limits<float>::quiet_NaN() : -std::numeric_limits<float>::infinity());
  }
  if (!p.return_value) return;
  const bool f16 = p.dtype == DType::kFloat16;
  const uint16_t fill = fault ? (f16 ? 0x7E00 : 0x7FC0) : (f16 ? 0xFC00 : 0xFF80);
  uint16_t* val = static_cast<uint16_t*>(d.values) + row * p.sparse_count;
  std::fill(val + from, val + p.sparse_count, fill);
}

struct Run {
  const LiParams* p;
  const LiData* d;
  const LiLayout* l;
  std::byte* base;
  const LiBatch* batches;
  const int32_t* row_batch;
  bool call_fault;
  LiScoreRowsFn score;
};

// The row's reference for scoring all of its keys, or false when it selects nothing (its outputs
// are then written here).
bool row_ref(const Run& r, int64_t row, LiRowRef* rr) {
  const LiParams& p = *r.p;
  const LiData& d = *r.d;
  if (r.call_fault) return write_empty(p, d, row, 0, true), false;
  const int64_t b = p.q_tnd ? r.row_batch[row] : row / p.s1;
  if (b < 0) return write_empty(p, d, row, 0, false), false;  // past the last prefix sum
  const LiBatch& bs = r.batches[b];
  if (bs.fault != 0) return write_empty(p, d, row, 0, true), false;
  const int64_t i = row - bs.q_first;
  if (i >= bs.lq) return write_empty(p, d, row, 0, false), false;  // BSND padding row
  // D9: sparse_mode 3 admits j < S2_b - S1_b + i + 1.
  const int64_t n =
      std::clamp<int64_t>(p.sparse_mode == 3 ? bs.lkv - bs.lq + i + 1 : bs.lkv, 0, bs.lkv);
  if (n == 0) return write_empty(p, d, row, 0, false), false;
  rr->row = row;
  rr->batch = b;
  rr->i = i;
  rr->kv_first = bs.kv_first;
  rr->n = n;
  rr->j0 = 0;
  rr->j1 = n;
  rr->stage = true;
  return true;
}

// The selection of a scored row (keys and the first digit's histogram in s) and its outputs.
void select_row(const Run& r, const LiRowRef& rr, const LiScratch& s) {
  const LiParams& p = *r.p;
  const LiData& d = *r.d;
  const int64_t row = rr.row;
  int32_t* idx = d.indices + row * p.sparse_count;
  LiTopkScratch ts;
  ts.hist = s.hist;
  ts.sel = s.sel;
  ts.tmp = s.tmp;
  ts.cand = s.cand;
  ts.cand_cap = li_topk_candidates(p.sparse_count, p.kv_cap);
  const int64_t c = li_select_topk(s.keys, rr.n, p.sparse_count, ts, true, idx);
  if (d.scores != nullptr) {
    float* sc = d.scores + row * p.sparse_count;
    for (int64_t k = 0; k < c; ++k) sc[k] = li_order_value(static_cast<uint32_t>(s.sel[k] >> 32));
  }
  if (p.return_value) {
    // D9: the fp32 score rounded to the query dtype, nearest even.
    uint16_t* val = static_cast<uint16_t*>(d.values) + row * p.sparse_count;
    const bool f16 = p.dtype == DType::kFloat16;
    for (int64_t k = 0; k < c; ++k) {
      const float v = li_order_value(static_cast<uint32_t>(s.sel[k] >> 32));
      val[k] = f16 ? core::float_to_fp16(v) : core::float_to_bf16(v);
    }
  }
  write_empty(p, d, row, c, false);
}

// One task per row: score all its keys in the worker's lane, select.
void run_row(const Run& r, int64_t row, int worker) {
  LiRowRef rr;
  if (!row_ref(r, row, &rr)) return;
  const LiScratch s = lane_scratch(*r.l, r.base, worker);
  r.score(*r.p, *r.d, &rr, &s, 1);
  select_row(r, rr, s);
}

// Row-group mode: consecutive query rows of one batch (MTP, prefill) in one task, scored in one
// pass over the batch's keys (each key block read once for both), in lanes 2w and 2w + 1 of
// worker w; then each row's selection. groups[g] is the first row of group g, groups[g + 1] the
// end.
void run_group(const Run& r, const int32_t* groups, int64_t g, int worker) {
  LiRowRef rr[kLiRowGroup];
  LiScratch s[kLiRowGroup];
  int count = 0;
  for (int64_t row = groups[g]; row < groups[g + 1]; ++row) {
    if (!row_ref(r, row, &rr[count])) continue;
    s[count] = lane_scratch(*r.l, r.base, kLiRowGroup * worker + count);
    ++count;
  }
  if (count == 0) return;
  r.score(*r.p, *r.d, rr, s, count);
  for (int i = 0; i < count; ++i) select_row(r, rr[i], s[i]);
}

struct GroupRun {
  const Run* run;
  const int32_t* groups;
};

// The row groups of the call into groups[0, G] (G + 1 entries); returns G. Pairs of consecutive
// rows of one batch (device data: the TND row map), everything else alone; a function of the
// inputs only.
int64_t make_groups(const LiParams& p, const int32_t* row_batch, bool call_fault, int32_t* groups) {
  const auto batch_of = [&](int64_t row) -> int64_t {
    if (call_fault) return -1;
    return p.q_tnd ? row_batch[row] : row / p.s1;
  };
  int64_t g = 0, row = 0;
  while (row < p.num_rows) {
    groups[g++] = static_cast<int32_t>(row);
    const int64_t b = batch_of(row);
    row += row + 1 < p.num_rows && b >= 0 && batch_of(row + 1) == b ? kLiRowGroup : 1;
  }
  groups[g] = static_cast<int32_t>(p.num_rows);
  return g;
}

// Split mode: fewer rows than threads, so each row's keys are cut into `per_row` shares scored by
// tasks of their own (row r owns lane r). Phase 1 (per row): the row's reference, the query and
// weights staged into its lane. Phase 2 (per (row, share)): the share's keys into the row's key
// buffer, its first-digit histogram into the share's slot. Phase 3 (per row): the histograms
// summed in share order, the selection. A key's order key does not depend on which share scores
// it and the histogram is a sum of integers, so the output is the bits of the one-task path.
struct Split {
  const Run* run;
  LiRowRef* refs;
  std::byte* shares;
  int64_t per_row;
};

// The keys [j0, j1) of share `part` of a row of n keys: block-aligned (128 rows) pieces of at
// least 1024 keys (a smaller share costs more to hand out than it saves).
void share_range(int64_t n, int64_t part, int64_t shares, int64_t* j0, int64_t* j1) {
  int64_t len = std::max<int64_t>((n + shares - 1) / shares, 1024);
  len = (len + 127) / 128 * 128;
  *j0 = std::min(n, part * len);
  *j1 = std::min(n, *j0 + len);
}

void split_stage(const Split& sp, int64_t row) {
  const Run& r = *sp.run;
  LiRowRef& rr = sp.refs[row];
  if (!row_ref(r, row, &rr)) {
    rr.n = 0;
    return;
  }
  const LiScratch s = lane_scratch(*r.l, r.base, static_cast<int>(row));
  LiRowRef stage = rr;
  stage.j1 = 0;  // stage only
  r.score(*r.p, *r.d, &stage, &s, 1);
}

LiScratch share_scratch(const Split& sp, int64_t row, int64_t task) {
  const LiLayout& l = *sp.run->l;
  LiScratch s = lane_scratch(l, sp.run->base, static_cast<int>(row));
  std::byte* t = sp.shares + l.share_bytes * static_cast<size_t>(task);
  s.kt = reinterpret_cast<float*>(t + l.share_kt);
  s.kb = reinterpret_cast<uint16_t*>(t + l.share_kb);
  s.hist = reinterpret_cast<uint32_t*>(t + l.share_hist);
  return s;
}

void split_score(const Split& sp, int64_t task) {
  const int64_t row = task / sp.per_row, part = task % sp.per_row;
  LiRowRef rr = sp.refs[row];
  if (rr.n == 0) return;
  const LiScratch s = share_scratch(sp, row, task);
  share_range(rr.n, part, sp.per_row, &rr.j0, &rr.j1);
  rr.stage = false;
  if (rr.j0 < rr.j1) {
    sp.run->score(*sp.run->p, *sp.run->d, &rr, &s, 1);
  } else {
    std::memset(s.hist, 0, sizeof(uint32_t) * kLiRadixBins);
  }
}

void split_select(const Split& sp, int64_t row) {
  const LiRowRef& rr = sp.refs[row];
  if (rr.n == 0) return;
  const LiScratch s = lane_scratch(*sp.run->l, sp.run->base, static_cast<int>(row));
  std::memset(s.hist, 0, sizeof(uint32_t) * kLiRadixBins);
  for (int64_t part = 0; part < sp.per_row; ++part) {
    const uint32_t* h = share_scratch(sp, row, row * sp.per_row + part).hist;
    for (int64_t b = 0; b < kLiRadixBins; ++b) s.hist[b] += h[b];
  }
  select_row(*sp.run, rr, s);
}

}  // namespace

size_t li_workspace_size(const LiParams& p) { return li_layout(p).bytes; }

Status li_run(const LiParams& p, const LiData& d, const core::RunContext& ctx, const LiKernels& k) {
  const LiLayout l = li_layout(p);
  const int num_threads = ctx.num_threads;
  std::byte* base = core::align_base(ctx.workspace, kAlign);
  auto* batches = reinterpret_cast<LiBatch*>(base + l.batches);
  auto* row_batch = reinterpret_cast<int32_t*>(base + l.row_batch);
  const Prologue pr = resolve(p, d, batches, row_batch);

  const LiScoreRowsFn score = p.dtype == DType::kBFloat16 ? k.score_bf16 : k.score_fp16;
  const Run run{&p, &d, &l, base, batches, row_batch, pr.call_fault, score};
  const int threads = num_threads > 0 ? num_threads : default_num_threads();
  const int participants =
      static_cast<int>(std::clamp<int64_t>(std::min<int64_t>(threads, p.num_rows), 1, l.lanes));
  // Fewer rows than threads: split each row's keys so that every thread has work (at most
  // kLiMaxLanes share slots in all).
  const int64_t per_row =
      p.num_rows > 0 && p.num_rows < threads && p.num_rows < kLiMaxLanes
          ? std::min<int64_t>((threads + p.num_rows - 1) / p.num_rows, kLiMaxLanes / p.num_rows)
          : 1;
  // Each lambda captures one pointer, so std::function keeps it inline (no allocation).
  if (per_row > 1) {
    const Split sp{&run, reinterpret_cast<LiRowRef*>(base + l.row_refs), base + l.shares_at,
                   per_row};
    const int64_t tasks = p.num_rows * per_row;
    parallel_for(p.num_rows, participants, [s = &sp](int64_t row, int) { split_stage(*s, row); });
    parallel_for(tasks, static_cast<int>(std::min<int64_t>(threads, tasks)),
                 [s = &sp](int64_t task, int) { split_score(*s, task); });
    parallel_for(p.num_rows, participants, [s = &sp](int64_t row, int) { split_select(*s, row); });
  } else {
    // Row groups when some rows pair up, as many threads still get work as with one row per task
    // (two rows of one request on two threads stay apart), and the lanes give each its pair.
    auto* groups = reinterpret_cast<int32_t*>(base + l.groups);
    const int64_t num_groups = make_groups(p, row_batch, pr.call_fault, groups);
    const int64_t group_workers = std::min<int64_t>(threads, num_groups);
    if (num_groups < p.num_rows && group_workers == participants &&
        group_workers <= l.lanes / kLiRowGroup) {
      const GroupRun gr{&run, groups};
      parallel_for(
          num_groups, static_cast<int>(group_workers),
          [g = &gr](int64_t task, int worker) { run_group(*g->run, g->groups, task, worker); });
    } else {
      parallel_for(p.num_rows, participants,
                   [r = &run](int64_t row, int worker) { run_row(*r, row, worker); });
    }
  }
  if (!pr.first.empty()) return core::fail(Status::kInvalid, kLiOpName, pr.first);
  return Status::kSuccess;
}

}  // namespace kvflash::cpu
