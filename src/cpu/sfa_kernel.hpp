// The SFA CPU kernel entry: pure compute over (problem, schedule, workspace). No validation, no
// allocation, no I/O. The problem must come from the SFA validator, and the block-table entries
// of every selected position must already have been checked (sfa::check_block_ids).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/sfa_problem.hpp"

namespace kvflash::cpu {

/// How one call is split: tasks are (query row, block of head_block heads); each worker owns one
/// scratch slot of the workspace. Every head's arithmetic is the same whatever the split, so the
/// output bits do not depend on workers or head_block.
struct SfaSchedule {
  int workers = 1;
  int64_t head_block = 1;
  int64_t num_tasks = 0;
};

/// Selected KV tokens gathered and processed together (the N dimension of the per-tile GEMMs).
inline constexpr int64_t kSfaTile = 64;

/// Offsets (in floats, 16-float aligned) of one worker's scratch slot. The kernel body and
/// sfa_workspace_size both use this, so they cannot disagree.
struct SfaScratchLayout {
  int64_t q, kt, vt, s, acc, st, pos, total;
  explicit SfaScratchLayout(int64_t head_block) {
    constexpr int64_t kAlign = 16;  // 64 bytes: one cache line, one zmm
    constexpr int64_t kQk = core::SfaProblem::kNopeDim + core::SfaProblem::kRopeDim;
    int64_t at = 0;
    auto take = [&](int64_t n) {
      const int64_t o = at;
      at += (n + kAlign - 1) / kAlign * kAlign;
      return o;
    };
    q = take(head_block * kQk);
    kt = take(kSfaTile * kQk);
    vt = take(kSfaTile * core::SfaProblem::kNopeDim);
    s = take(head_block * kSfaTile);
    acc = take(head_block * core::SfaProblem::kNopeDim);
    st = take(head_block * 2);  // (max, sum) pairs
    pos = take(kSfaTile * 2);   // int64 positions
    total = at;
  }
};

/// The split for p with `threads` workers (0 = library default). Independent of the active ISA.
SfaSchedule sfa_schedule(const core::SfaProblem& p, int threads);

/// Bytes of workspace sfa_run needs for (p, s). Independent of the active ISA, so a plan made
/// before set_isa_cap() still runs after it.
size_t sfa_workspace_size(const core::SfaProblem& p, const SfaSchedule& s);

/// Computes attention_out (and the softmax outputs) of p with the active ISA. ws: at least
/// sfa_workspace_size(p, s) bytes, any alignment.
void sfa_run(const core::SfaProblem& p, const SfaSchedule& s, void* ws);

}  // namespace kvflash::cpu
